//! The runtime crate as a project vendors it until the crate is on crates.io: its manifest,
//! README and library sources, without the crate's own tests.

use std::collections::BTreeSet;

use anyhow::Context as _;

/// `files` (path in the runtime crate, text) as the project holds them: each Rust source
/// without its modules compiled only for tests (`#[cfg(test)] mod tests { .. }`, and a
/// `#[cfg(all(test, ..))] mod fake;` with its file), each manifest without
/// `[dev-dependencies]`.
pub fn without_tests(files: &[(String, &str)]) -> anyhow::Result<Vec<(String, String)>> {
    let mut dropped = BTreeSet::new();
    let mut out = Vec::new();
    for (path, text) in files {
        let text = if path.ends_with(".rs") {
            let (kept, modules) = rust_without_tests(text)
                .with_context(|| format!("the runtime crate's `{path}` does not parse"))?;
            let dir = module_dir(path);
            dropped.extend(
                modules
                    .iter()
                    .flat_map(|m| [format!("{dir}{m}.rs"), format!("{dir}{m}/mod.rs")]),
            );
            kept
        } else if path.ends_with("Cargo.toml") {
            without_table(text, "[dev-dependencies]")
        } else {
            text.to_string()
        };
        out.push((path.clone(), text));
    }
    out.retain(|(path, _)| !dropped.contains(path));
    Ok(out)
}

/// The directory where the file modules that `path` declares live: `src/a/` for `src/a.rs`
/// and `src/a/mod.rs`, `src/` for `src/lib.rs`.
fn module_dir(path: &str) -> String {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    match file {
        "mod.rs" | "lib.rs" | "main.rs" => prefix,
        _ => format!("{prefix}{}/", file.trim_end_matches(".rs")),
    }
}

/// `text` without its top-level modules under a `cfg` that needs `test`, whole lines from the
/// first attribute to the module's end; and the names of those modules that are files.
fn rust_without_tests(text: &str) -> syn::Result<(String, Vec<String>)> {
    let file = syn::parse_file(text)?;
    let mut cut = Vec::new();
    let mut files = Vec::new();
    for item in &file.items {
        let syn::Item::Mod(module) = item else {
            continue;
        };
        if !module.attrs.iter().any(needs_test) {
            continue;
        }
        let first = module.attrs[0].pound_token.span.start().line;
        let last = match &module.content {
            Some((brace, _)) => brace.span.close().end().line,
            None => module.semi.map_or(first, |semi| semi.span.end().line),
        };
        if module.content.is_none() {
            files.push(module.ident.to_string());
        }
        cut.push(first..=last);
    }
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(index, _)| !cut.iter().any(|lines| lines.contains(&(index + 1))))
        .map(|(_, line)| line)
        .collect();
    Ok((format!("{}\n", kept.join("\n").trim_end()), files))
}

/// Whether `attr` is a `cfg` that holds only in tests: `cfg(test)`, `cfg(all(test, ..))`.
fn needs_test(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("cfg") {
        return false;
    }
    let Ok(meta) = attr.parse_args::<syn::Meta>() else {
        return false;
    };
    match &meta {
        syn::Meta::Path(path) => path.is_ident("test"),
        syn::Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|args| args.iter().any(|arg| arg.path().is_ident("test"))),
        _ => false,
    }
}

/// A TOML manifest without the table `header` (up to the next table).
fn without_table(text: &str, header: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with('[') {
            skipping = line.trim() == header;
        }
        if !skipping {
            out.push(line);
        }
    }
    format!("{}\n", out.join("\n").trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_and_their_files_are_dropped() {
        let lib = "//! A crate.\n\npub mod a;\n#[cfg(all(test, feature = \"x\"))]\npub(crate) mod fake;\n\npub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
        let files = [
            ("src/lib.rs".to_string(), lib),
            ("src/fake.rs".to_string(), "pub fn stand_in() {}\n"),
            (
                "src/a.rs".to_string(),
                "#[cfg(feature = \"x\")]\nmod kept;\n",
            ),
            ("src/a/kept.rs".to_string(), "\n"),
            (
                "Cargo.toml".to_string(),
                "[package]\nname = \"a\"\n\n[dev-dependencies]\nhttp = \"1\"\n\n[lints.rust]\nunsafe_code = \"forbid\"\n",
            ),
        ];
        let out = without_tests(&files).unwrap();
        let paths: Vec<&str> = out.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["src/lib.rs", "src/a.rs", "src/a/kept.rs", "Cargo.toml"]
        );
        assert_eq!(out[0].1, "//! A crate.\n\npub mod a;\n\npub fn f() {}\n");
        assert_eq!(out[1].1, files[2].1);
        assert_eq!(
            out[3].1,
            "[package]\nname = \"a\"\n\n[lints.rust]\nunsafe_code = \"forbid\"\n"
        );
    }

    #[test]
    fn the_embedded_runtime_is_vendored_at_the_version_projects_name() {
        let files = crate::scaffold::templates::runtime_files();
        let vendored = without_tests(&files).unwrap();
        for manifest in ["Cargo.toml", "dylib/Cargo.toml"] {
            let (_, text) = vendored.iter().find(|(path, _)| path == manifest).unwrap();
            let manifest: toml::Table = toml::from_str(text).unwrap();
            assert_eq!(
                manifest["package"]["version"].as_str(),
                Some(crate::model::versions::VERSIONS.runtime)
            );
        }
        assert!(
            vendored.len() < files.len(),
            "the stand-in API server is left out"
        );
    }

    #[test]
    fn a_source_that_does_not_parse_is_an_error() {
        let files = [("src/lib.rs".to_string(), "pub fn {")];
        let error = without_tests(&files).unwrap_err();
        assert!(format!("{error:#}").contains("`src/lib.rs` does not parse"));
    }
}
