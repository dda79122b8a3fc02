//! Turns a plan into changes in memory, refuses conflicts, then writes all or nothing.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::marker;
use super::plan::{FileSpec, IfExists, Output, Plan};
use super::rustfmt::Rustfmt;
use super::templates::Templates;
use crate::ui::user_error;

/// What happens to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Create,
    Overwrite,
    Update,
    Skip,
    Unchanged,
}

impl Action {
    /// The word printed in the status line.
    pub fn label(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Overwrite => "overwrite",
            Action::Update => "update",
            Action::Skip => "skip",
            Action::Unchanged => "identical",
        }
    }

    fn writes(self) -> bool {
        matches!(self, Action::Create | Action::Overwrite | Action::Update)
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

/// How the command wants conflicts handled.
pub struct Options<'a> {
    /// Overwrite files whose policy is `IfExists::Error`, unless their user edited them.
    pub force: bool,
    /// With `force`, overwrite edited files too.
    pub overwrite_edited: bool,
    /// The sha256 of each file as the tool last wrote it (see `digest`).
    pub recorded: &'a BTreeMap<String, String>,
    /// The `help:` line shown when files are in the way.
    pub conflict_help: &'a str,
    /// Formats generated Rust sources.
    pub rustfmt: &'a Rustfmt,
}

/// The fingerprint of a file's content the PROJECT file records: `sha256:<hex>`.
pub fn digest(content: &str) -> String {
    let hash = Sha256::digest(content.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Renders every file and insert of `plan` against the tree at `root`. Nothing is written.
pub fn render(
    plan: &Plan,
    templates: &Templates,
    context: &impl Serialize,
    root: &Path,
    options: &Options<'_>,
) -> anyhow::Result<Vec<Change>> {
    let mut changes: BTreeMap<String, Change> = BTreeMap::new();
    let mut conflicts = Vec::new();
    let mut edited = Vec::new();
    for spec in &plan.files {
        let mut content = templates.render(&spec.template, context)?;
        match spec.output {
            Output::Text if spec.dest.ends_with(".rs") => {
                content = options.rustfmt.format(&content, root, &spec.dest)?;
            }
            Output::Text => {}
            Output::YamlFromJson { header } => content = yaml_from_json(&content, header, spec)?,
        }
        let original = read_existing(root, &spec.dest)?;
        let action = match &original {
            None => Action::Create,
            Some(existing) if *existing == content => Action::Unchanged,
            Some(existing) => match spec.if_exists {
                IfExists::Error if !options.force => {
                    conflicts.push(spec.dest.clone());
                    Action::Skip
                }
                IfExists::Error
                    if !options.overwrite_edited
                        && options.recorded.get(&spec.dest) != Some(&digest(existing)) =>
                {
                    edited.push(spec.dest.clone());
                    Action::Skip
                }
                IfExists::Error | IfExists::Overwrite => Action::Overwrite,
                IfExists::Skip => Action::Skip,
            },
        };
        if action == Action::Skip {
            content = original.clone().unwrap_or_default();
        }
        let change = Change {
            path: spec.dest.clone(),
            action,
            content,
            original,
        };
        changes.insert(spec.dest.clone(), change);
    }
    if !conflicts.is_empty() {
        return Err(user_error(
            format!(
                "{} would be overwritten; nothing was written",
                quoted(&conflicts)
            ),
            options.conflict_help,
        ));
    }
    if !edited.is_empty() {
        return Err(user_error(
            format!(
                "{} changed since kube-scaffold wrote them, and `--force` keeps your edits; nothing was written",
                quoted(&edited)
            ),
            "add `--overwrite-edited` to replace them too (your changes there are lost), or move them away first",
        ));
    }

    for insert in &plan.inserts {
        if !changes.contains_key(&insert.file) {
            let existing = read_existing(root, &insert.file)?.ok_or_else(|| {
                user_error(
                    format!("`{}` is missing", insert.file),
                    format!(
                        "restore `{}` (with its `{}` line) from version control",
                        insert.file,
                        marker::marker_line(&insert.file, &insert.marker)
                    ),
                )
            })?;
            let change = Change {
                path: insert.file.clone(),
                action: Action::Unchanged,
                content: existing.clone(),
                original: Some(existing),
            };
            changes.insert(insert.file.clone(), change);
        }
        let change = changes.get_mut(&insert.file).expect("inserted above");
        let updated = marker::insert(
            &change.content,
            &insert.file,
            &insert.marker,
            &insert.fragment,
        )?;
        if updated != change.content {
            change.content = updated;
            if matches!(change.action, Action::Skip | Action::Unchanged) {
                change.action = Action::Update;
            }
        }
    }
    for change in changes.values_mut() {
        if change.action == Action::Update && change.path.ends_with(".rs") {
            change.content = keep_formatted(change, root, options.rustfmt)?;
        }
    }
    for computed in &plan.computed {
        let change = replace(root, &computed.dest, computed.content.clone())?;
        changes.insert(computed.dest.clone(), change);
    }
    Ok(changes.into_values().collect())
}

/// The JSON a template rendered, as YAML after `header`.
fn yaml_from_json(json: &str, header: &str, spec: &FileSpec) -> anyhow::Result<String> {
    let value: serde_json::Value = serde_json::from_str(json)
        .with_context(|| format!("template {} does not render JSON", spec.template))?;
    let yaml = serde_saphyr::to_string(&value)
        .with_context(|| format!("cannot write `{}` as YAML", spec.dest))?;
    Ok(format!("{header}{yaml}"))
}

/// The change that writes `content`, which the command computed itself, to `dest`.
pub fn replace(root: &Path, dest: &str, content: String) -> anyhow::Result<Change> {
    let original = read_existing(root, dest)?;
    let action = match &original {
        None => Action::Create,
        Some(existing) if *existing == content => Action::Unchanged,
        Some(_) => Action::Update,
    };
    Ok(Change {
        path: dest.to_string(),
        action,
        content,
        original,
    })
}

fn quoted(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A file that rustfmt left as it was stays formatted after an insert; a file formatted some
/// other way keeps its layout (only the inserted lines are new).
fn keep_formatted(change: &Change, root: &Path, rustfmt: &Rustfmt) -> anyhow::Result<String> {
    let original = change.original.as_deref().unwrap_or_default();
    if rustfmt.format(original, root, &change.path)? == original {
        rustfmt.format(&change.content, root, &change.path)
    } else {
        Ok(change.content.clone())
    }
}

/// The file's text, `None` if it does not exist; a directory in its place is an error.
fn read_existing(root: &Path, dest: &str) -> anyhow::Result<Option<String>> {
    let path = root.join(dest);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(_) if path.is_dir() => Err(user_error(
            format!("`{dest}` is a directory, but a file goes there; nothing was written"),
            format!("move `{dest}` away and run the command again"),
        )),
        Err(err) => Err(user_error(
            format!("cannot read `{dest}`: {err}; nothing was written"),
            format!("make `{dest}` a readable file, and the folders above it directories"),
        )),
    }
}

/// Writes every change that needs writing, each through a temporary file and a rename.
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
        updated.action = Action::Overwrite;
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
        skipped.action = Action::Skip;
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
