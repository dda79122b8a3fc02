//! Validated names: each constructor checks kubebuilder's rules plus Rust's, and returns an
//! error that names the flag and the fix.

use serde::Serialize;

use super::names::{self, RUST_KEYWORDS};
use crate::error::user_error;

/// Crate names the generated project cannot take: the standard library's and its dependencies'.
const TAKEN_CRATE_NAMES: &[&str] = &[
    "alloc",
    "anyhow",
    "axum",
    "clap",
    "core",
    "futures",
    "http",
    "humantime",
    "hyper",
    "hyper_util",
    "json_patch",
    "k8s_openapi",
    "kube",
    "kube_scaffold_runtime",
    "kube_scaffold_runtime_dylib",
    "metrics_process",
    "proc_macro",
    "prometheus_client",
    "proptest",
    "rcgen",
    "schemars",
    "serde",
    "serde_json",
    "serde_saphyr",
    "socket2",
    "std",
    "test",
    "thiserror",
    "time",
    "tokio",
    "tokio_rustls",
    "tokio_util",
    "tower_test",
    "tracing",
    "tracing_subscriber",
];

/// Names the generated code uses unqualified next to a kind's types; a kind with one of these
/// names would shadow it.
const SHADOWED_NAMES: &[&str] = &[
    "Box",
    "Clone",
    "Copy",
    "Debug",
    "Default",
    "Eq",
    "Err",
    "None",
    "Ok",
    "Option",
    "PartialEq",
    "Self",
    "Send",
    "Sized",
    "Some",
    "String",
    "Sync",
    "Vec",
];

/// Module names the generated `controller` module already uses.
const TAKEN_MODULE_NAMES: &[&str] = &["children", "conditions", "mock"];

fn invalid(what: &str, value: &str, problem: &str, help: impl Into<String>) -> anyhow::Error {
    user_error(format!("invalid {what} `{value}`: {problem}"), help)
}

/// The project's domain, e.g. `mock.com`: a DNS-1123 subdomain.
pub fn domain(value: &str) -> anyhow::Result<String> {
    match names::dns1123_subdomain_problem(value) {
        Some(problem) => Err(invalid(
            "domain",
            value,
            &problem,
            "pass a lowercase DNS name, e.g. `--domain example.com`",
        )),
        None => Ok(value.to_string()),
    }
}

/// The project's name: a DNS-1035 label that also works as a Rust crate name.
pub fn project_name(value: &str) -> anyhow::Result<String> {
    let help = "pass `--project-name` with lowercase letters, digits and `-`, e.g. `--project-name guestbook-operator`";
    if let Some(problem) = names::dns1035_label_problem(value) {
        return Err(invalid("project name", value, &problem, help));
    }
    let crate_name = names::crate_name(value);
    if RUST_KEYWORDS.contains(&crate_name.as_str()) {
        return Err(invalid("project name", value, "it is a Rust keyword", help));
    }
    if TAKEN_CRATE_NAMES.contains(&crate_name.as_str()) {
        return Err(invalid(
            "project name",
            value,
            "the generated crate depends on a crate of that name",
            help,
        ));
    }
    Ok(value.to_string())
}

/// The repository a project's `Cargo.toml` names, from `init --repo`: a URL as it is, or a Go
/// module path as kubebuilder's `--repo` takes it (`github.com/me/operator`), made an https URL.
pub fn repository(value: &str) -> anyhow::Result<String> {
    let help = "pass the project's repository, e.g. `--repo github.com/me/guestbook-operator` or `--repo https://git.example.com/me/guestbook`";
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~/:@%+".contains(c);
    if value.is_empty() || !value.chars().all(allowed) {
        return Err(invalid(
            "repository",
            value,
            "it must be a URL or a module path, without spaces or quotes",
            help,
        ));
    }
    if value.starts_with("https://") || value.starts_with("http://") {
        return Ok(value.to_string());
    }
    let host = value.split('/').next().unwrap_or_default();
    if value.contains("://") || !host.contains('.') || host.contains(':') {
        return Err(invalid(
            "repository",
            value,
            "it is neither an http(s) URL nor a module path whose first element is a host name",
            help,
        ));
    }
    Ok(format!("https://{value}"))
}

/// A group, version and kind, checked together with the project's domain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// Checks every part; the first problem is the error.
    pub fn parse(group: &str, version: &str, kind: &str, domain: &str) -> anyhow::Result<Self> {
        Ok(Self {
            group: parse_group(group, domain)?,
            version: parse_version(version)?,
            kind: parse_kind(kind)?,
        })
    }

    /// Another project's kind (`create api --external-api-crd`): its group is a full one, and
    /// may be one of Kubernetes' own projects (`gateway.networking.k8s.io`); its kind is as
    /// that project's CRD names it, so it may start lowercase (zalando's `postgresql`).
    pub fn parse_external(group: &str, version: &str, kind: &str) -> anyhow::Result<Self> {
        Ok(Self {
            group: parse_full_group(group, true)?,
            version: parse_version(version)?,
            kind: parse_external_kind(kind)?,
        })
    }

    /// The API group Kubernetes sees: `<group>.<domain>`, or the group itself when it has
    /// dots.
    pub fn qualified_group(&self, domain: &str) -> String {
        qualified_group(&self.group, domain)
    }
}

/// The API group Kubernetes sees for a project's `group`: `webapp` -> `webapp.<domain>`; a
/// group with dots (`example.com`, `cert-manager.io`) is a full group and stays as it is.
pub fn qualified_group(group: &str, domain: &str) -> String {
    if group.contains('.') {
        group.to_string()
    } else {
        format!("{group}.{domain}")
    }
}

/// Whether `group` is one of Kubernetes' own (under `k8s.io` or `kubernetes.io`): the API
/// server installs a CRD of such a group only with the annotation [`API_APPROVAL`].
pub fn is_protected(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|root| group == *root || group.ends_with(&format!(".{root}")))
}

/// The annotation a CRD of a protected group needs, and the value `make manifests` gives it
/// unless the user's type names the approved API review (sample-controller's value).
pub const API_APPROVAL: (&str, &str) = (
    "api-approved.kubernetes.io",
    "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups",
);

/// The Rust module of a group: `my-app` -> `my_app`, `example.com` -> `example_com`.
pub fn group_module(group: &str) -> String {
    names::crate_name(&group.replace('.', "_"))
}

fn parse_group(value: &str, domain: &str) -> anyhow::Result<String> {
    if value.contains('.') {
        return parse_full_group(value, false);
    }
    let help = "pass a lowercase group, e.g. `--group webapp` (the domain comes from `init --domain`), or a full group with dots, e.g. `--group example.com`";
    if let Some(problem) = names::dns1123_label_problem(value) {
        return Err(invalid("group", value, &problem, help));
    }
    if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(
            "group",
            value,
            "it must start with a lowercase letter",
            help,
        ));
    }
    if RUST_KEYWORDS.contains(&names::crate_name(value).as_str()) {
        return Err(invalid(
            "group",
            value,
            "it is a Rust keyword and names a module",
            help,
        ));
    }
    let qualified = format!("{value}.{domain}");
    if let Some(problem) = names::dns1123_subdomain_problem(&qualified) {
        return Err(invalid("group", &qualified, &problem, help));
    }
    Ok(value.to_string())
}

/// A group with dots, taken as the full API group (kubebuilder's `--group example.com`); one
/// under k8s.io only for another project's kind (`external`).
fn parse_full_group(value: &str, external: bool) -> anyhow::Result<String> {
    let help = "pass a full group such as `--group example.com`, or a group without dots that the domain completes, e.g. `--group webapp`";
    if let Some(problem) = names::dns1123_subdomain_problem(value) {
        return Err(invalid("group", value, &problem, help));
    }
    if !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(
            "group",
            value,
            "it must start with a lowercase letter (it names a Rust module)",
            help,
        ));
    }
    if is_protected(value) && !external {
        return Err(invalid(
            "group",
            value,
            "groups under k8s.io and kubernetes.io belong to Kubernetes (their CRDs need an API review)",
            help,
        ));
    }
    Ok(value.to_string())
}

fn parse_version(value: &str) -> anyhow::Result<String> {
    let rest = value.strip_prefix('v').unwrap_or("");
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let (major, stage) = rest.split_at(digits);
    let stage_ok = stage.is_empty()
        || ["alpha", "beta"].iter().any(|s| {
            stage
                .strip_prefix(s)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        });
    if major.is_empty() || !stage_ok {
        return Err(invalid(
            "version",
            value,
            "it must look like `v1`, `v1alpha1` or `v2beta3`",
            "pass e.g. `--version v1`",
        ));
    }
    Ok(value.to_string())
}

const KIND_HELP: &str =
    "pass a PascalCase kind of ASCII letters and digits, e.g. `--kind Guestbook`";

fn parse_kind(value: &str) -> anyhow::Result<String> {
    if value.is_empty() {
        return Err(invalid("kind", value, "it is empty", KIND_HELP));
    }
    if !value.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(invalid(
            "kind",
            value,
            "it must start with an uppercase letter",
            KIND_HELP,
        ));
    }
    check_kind(value, value)
}

/// Another project's kind: any letter first; its Rust type is named as kopium names it
/// (`postgresql` -> `Postgresql`), and that name must not clash with the generated code.
fn parse_external_kind(value: &str) -> anyhow::Result<String> {
    let help = "pass the kind exactly as the CRD's `spec.names.kind` spells it";
    if !value.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(invalid("kind", value, "it must start with a letter", help));
    }
    check_kind(value, &names::kopium_type(value))
}

/// The rules every kind follows after its first letter; `rust_name` is its Rust type's name.
fn check_kind(value: &str, rust_name: &str) -> anyhow::Result<String> {
    let help = KIND_HELP;
    if let Some(c) = value.chars().find(|c| !c.is_ascii_alphanumeric()) {
        return Err(invalid(
            "kind",
            value,
            &format!("`{c}` is not allowed"),
            help,
        ));
    }
    if let Some(problem) = names::dns1035_label_problem(&value.to_lowercase()) {
        return Err(invalid("kind", value, &problem, help));
    }
    if SHADOWED_NAMES.contains(&rust_name) {
        return Err(invalid(
            "kind",
            value,
            "it would shadow a name of Rust's prelude in the generated code",
            "choose another kind, e.g. prefix it with your domain's word",
        ));
    }
    let module = names::snake(value);
    if RUST_KEYWORDS.contains(&module.as_str()) || TAKEN_MODULE_NAMES.contains(&module.as_str()) {
        return Err(invalid(
            "kind",
            value,
            &format!(
                "its module name `{module}` is a Rust keyword or already used by the generated code"
            ),
            "choose another kind",
        ));
    }
    Ok(value.to_string())
}

/// A resource's plural: a DNS-1035 label.
pub fn plural(value: &str) -> anyhow::Result<String> {
    match names::dns1035_label_problem(value) {
        Some(problem) => Err(invalid(
            "plural",
            value,
            &problem,
            "pass a lowercase plural, e.g. `--plural guestbooks`",
        )),
        None => Ok(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(result: anyhow::Result<impl std::fmt::Debug>) -> String {
        format!("{:#}", result.expect_err("should be rejected"))
    }

    #[test]
    fn a_group_with_dots_is_a_full_group() {
        let gvk = Gvk::parse("cert-manager.io", "v1", "Certificate", "mock.com").unwrap();
        assert_eq!(gvk.qualified_group("mock.com"), "cert-manager.io");
        assert_eq!(group_module(&gvk.group), "cert_manager_io");
        let gvk = Gvk::parse("webapp", "v1", "Guestbook", "mock.com").unwrap();
        assert_eq!(gvk.qualified_group("mock.com"), "webapp.mock.com");
    }

    #[test]
    fn repositories_are_urls_or_go_module_paths() {
        assert_eq!(
            repository("github.com/me/operator").unwrap(),
            "https://github.com/me/operator"
        );
        assert_eq!(
            repository("https://git.example.com:8443/me/op").unwrap(),
            "https://git.example.com:8443/me/op"
        );
        for bad in [
            "",
            "operator",
            "me/operator",
            "git@github.com:me/op",
            "a b",
            "ftp://x.org/y",
            "x.org/\"y",
        ] {
            assert!(
                error_of(repository(bad)).contains("invalid repository"),
                "{bad}"
            );
        }
    }

    /// The crates the generated Cargo.toml names cannot name the project: derived from the
    /// template, so that the list cannot fall behind it.
    #[test]
    fn every_crate_of_the_generated_cargo_toml_is_taken() {
        let templates = crate::scaffold::templates::Templates::load().unwrap();
        #[derive(Serialize)]
        struct Context {
            project_name: &'static str,
            repository: &'static str,
            versions: crate::model::versions::Versions,
            runtime: crate::scaffold::templates::RuntimeSource,
        }
        let context = Context {
            project_name: "guestbook",
            repository: "",
            versions: crate::model::versions::VERSIONS,
            runtime: templates.runtime(),
        };
        let text = templates
            .render("base/init/Cargo.toml.tera", &context)
            .unwrap();
        let manifest: toml::Table = toml::from_str(&text).unwrap();
        let mut crates = Vec::new();
        for section in ["dependencies", "dev-dependencies"] {
            let table = manifest[section].as_table().unwrap();
            crates.extend(table.keys().map(|k| k.replace('-', "_")));
        }
        assert!(crates.len() > 10, "{crates:?}");
        let missing: Vec<_> = crates
            .iter()
            .filter(|c| !TAKEN_CRATE_NAMES.contains(&c.as_str()))
            .collect();
        assert!(missing.is_empty(), "add to TAKEN_CRATE_NAMES: {missing:?}");
    }

    #[test]
    fn accepts_kubebuilder_style_names() {
        let gvk = Gvk::parse("webapp", "v1alpha2", "HTTPRoute", "mock.com").unwrap();
        assert_eq!(gvk.qualified_group("mock.com"), "webapp.mock.com");
        for version in ["v1", "v2beta3", "v10alpha1"] {
            assert!(parse_version(version).is_ok(), "{version}");
        }
        for kind in [
            "Guestbook",
            "Config",
            "Event",
            "Error",
            "Context",
            "Client",
            "Action",
            "Result",
        ] {
            assert!(parse_kind(kind).is_ok(), "{kind}");
        }
    }

    #[test]
    fn another_projects_kind_may_be_in_a_group_of_kubernetes_projects() {
        let gvk = Gvk::parse_external("gateway.networking.k8s.io", "v1", "HTTPRoute").unwrap();
        assert_eq!(gvk.group, "gateway.networking.k8s.io");
        assert!(Gvk::parse("gateway.networking.k8s.io", "v1", "HTTPRoute", "mock.com").is_err());
        assert!(is_protected("k8s.io") && is_protected("webapp.k8s.io"));
        assert!(is_protected("x.kubernetes.io") && !is_protected("notk8s.io"));
        assert!(Gvk::parse_external("Gateway.io", "v1", "HTTPRoute").is_err());
    }

    #[test]
    fn another_projects_kind_may_start_lowercase_as_its_crd_names_it() {
        let gvk = Gvk::parse_external("acid.zalan.do", "v1", "postgresql").unwrap();
        assert_eq!(gvk.kind, "postgresql");
        assert!(Gvk::parse("acid.zalan.do", "v1", "postgresql", "mock.com").is_err());
        // Its Rust name (kopium's) is held to the rules of a kind.
        let option = error_of(Gvk::parse_external("example.org", "v1", "option"));
        assert!(option.contains("prelude"), "{option}");
        let dash = error_of(Gvk::parse_external("example.org", "v1", "postgre-sql"));
        assert!(dash.contains("`-` is not allowed"), "{dash}");
        let digit = error_of(Gvk::parse_external("example.org", "v1", "1sql"));
        assert!(digit.contains("must start with a letter"), "{digit}");
    }

    #[test]
    fn rejects_bad_names_with_the_reason() {
        let cases: &[(&str, String)] = &[
            ("empty", error_of(parse_kind(""))),
            ("uppercase", error_of(parse_kind("guestbook"))),
            ("`-` is not allowed", error_of(parse_kind("Guest-book"))),
            ("prelude", error_of(parse_kind("Option"))),
            ("Rust keyword", error_of(parse_kind("Type"))),
            ("already used", error_of(parse_kind("Mock"))),
            ("`v1`", error_of(parse_version("V1"))),
            ("`v1`", error_of(parse_version("v1gamma1"))),
            ("`v1`", error_of(parse_version("valpha1"))),
            (
                "belong to Kubernetes",
                error_of(parse_group("foo.k8s.io", "mock.com")),
            ),
            (
                "start with a lowercase letter (it names a Rust module)",
                error_of(parse_group("1x.example.com", "mock.com")),
            ),
            (
                "invalid group `web..app`",
                error_of(parse_group("web..app", "mock.com")),
            ),
            ("Rust keyword", error_of(parse_group("type", "mock.com"))),
            (
                "lowercase letter",
                error_of(parse_group("1app", "mock.com")),
            ),
            ("`_` is not allowed", error_of(domain("my_domain.com"))),
            ("Rust keyword", error_of(project_name("match"))),
            ("depends on", error_of(project_name("kube"))),
            ("lowercase letter", error_of(project_name("1op"))),
            ("at most 63", error_of(plural(&"a".repeat(64)))),
        ];
        for (expected, message) in cases {
            assert!(
                message.contains(expected),
                "`{message}` should mention `{expected}`"
            );
        }
    }
}
