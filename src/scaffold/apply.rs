//! Turns a rendered tree into changes against the disk, then writes them all or nothing.

use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};

use super::tree::Tree;
use crate::error::user_error;

/// What happens to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
    Unchanged,
}

impl Action {
    /// The word printed in the status line.
    pub fn label(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Unchanged => "identical",
        }
    }

    fn writes(self) -> bool {
        matches!(self, Action::Create | Action::Update | Action::Delete)
    }
}

/// One file's fate and its new content.
#[derive(Clone, Debug)]
pub struct Change {
    pub path: String,
    pub action: Action,
    pub content: String,
    /// The file's content before the command, if it existed.
    pub original: Option<String>,
}

/// The fingerprint of a file's content the PROJECT file records: `sha256:<hex>`.
pub fn digest(content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The digest of every file in `tree`, by path.
pub fn digests(tree: &Tree) -> std::collections::BTreeMap<String, String> {
    tree.files()
        .map(|(path, content)| (path.to_string(), digest(content)))
        .collect()
}

/// What writing `tree` to its directory would change, file by file.
pub fn changes(tree: &Tree) -> Vec<Change> {
    tree.entries()
        .filter_map(|(path, content)| {
            let original = tree.original(path).map(str::to_string);
            let action = match (&original, content) {
                (None, None) => return None,
                (Some(_), None) => Action::Delete,
                (None, Some(_)) => Action::Create,
                (Some(before), Some(now)) if before == now => Action::Unchanged,
                (Some(_), Some(_)) => Action::Update,
            };
            Some(Change {
                path: path.to_string(),
                action,
                content: content.unwrap_or_default().to_string(),
                original,
            })
        })
        .collect()
}

/// Writes every change that needs writing: a new file in place, a changed one through a
/// temporary file and a rename.
/// If one write fails, every file already written is put back as it was, directories this
/// call created are removed, and the first cause is returned.
pub fn write(root: &Path, changes: &[Change]) -> anyhow::Result<()> {
    let mut undo = Undo::default();
    for change in changes.iter().filter(|c| c.action.writes()) {
        if let Err(err) = write_one(root, change, &mut undo) {
            undo.roll_back();
            return Err(user_error(
                format!("{err:#}; nothing was changed: every file written so far was restored"),
                format!(
                    "make sure `{}` can be written (permissions, free space, no file where a folder belongs), then run the command again",
                    change.path
                ),
            ));
        }
    }
    // A folder whose last file was deleted goes too (it was the tool's: `tests/envtest/`).
    for change in changes.iter().filter(|c| c.action == Action::Delete) {
        let mut dir = root.join(&change.path);
        while let Some(parent) = dir.parent().filter(|p| *p != root) {
            if fs::remove_dir(parent).is_err() {
                break;
            }
            dir = parent.to_path_buf();
        }
    }
    Ok(())
}

#[derive(Default)]
struct Undo {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    dirs: Vec<PathBuf>,
}

impl Undo {
    fn roll_back(self) {
        for (path, original) in self.files.into_iter().rev() {
            let _ = match original {
                Some(bytes) => fs::write(&path, bytes),
                None => fs::remove_file(&path),
            };
        }
        for dir in self.dirs.into_iter().rev() {
            let _ = fs::remove_dir(&dir);
        }
    }
}

fn write_one(root: &Path, change: &Change, undo: &mut Undo) -> anyhow::Result<()> {
    let path = root.join(&change.path);
    if change.action == Action::Delete {
        let original = fs::read(&path).with_context(|| format!("cannot read `{}`", change.path))?;
        fs::remove_file(&path).with_context(|| format!("cannot delete `{}`", change.path))?;
        undo.files.push((path, Some(original)));
        return Ok(());
    }
    let parent = path.parent().unwrap_or(root);
    let mut missing = Vec::new();
    let mut dir = parent;
    while !dir.exists() {
        missing.push(dir.to_path_buf());
        match dir.parent() {
            Some(up) => dir = up,
            None => break,
        }
    }
    for dir in missing.into_iter().rev() {
        fs::create_dir(&dir)
            .with_context(|| format!("cannot create directory `{}`", dir.display()))?;
        undo.dirs.push(dir);
    }
    let original = match fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == ErrorKind::NotFound => None,
        Err(err) => return Err(err).with_context(|| format!("cannot read `{}`", change.path)),
    };
    if original.is_none() {
        // A new file: created in place, and only if nothing appeared there meanwhile (a file
        // is never replaced unread); a failure half-way removes it with the rest.
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("cannot create `{}`", change.path))?;
        undo.files.push((path, None));
        return file
            .write_all(change.content.as_bytes())
            .with_context(|| format!("cannot write `{}`", change.path));
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = parent.join(format!(".{file_name}.kube-scaffold-tmp"));
    fs::write(&temp, &change.content).with_context(|| format!("cannot write `{}`", change.path))?;
    if let Err(err) = fs::rename(&temp, &path) {
        let _ = fs::remove_file(&temp);
        return Err(err).with_context(|| format!("cannot write `{}`", change.path));
    }
    undo.files.push((path, original));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, content: &str) -> Change {
        Change {
            path: path.into(),
            action: Action::Create,
            content: content.into(),
            original: None,
        }
    }

    fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.strip_prefix(root).unwrap().display().to_string();
                if path.is_dir() {
                    out.push((format!("{name}/"), Vec::new()));
                    stack.push(path);
                } else {
                    out.push((name, fs::read(&path).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn a_failure_half_way_restores_the_tree_byte_for_byte() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("kept.txt"), "the user's words\n").unwrap();
        fs::write(
            root.path().join("config"),
            "a file where a directory is needed\n",
        )
        .unwrap();
        let before = snapshot(root.path());

        let mut updated = change("kept.txt", "overwritten\n");
        updated.action = Action::Update;
        let changes = [
            change("new/deep/file.rs", "fn main() {}\n"),
            updated,
            change("config/samples/a.yaml", "kind: A\n"),
        ];
        let err = write(root.path(), &changes).unwrap_err();

        assert!(format!("{err:#}").contains("config"), "{err:#}");
        assert_eq!(snapshot(root.path()), before);
    }

    #[test]
    fn writes_every_change_that_needs_writing() {
        let root = tempfile::tempdir().unwrap();
        let mut skipped = change("skipped.txt", "not written\n");
        skipped.action = Action::Unchanged;
        write(root.path(), &[change("a/b.txt", "b\n"), skipped]).unwrap();
        assert_eq!(
            fs::read_to_string(root.path().join("a/b.txt")).unwrap(),
            "b\n"
        );
        assert!(!root.path().join("skipped.txt").exists());
        assert_eq!(
            snapshot(root.path()).len(),
            2,
            "no temporary file is left behind"
        );
    }
}
