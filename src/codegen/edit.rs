//! Edits of the user's Rust sources, placed with syn: the node to change is found by parsing,
//! and the edit is text inserted at its place, so the rest of the file keeps its layout.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;

/// `text`, the Rust types of a kind's `version`, with `storage = false` added to the
/// `#[kube(...)]` attribute that says `version = "<version>"`: as an argument on a line of its
/// own after the version's when the attribute spans lines (as kube-scaffold lays it out), else
/// as an attribute of its own on the next line (after kopium's one-line attribute). `None` when
/// the source does not parse or not exactly one such attribute is there.
pub fn not_stored(text: &str, version: &str) -> Option<String> {
    let file = syn::parse_file(text).ok()?;
    let mut found = Vec::new();
    for item in &file.items {
        let attrs = match item {
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => continue,
        };
        for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
            let args = attr
                .parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .ok()?;
            let versions = args.iter().filter_map(|arg| match arg {
                syn::Meta::NameValue(nv) if nv.path.is_ident("version") => Some(&nv.value),
                _ => None,
            });
            for value in versions {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = value
                    && s.value() == version
                {
                    found.push((
                        attr.pound_token.span,
                        attr.bracket_token.span.close(),
                        value.span(),
                    ));
                }
            }
        }
    }
    let [(start, end, value)] = found[..] else {
        return None;
    };
    let own_line = start.start().line != value.start().line;
    // After the line of the version's argument, or of the whole attribute.
    let after = if own_line { value } else { end };
    let at = end_of_line(text, after);
    let insert = match own_line {
        true => {
            let line_start = text[..byte_of(text, value)]
                .rfind('\n')
                .map_or(0, |i| i + 1);
            let indent = &text[line_start..]
                [..text[line_start..].len() - text[line_start..].trim_start().len()];
            format!("{indent}storage = false,\n")
        }
        false => "#[kube(storage = false)]\n".to_string(),
    };
    Some(format!("{}{insert}{}", &text[..at], &text[at..]))
}

/// `text`, a module that declares `modules` (`pub mod guestbook;`, each with its group's module
/// name) and names them in paths (`guestbook::start`), with each declared under its group
/// instead (`edit --multigroup`): the first declaration of a group's modules becomes the
/// group's (`pub mod webapp;`), the others go with the blank line after them, and each path or
/// `use` that starts with one of them starts with its group (`webapp::guestbook::start`). The
/// rest of the file keeps its layout. `None` when the text does not parse. Long: the visitor
/// that finds the spans and the edits made at them read best together.
pub fn regroup(text: &str, modules: &[(String, String)]) -> Option<String> {
    use syn::visit::Visit;

    let file = syn::parse_file(text).ok()?;
    let group_of = |ident: &syn::Ident| {
        modules
            .iter()
            .find(|(module, _)| ident == module)
            .map(|(_, group)| group.as_str())
    };
    // (start, end, replacement), in the text's order.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut declared: Vec<&str> = Vec::new();
    for item in &file.items {
        let syn::Item::Mod(m) = item else {
            continue;
        };
        let Some(group) = group_of(&m.ident).filter(|_| m.content.is_none()) else {
            continue;
        };
        let (start, end) = (byte_of(text, m.span()), end_of_line(text, m.span()));
        if declared.contains(&group) {
            let start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            let end = match text[end..].starts_with('\n') {
                true => end + 1,
                false => end,
            };
            edits.push((start, end, String::new()));
        } else {
            declared.push(group);
            let visibility = &text[start..byte_of(text, m.mod_token.span)];
            let semi_end = byte_of(text, m.semi.map_or(m.ident.span(), |s| s.span)) + 1;
            edits.push((start, semi_end, format!("{visibility}mod {group};")));
        }
    }
    struct Paths<'a, F> {
        text: &'a str,
        group_of: F,
        inserts: Vec<(usize, usize, String)>,
    }
    impl<'a, 'ast, F: Fn(&syn::Ident) -> Option<&'a str>> Visit<'ast> for Paths<'a, F> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if path.leading_colon.is_none()
                && path.segments.len() > 1
                && let Some(group) = (self.group_of)(&path.segments[0].ident)
            {
                let at = byte_of(self.text, path.segments[0].ident.span());
                self.inserts.push((at, at, format!("{group}::")));
            }
            syn::visit::visit_path(self, path);
        }

        fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
            if let (None, syn::UseTree::Path(path)) = (item.leading_colon, &item.tree)
                && let Some(group) = (self.group_of)(&path.ident)
            {
                let at = byte_of(self.text, path.ident.span());
                self.inserts.push((at, at, format!("{group}::")));
            }
        }

        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            // The arguments of a macro that takes expressions (`vec![...]`, `format!(...)`)
            // are paths too; other macros' tokens are left alone.
            let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
            if let Ok(exprs) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
                for expr in &exprs {
                    self.visit_expr(expr);
                }
            }
        }

        fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
            // Another module's paths start from it.
        }
    }
    let mut paths = Paths {
        text,
        group_of,
        inserts: Vec::new(),
    };
    paths.visit_file(&file);
    edits.extend(paths.inserts);
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, replacement) in edits {
        out.push_str(&text[at..start]);
        out.push_str(&replacement);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// The byte offset where `span` starts in `text`.
fn byte_of(text: &str, span: Span) -> usize {
    let start = span.start();
    let line = text
        .split_inclusive('\n')
        .take(start.line - 1)
        .map(str::len)
        .sum::<usize>();
    // `column` counts characters.
    let rest = &text[line..];
    line + rest
        .char_indices()
        .nth(start.column)
        .map_or(rest.len(), |(i, _)| i)
}

/// The offset just after the line break that ends the last line of `span` in `text`.
fn end_of_line(text: &str, span: Span) -> usize {
    let end = span.end();
    text.split_inclusive('\n')
        .take(end.line)
        .map(str::len)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regrouped_modules_are_declared_in_their_group_and_paths_start_with_it() {
        let text = "//! Controllers.\n\npub use runtime::*;\n\n/// Guestbooks.\npub mod guestbook;\n\npub mod config;\n\npub mod util;\n\npub mod pod;\n\n// +kube-scaffold:scaffold:controller-modules\n\nuse guestbook::Object;\n\npub const CONTROLLERS: &[Start] = &[\n    guestbook::start,\n    config::start,\n    util::start,\n    pod::start, // the pods\n];\n\nfn hooks() -> Vec<Hook> {\n    vec![config::hook(), format!(\"{}\", pod::NAME)]\n}\n\nmod inner {\n    fn f() {\n        config::start();\n    }\n}\n\nfn g(config: u8) -> u8 {\n    let s = \"guestbook::start\";\n    config\n}\n";
        let modules = [
            ("guestbook", "webapp"),
            ("config", "webapp"),
            ("pod", "core"),
        ]
        .map(|(m, g)| (m.to_string(), g.to_string()));
        let regrouped = regroup(text, &modules).unwrap();
        assert_eq!(
            regrouped,
            "//! Controllers.\n\npub use runtime::*;\n\n/// Guestbooks.\npub mod webapp;\n\npub mod util;\n\npub mod core;\n\n// +kube-scaffold:scaffold:controller-modules\n\nuse webapp::guestbook::Object;\n\npub const CONTROLLERS: &[Start] = &[\n    webapp::guestbook::start,\n    webapp::config::start,\n    util::start,\n    core::pod::start, // the pods\n];\n\nfn hooks() -> Vec<Hook> {\n    vec![webapp::config::hook(), format!(\"{}\", core::pod::NAME)]\n}\n\nmod inner {\n    fn f() {\n        config::start();\n    }\n}\n\nfn g(config: u8) -> u8 {\n    let s = \"guestbook::start\";\n    config\n}\n"
        );
        assert_eq!(regroup("pub mod", &modules), None);
    }

    #[test]
    fn the_stored_version_of_our_layout_gets_an_argument_of_its_own() {
        // The same line in a string (or a comment) is not the attribute; columns count
        // characters (`ä`).
        let text = "#[derive(CustomResource)]\n#[kube(\n    group = \"webapp.mock.com\",\n    version = \"v1\",\n    kind = \"Guestbook\"\n)]\npub struct GuestbookSpec {}\n\nconst EXAMPLE: &str = r#\"Käse\n    version = \"v1\",\n\"#;\n";
        let marked = not_stored(text, "v1").unwrap();
        assert_eq!(
            marked,
            text.replacen(
                "    version = \"v1\",\n",
                "    version = \"v1\",\n    storage = false,\n",
                1
            )
        );
        assert_eq!(not_stored(text, "v2"), None);
    }

    #[test]
    fn kopiums_one_line_attribute_gets_one_of_its_own_after_it() {
        let text = "#[derive(CustomResource)]\n#[kube(group = \"ops.example.org\", version = \"v1\", kind = \"Backup\", plural = \"backups\")]\n#[kube(namespaced)]\npub struct BackupSpec {}\n";
        let marked = not_stored(text, "v1").unwrap();
        let line = "#[kube(group = \"ops.example.org\", version = \"v1\", kind = \"Backup\", plural = \"backups\")]\n";
        assert_eq!(
            marked,
            text.replace(line, &format!("{line}#[kube(storage = false)]\n"))
        );
    }

    #[test]
    fn a_source_that_does_not_parse_or_has_two_such_attributes_is_left_alone() {
        assert_eq!(not_stored("#[kube(version = \"v1\")] struct", "v1"), None);
        let twice = "#[kube(version = \"v1\")]\nstruct A;\n#[kube(version = \"v1\")]\nstruct B;\n";
        assert_eq!(not_stored(twice, "v1"), None);
    }
}
