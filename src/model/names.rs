//! Name rules shared by every command: Kubernetes' DNS rules and Rust's reserved words.

use heck::ToSnakeCase;

/// Rust's keywords, strict and reserved, of edition 2024: none may name a module or crate.
pub const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "union", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// A DNS-1123 label: lowercase alphanumerics and `-`, starting and ending alphanumeric, at most
/// 63 characters. Returns what is wrong, if anything.
pub fn dns1123_label_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("it is empty".into());
    }
    if value.len() > 63 {
        return Some(format!(
            "it has {} characters, at most 63 are allowed",
            value.len()
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!(
            "`{c}` is not allowed: use lowercase letters, digits and `-`"
        ));
    }
    if value.starts_with('-') || value.ends_with('-') {
        return Some("it must start and end with a letter or digit".into());
    }
    None
}

/// A DNS-1035 label: a DNS-1123 label that starts with a letter.
pub fn dns1035_label_problem(value: &str) -> Option<String> {
    dns1123_label_problem(value).or_else(|| {
        (!value.starts_with(|c: char| c.is_ascii_lowercase()))
            .then(|| "it must start with a lowercase letter".into())
    })
}

/// A DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
pub fn dns1123_subdomain_problem(value: &str) -> Option<String> {
    if value.len() > 253 {
        return Some(format!(
            "it has {} characters, at most 253 are allowed",
            value.len()
        ));
    }
    value
        .split('.')
        .find_map(|label| dns1123_label_problem(label).map(|p| format!("the part `{label}`: {p}")))
}

/// The plural Kubernetes (and kubebuilder, through flect) uses for a kind's resource name.
pub fn plural(kind: &str) -> String {
    pluralizer::pluralize(&kind.to_lowercase(), 2, false)
}

/// The name kopium gives the Rust type of `kind` (and the prefix of its other types):
/// `API` -> `Api`, `ArgoCDExport` -> `ArgoCdExport`.
pub fn kopium_type(kind: &str) -> String {
    heck::ToUpperCamelCase::to_upper_camel_case(kind)
}

/// The Rust module name of a kind: `HTTPRoute` -> `http_route`.
pub fn snake(name: &str) -> String {
    name.to_snake_case()
}

/// The Rust crate name of a project: `my-operator` -> `my_operator`.
pub fn crate_name(project: &str) -> String {
    project.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_match_kubebuilder() {
        let cases = [
            ("Guestbook", "guestbooks"),
            ("HTTPRoute", "httproutes"),
            ("Policy", "policies"),
            ("Proxy", "proxies"),
            ("Ingress", "ingresses"),
            ("CronJob", "cronjobs"),
            ("Person", "people"),
            ("Index", "indices"),
            ("Bus", "buses"),
            ("Leaf", "leaves"),
            ("Series", "series"),
            ("Analysis", "analyses"),
            ("Memcached", "memcacheds"),
        ];
        for (kind, expected) in cases {
            assert_eq!(plural(kind), expected, "plural of {kind}");
        }
    }

    #[test]
    fn snake_names() {
        let cases = [
            ("Guestbook", "guestbook"),
            ("HTTPRoute", "http_route"),
            ("CronJob", "cron_job"),
            ("FirstMate", "first_mate"),
            ("V2Thing", "v2_thing"),
        ];
        for (kind, expected) in cases {
            assert_eq!(snake(kind), expected, "snake of {kind}");
        }
    }

    #[test]
    fn dns_labels() {
        assert_eq!(dns1123_label_problem("my-op1"), None);
        assert_eq!(dns1123_label_problem("1abc"), None);
        assert!(dns1123_label_problem("").is_some());
        assert!(dns1123_label_problem("My").is_some());
        assert!(dns1123_label_problem("a_b").is_some());
        assert!(dns1123_label_problem("-a").is_some());
        assert!(dns1123_label_problem("a-").is_some());
        assert!(dns1123_label_problem(&"a".repeat(64)).is_some());
        assert_eq!(dns1123_label_problem(&"a".repeat(63)), None);
        assert!(dns1035_label_problem("1abc").is_some());
        assert_eq!(dns1035_label_problem("abc1"), None);
        assert_eq!(dns1123_subdomain_problem("mock.com"), None);
        assert!(dns1123_subdomain_problem("mock..com").is_some());
        assert!(dns1123_subdomain_problem("Mock.com").is_some());
        assert!(dns1123_subdomain_problem(&format!("{}.com", "a.".repeat(126))).is_some());
    }
}
