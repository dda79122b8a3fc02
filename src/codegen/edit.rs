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
