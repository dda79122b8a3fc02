//! Three-way merges of one file's text (diffy): the base (what an earlier version generated),
//! ours (the user's file) and theirs (what this version generates). Conflicts are written with
//! git-style markers.

use diffy::{ConflictStyle, MergeOptions};

/// The first line of a conflict: the user's lines follow it.
pub const OURS_MARKER: &str = "<<<<<<< yours";
/// The last line of a conflict: the new scaffold's lines are above it.
pub const THEIRS_MARKER: &str = ">>>>>>> kube-scaffold";

/// A merge's result.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    /// Both sides' changes, without conflict.
    Clean(String),
    /// The text with conflict markers, and the line numbers (from 1) where conflicts start.
    Conflicts { text: String, lines: Vec<usize> },
}

/// Merges the changes from `base` to `ours` and from `base` to `theirs`.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Merged {
    let mut options = MergeOptions::new();
    options.set_conflict_style(ConflictStyle::Merge);
    match options.merge(base, ours, theirs) {
        Ok(text) => Merged::Clean(text),
        Err(text) => conflicts(&text),
    }
}

/// The whole of `ours` against the whole of `theirs`, as one conflict: for a file whose base
/// is not known.
pub fn whole_file_conflict(ours: &str, theirs: &str) -> Merged {
    let newline = |s: &str| {
        if s.ends_with('\n') || s.is_empty() {
            ""
        } else {
            "\n"
        }
    };
    let text = format!(
        "<<<<<<< ours\n{ours}{}=======\n{theirs}{}>>>>>>> theirs\n",
        newline(ours),
        newline(theirs)
    );
    conflicts(&text)
}

fn conflicts(text: &str) -> Merged {
    let mut lines = Vec::new();
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches('\n');
        if bare == "<<<<<<< ours" {
            lines.push(index + 1);
            out.push_str(OURS_MARKER);
            out.push('\n');
        } else if bare == ">>>>>>> theirs" {
            out.push_str(THEIRS_MARKER);
            out.push('\n');
        } else {
            out.push_str(line);
        }
    }
    Merged::Conflicts { text: out, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "fn a() {}\n\nfn b() {\n    one();\n}\n\nfn c() {}\n";

    #[test]
    fn changes_to_different_places_merge_cleanly() {
        let ours = BASE.replace("one();", "one();\n    mine();");
        let theirs = BASE.replace("fn c() {}", "fn c() {\n    new();\n}");
        assert_eq!(
            merge3(BASE, &ours, &theirs),
            Merged::Clean(
                "fn a() {}\n\nfn b() {\n    one();\n    mine();\n}\n\nfn c() {\n    new();\n}\n"
                    .into()
            )
        );
    }

    #[test]
    fn changes_to_the_same_lines_conflict_with_markers_and_line_numbers() {
        let ours = BASE.replace("one();", "mine();");
        let theirs = BASE.replace("one();", "theirs();");
        let Merged::Conflicts { text, lines } = merge3(BASE, &ours, &theirs) else {
            panic!("no conflict");
        };
        assert_eq!(lines, [4]);
        assert!(
            text.contains(
                "<<<<<<< yours\n    mine();\n=======\n    theirs();\n>>>>>>> kube-scaffold\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_unchanged_side_takes_the_other() {
        let theirs = BASE.replace("fn a() {}", "fn a() -> u8 { 1 }");
        assert_eq!(merge3(BASE, BASE, &theirs), Merged::Clean(theirs.clone()));
        assert_eq!(merge3(BASE, &theirs, BASE), Merged::Clean(theirs));
    }

    #[test]
    fn a_whole_file_conflict_keeps_both_sides() {
        let Merged::Conflicts { text, lines } = whole_file_conflict("mine\n", "new") else {
            panic!("no conflict");
        };
        assert_eq!(lines, [1]);
        assert_eq!(
            text,
            "<<<<<<< yours\nmine\n=======\nnew\n>>>>>>> kube-scaffold\n"
        );
    }
}
