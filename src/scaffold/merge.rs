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

/// Merges the changes from `base` to `ours` and from `base` to `theirs`. Lines the user only
/// added (a make target appended, a field, a line in a function) are kept without a conflict
/// whatever the new scaffold changed around them: where a plain merge conflicts, they are set
/// aside, the rest is merged, and they are put back next to the lines they stood by. Only
/// lines both sides changed conflict.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> Merged {
    let text = match diffy_merge(base, ours, theirs) {
        Ok(text) => return Merged::Clean(text),
        Err(text) => text,
    };
    let (changed, additions) = split_additions(base, ours);
    if additions.is_empty() {
        return conflicts(&text);
    }
    let (merged, clean) = match diffy_merge(base, &changed, theirs) {
        Ok(text) => (text, true),
        Err(text) => (text, false),
    };
    let text = put_back(base, &merged, &additions);
    match clean {
        true => Merged::Clean(text),
        false => conflicts(&text),
    }
}

/// diffy's three-way merge: the text, or the text with `<<<<<<< ours` conflicts.
fn diffy_merge(base: &str, ours: &str, theirs: &str) -> Result<String, String> {
    let mut options = MergeOptions::new();
    options.set_conflict_style(ConflictStyle::Merge);
    options.merge(base, ours, theirs)
}

/// Lines the user added between two lines of the base: before the base's line `before` (its
/// number of lines: at the end).
struct Addition<'a> {
    before: usize,
    lines: Vec<&'a str>,
}

/// `ours` without the lines it only added to `base`, and those additions.
fn split_additions<'a>(base: &str, ours: &'a str) -> (String, Vec<Addition<'a>>) {
    let lines: Vec<&str> = ours.split_inclusive('\n').collect();
    let mut changed = String::with_capacity(ours.len());
    let mut additions = Vec::new();
    for op in similar::TextDiff::from_lines(base, ours).ops() {
        match *op {
            similar::DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => additions.push(Addition {
                before: old_index,
                lines: lines[new_index..new_index + new_len].to_vec(),
            }),
            similar::DiffOp::Delete { .. } => {}
            _ => changed.extend(lines[op.new_range()].iter().copied()),
        }
    }
    (changed, additions)
}

/// `merged` with each addition put back: after the base line it followed, else before the one
/// it preceded, else before the next base line the merge kept (at the end if none).
fn put_back(base: &str, merged: &str, additions: &[Addition<'_>]) -> String {
    let base_len = base.split_inclusive('\n').count();
    let lines: Vec<&str> = merged.split_inclusive('\n').collect();
    // Where each base line stands in `merged`, if the merge kept it.
    let mut at: Vec<Option<usize>> = vec![None; base_len];
    for op in similar::TextDiff::from_lines(base, merged).ops() {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = *op
        {
            for i in 0..len {
                at[old_index + i] = Some(new_index + i);
            }
        }
    }
    let position = |before: usize| -> usize {
        if before == 0 {
            return 0;
        }
        if let Some(j) = at[before - 1] {
            return j + 1;
        }
        at[before..]
            .iter()
            .flatten()
            .next()
            .copied()
            .unwrap_or(lines.len())
    };
    let mut by_position: Vec<(usize, &Addition<'_>)> =
        additions.iter().map(|a| (position(a.before), a)).collect();
    by_position.sort_by_key(|(p, _)| *p);
    let mut out = String::with_capacity(merged.len());
    let mut next = by_position.iter().peekable();
    for index in 0..=lines.len() {
        while let Some((_, addition)) = next.next_if(|(p, _)| *p == index) {
            // The new scaffold added the same lines there: once is enough.
            let n = addition.lines.len();
            let after = &lines[index..(index + n).min(lines.len())];
            let before = &lines[index.saturating_sub(n)..index];
            if after == &addition.lines[..] || before == &addition.lines[..] {
                continue;
            }
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.extend(addition.lines.iter().copied());
        }
        if let Some(line) = lines.get(index) {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(line);
        }
    }
    out
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
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the new scaffold changed (lines replaced, deleted, added), lines the user
        /// only added all come through, each block whole, without a conflict.
        #[test]
        fn added_lines_are_never_lost(
            base in proptest::collection::vec("[a-d]{1,3}", 1..12),
            edits in proptest::collection::vec((0usize..12, 0u8..3, "[a-d]{1,3}"), 0..6),
            additions in proptest::collection::vec((0usize..13, 1usize..3), 1..4),
        ) {
            let text = |lines: &[String]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            // Theirs: some base lines replaced, deleted, or followed by a new one.
            let mut theirs = base.clone();
            for (at, what, line) in &edits {
                let at = at % theirs.len().max(1);
                match (what, theirs.is_empty()) {
                    (_, true) => theirs.push(line.clone()),
                    (0, _) => theirs[at] = line.clone(),
                    (1, _) => { theirs.remove(at); }
                    _ => theirs.insert(at + 1, line.clone()),
                }
            }
            // Ours: blocks of new lines (`+N.M`, which no scaffold writes) between base lines.
            let mut ours = base.clone();
            let mut blocks = Vec::new();
            // Each block goes between two base lines: placed last to first, none splits another.
            let mut sorted: Vec<(usize, usize)> =
                additions.iter().map(|(at, len)| ((*at).min(base.len()), *len)).collect();
            sorted.sort_by_key(|a| std::cmp::Reverse(a.0));
            for (n, (at, len)) in sorted.iter().enumerate() {
                let block: Vec<String> = (0..*len).map(|m| format!("+{n}.{m}")).collect();
                ours.splice(*at..*at, block.iter().cloned());
                blocks.push(text(&block));
            }
            let merged = merge3(&text(&base), &text(&ours), &text(&theirs));
            let Merged::Clean(merged) = merged else {
                panic!("a conflict: {merged:?}");
            };
            for block in &blocks {
                prop_assert!(merged.contains(block.as_str()), "lost {block:?} in {merged:?}");
            }
        }
    }

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
    fn a_target_appended_to_a_file_whose_tail_the_scaffold_rewrote_is_kept() {
        let base = "all: build\n\nbuild:\n\tcargo build\n";
        let ours = format!("{base}\n.PHONY: guests\nguests:\n\t@echo 42\n");
        let theirs = "all: build\n\nbuild: fmt\n\tcargo build --locked\n\nfmt:\n\tcargo fmt\n";
        assert_eq!(
            merge3(base, &ours, theirs),
            Merged::Clean(format!("{theirs}\n.PHONY: guests\nguests:\n\t@echo 42\n"))
        );
    }

    #[test]
    fn lines_added_inside_what_the_scaffold_changed_stay_by_their_neighbours() {
        // A field after `foo`, whose doc the scaffold changed; a line in a function whose
        // next line it changed.
        let base =
            "struct Spec {\n    /// Foo.\n    foo: u8,\n}\n\nfn f() {\n    one();\n    two();\n}\n";
        let ours = base
            .replace("    foo: u8,\n", "    foo: u8,\n    bar: u8,\n")
            .replace("    one();\n", "    one();\n    mine();\n");
        let theirs = base
            .replace("/// Foo.", "/// Foo, documented.")
            .replace("two();", "three();");
        let expected = theirs
            .replace("    foo: u8,\n", "    foo: u8,\n    bar: u8,\n")
            .replace("    one();\n", "    one();\n    mine();\n");
        assert_eq!(merge3(base, &ours, &theirs), Merged::Clean(expected));
    }

    #[test]
    fn an_addition_beside_a_real_conflict_is_kept_and_the_conflict_stays() {
        let ours = BASE
            .replace("one();", "mine();")
            .replace("fn c() {}\n", "fn c() {}\n\nfn d() {}\n");
        let theirs = BASE
            .replace("one();", "theirs();")
            .replace("fn c() {}", "fn c() -> u8 { 1 }");
        let Merged::Conflicts { text, lines } = merge3(BASE, &ours, &theirs) else {
            panic!("no conflict");
        };
        assert_eq!(lines.len(), 1, "{text}");
        assert!(
            text.ends_with("fn c() -> u8 { 1 }\n\nfn d() {}\n"),
            "{text}"
        );
    }

    #[test]
    fn lines_the_scaffold_added_too_are_not_doubled() {
        let base = "a\nb\n";
        let ours = "a\nb\nc\n";
        let theirs = "a\nB\nc\n";
        assert_eq!(
            merge3(base, ours, theirs),
            Merged::Clean("a\nB\nc\n".into())
        );
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
