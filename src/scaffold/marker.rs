//! Idempotent inserts above `+kube-scaffold:scaffold:<name>` marker lines.

use crate::error::user_error;

/// What every marker line contains after its comment sign.
pub const PREFIX: &str = "+kube-scaffold:scaffold:";

/// A marker: the file it stands in and its name. Declared once, as a constant, by the plugin
/// whose template writes it; inserts name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    pub file: &'static str,
    pub name: &'static str,
}

impl Marker {
    pub const fn new(file: &'static str, name: &'static str) -> Self {
        Self { file, name }
    }
}

/// The marker line as it must appear in `file`: `//` in Rust, `#` in YAML, TOML, Makefiles
/// and shell scripts. A file of another type has no marker syntax: an error (of the plugin that
/// asked), never a guess.
pub fn marker_line(file: &str, marker: &str) -> anyhow::Result<String> {
    let name = file.rsplit('/').next().unwrap_or(file);
    let comment = if name.ends_with(".rs") {
        "//"
    } else if [".yaml", ".yml", ".toml", ".sh"]
        .iter()
        .any(|e| name.ends_with(e))
        || name == "Makefile"
    {
        "#"
    } else {
        anyhow::bail!("kube-scaffold knows no comment syntax for markers in `{file}`");
    };
    Ok(format!("{comment} {PREFIX}{marker}"))
}

/// Inserts `fragment` above the marker line of `content`, indented like the marker.
///
/// A fragment whose non-blank lines already stand, in order, anywhere in the file is not
/// inserted again, so running a command twice changes nothing the second time.
pub fn insert(content: &str, file: &str, marker: &str, fragment: &str) -> anyhow::Result<String> {
    let wanted = marker_line(file, marker)?;
    let lines: Vec<&str> = content.lines().collect();
    let Some(at) = lines.iter().position(|l| l.trim() == wanted) else {
        return Err(user_error(
            format!("`{file}` has no marker line `{wanted}`"),
            format!(
                "restore the line `{wanted}` in `{file}` where new entries belong, then run the command again"
            ),
        ));
    };
    if contains(&lines, fragment) {
        return Ok(content.to_string());
    }
    let indent = &lines[at][..lines[at].len() - lines[at].trim_start().len()];
    let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
    for line in fragment.lines() {
        out.push(if line.trim().is_empty() {
            String::new()
        } else {
            format!("{indent}{line}")
        });
    }
    out.extend(lines[at..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    if content.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Whether the fragment's non-blank lines already stand, in order, in `lines`. A fragment
/// with no such line has nothing to insert, so it counts as present.
fn contains(lines: &[&str], fragment: &str) -> bool {
    let wanted: Vec<&str> = fragment
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let have: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    wanted.is_empty() || have.windows(wanted.len()).any(|w| w == wanted.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUST: &str =
        "fn f() {\n    let v = vec![\n        // +kube-scaffold:scaffold:items\n    ];\n}\n";

    #[test]
    fn inserts_above_the_marker_with_its_indentation() {
        let out = insert(RUST, "src/a.rs", "items", "a(),").unwrap();
        assert_eq!(
            out,
            "fn f() {\n    let v = vec![\n        a(),\n        // +kube-scaffold:scaffold:items\n    ];\n}\n"
        );
    }

    #[test]
    fn inserting_twice_equals_inserting_once() {
        let once = insert(RUST, "src/a.rs", "items", "a(),\nb(),").unwrap();
        let twice = insert(&once, "src/a.rs", "items", "a(),\nb(),").unwrap();
        assert_eq!(once, twice);
        let other = insert(&once, "src/a.rs", "items", "c(),").unwrap();
        assert!(
            other.contains("b(),\n        c(),\n        // +kube"),
            "{other}"
        );
    }

    #[test]
    fn keeps_blank_lines_of_the_fragment_unindented() {
        let out = insert(RUST, "src/a.rs", "items", "pub mod a;\n\n").unwrap();
        assert!(
            out.contains("        pub mod a;\n\n        // +kube"),
            "{out}"
        );
    }

    #[test]
    fn yaml_markers_use_hash_comments() {
        let yaml = "resources:\n# +kube-scaffold:scaffold:crd\n";
        let out = insert(
            yaml,
            "config/crd/kustomization.yaml",
            "crd",
            "- bases/a.yaml",
        )
        .unwrap();
        assert_eq!(
            out,
            "resources:\n- bases/a.yaml\n# +kube-scaffold:scaffold:crd\n"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_fragment_inserted_twice_equals_inserted_once(
            fragment in "[a-z(),;: ]{0,20}(\\n[a-z(),;: ]{0,20}){0,3}",
            yaml in proptest::bool::ANY,
        ) {
            let (file, content) = if yaml {
                ("config/crd/kustomization.yaml", "resources:\n# +kube-scaffold:scaffold:items\n")
            } else {
                ("src/a.rs", RUST)
            };
            let once = insert(content, file, "items", &fragment).unwrap();
            let twice = insert(&once, file, "items", &fragment).unwrap();
            proptest::prop_assert_eq!(&once, &twice);
            proptest::prop_assert!(once.contains("+kube-scaffold:scaffold:items"));
        }
    }

    #[test]
    fn a_file_type_without_comment_syntax_is_an_error_not_a_guess() {
        assert_eq!(
            marker_line("config/a.yml", "x").unwrap(),
            "# +kube-scaffold:scaffold:x"
        );
        assert_eq!(
            marker_line("Makefile", "x").unwrap(),
            "# +kube-scaffold:scaffold:x"
        );
        let err = insert("{}", "config/a.json", "x", "y").unwrap_err();
        assert!(format!("{err:#}").contains("`config/a.json`"), "{err:#}");
    }

    #[test]
    fn a_missing_marker_names_the_file_and_the_line_to_restore() {
        let err = insert("fn main() {}\n", "src/main.rs", "imports", "use a;").unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("`src/main.rs`"), "{message}");
        assert!(
            message.contains("// +kube-scaffold:scaffold:imports"),
            "{message}"
        );
    }
}
