//! A project's files in memory: what rendering reads and writes.
//!
//! A tree is either empty (a replay from PROJECT touches no disk) or laid over a directory,
//! whose files it reads the first time they are asked for (a command adding to a project).
//! It never writes: `changes` says what differs from the disk, and `apply::write` writes.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::user_error;

/// Files by path (relative, `/`-separated), as they are after rendering.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    /// Where files not yet read come from; `None` for a tree in memory only.
    disk: Option<PathBuf>,
    /// Every file read or written: its content now, `None` if it does not exist.
    files: BTreeMap<String, Option<String>>,
    /// What each file read from disk held then.
    originals: BTreeMap<String, Option<String>>,
    /// The files written or removed; the others were only read.
    rendered: BTreeSet<String>,
}

impl Tree {
    /// A tree with nothing in it and nothing under it.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A tree laid over the directory `root`.
    pub fn over(root: &Path) -> Self {
        Self {
            disk: Some(root.to_path_buf()),
            ..Self::default()
        }
    }

    /// The file's content, `None` if it does not exist.
    pub fn read(&mut self, path: &str) -> anyhow::Result<Option<&str>> {
        if !self.files.contains_key(path) {
            let content = match &self.disk {
                Some(root) => read_from_disk(root, path)?,
                None => None,
            };
            self.originals.insert(path.to_string(), content.clone());
            self.files.insert(path.to_string(), content);
        }
        Ok(self.files[path].as_deref())
    }

    /// Sets the file's content.
    pub fn write(&mut self, path: &str, content: String) -> anyhow::Result<()> {
        self.read(path)?;
        self.rendered.insert(path.to_string());
        self.files.insert(path.to_string(), Some(content));
        Ok(())
    }

    /// Removes the file.
    pub fn remove(&mut self, path: &str) -> anyhow::Result<()> {
        self.read(path)?;
        self.rendered.insert(path.to_string());
        self.files.insert(path.to_string(), None);
        Ok(())
    }

    /// Every file this tree wrote or removed (not those it only read): its content now
    /// (`None`: it does not exist).
    pub fn entries(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.rendered
            .iter()
            .map(|path| (path.as_str(), self.files[path].as_deref()))
    }

    /// What the file held on disk before this tree touched it (`None` if it did not exist
    /// or the tree is in memory only).
    pub fn original(&self, path: &str) -> Option<&str> {
        self.originals.get(path).and_then(|c| c.as_deref())
    }

    /// Every file that exists in the tree now, with its content.
    pub fn files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files
            .iter()
            .filter_map(|(path, content)| Some((path.as_str(), content.as_deref()?)))
    }
}

/// The file's text, `None` if it does not exist; a directory in its place is an error.
fn read_from_disk(root: &Path, path: &str) -> anyhow::Result<Option<String>> {
    let full = root.join(path);
    match fs::read_to_string(&full) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(_) if full.is_dir() => Err(user_error(
            format!("`{path}` is a directory, but a file goes there; nothing was written"),
            format!("move `{path}` away and run the command again"),
        )),
        Err(err) => Err(user_error(
            format!("cannot read `{path}`: {err}; nothing was written"),
            format!("make `{path}` a readable file, and the folders above it directories"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_tree_reads_nothing_from_disk() {
        let mut tree = Tree::empty();
        assert_eq!(tree.read("Cargo.toml").unwrap(), None);
        tree.write("a/b.rs", "x".into()).unwrap();
        assert_eq!(tree.read("a/b.rs").unwrap(), Some("x"));
        assert_eq!(tree.files().collect::<Vec<_>>(), [("a/b.rs", "x")]);
    }

    #[test]
    fn a_tree_over_a_directory_reads_through_and_remembers_the_original() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("kept.txt"), "disk\n").unwrap();
        let mut tree = Tree::over(dir.path());
        assert_eq!(tree.read("kept.txt").unwrap(), Some("disk\n"));
        tree.write("kept.txt", "memory\n".into()).unwrap();
        assert_eq!(tree.read("kept.txt").unwrap(), Some("memory\n"));
        assert_eq!(tree.original("kept.txt"), Some("disk\n"));
        assert_eq!(
            fs::read_to_string(dir.path().join("kept.txt")).unwrap(),
            "disk\n"
        );
    }

    #[test]
    fn only_the_files_written_or_removed_are_entries() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("read.txt"), "read\n").unwrap();
        fs::write(dir.path().join("gone.txt"), "gone\n").unwrap();
        let mut tree = Tree::over(dir.path());
        tree.read("read.txt").unwrap();
        tree.write("new.txt", "new\n".into()).unwrap();
        tree.remove("gone.txt").unwrap();
        let entries: Vec<_> = tree.entries().collect();
        assert_eq!(entries, [("gone.txt", None), ("new.txt", Some("new\n"))]);
    }
}
