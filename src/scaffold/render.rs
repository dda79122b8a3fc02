//! Renders a plan onto a tree, in memory: each file from its template, each fragment above its
//! marker. It decides nothing about the user's files beyond each file's `IfExists`: it reports
//! what it found, and the command's policy decides.

use std::collections::BTreeMap;

use anyhow::Context as _;
use serde::Serialize;

use super::marker;
use super::plan::{FileSpec, Fragment, IfExists, Output, Plan};
use super::rustfmt::Rustfmt;
use super::templates::Templates;
use super::tree::Tree;
use crate::error::user_error;

/// What rendering found in the tree.
#[derive(Debug, Default)]
pub struct Report {
    /// Files of policy `IfExists::Error` that exist with other content; left as they were.
    pub conflicts: Vec<String>,
    /// Files of policy `IfExists::Overwrite` that existed with other content, now replaced.
    pub overwritten: Vec<String>,
    /// Files of `overwritten` its user had edited, whose edits the command merged into the
    /// new content, with the digest of that new content as rendered (the tool's part).
    pub merged: Vec<(String, String)>,
    /// Files moved (`from`, `to`).
    pub moved: Vec<(String, String)>,
}

/// Renders every file and insert of `plan` with `context` onto `tree`; Rust sources go through
/// `rustfmt` (`Rustfmt::none()` for templates already in rustfmt's layout).
pub fn render(
    plan: &Plan,
    templates: &Templates,
    context: &impl Serialize,
    tree: &mut Tree,
    rustfmt: &Rustfmt,
) -> anyhow::Result<Report> {
    let mut report = Report::default();
    for spec in &plan.files {
        let existing = tree.read(&spec.dest)?.map(str::to_string);
        let content = render_file(spec, templates, context, rustfmt)?;
        match (spec.output, &existing) {
            (
                Output::YamlMerged { header, merge } | Output::YamlPatched { header, merge },
                Some(existing),
            ) => {
                let merged = merged(existing, &content, header, merge, &spec.dest)?;
                if merged != *existing {
                    tree.write(&spec.dest, merged)?;
                }
                continue;
            }
            (Output::YamlPatched { .. }, None) => continue,
            _ => {}
        }
        place(
            tree,
            &mut report,
            &spec.dest,
            existing,
            content,
            spec.if_exists,
        )?;
    }
    for derived in &plan.derived {
        let existing = tree.read(&derived.dest)?.map(str::to_string);
        let content = derived.content.clone();
        place(
            tree,
            &mut report,
            &derived.dest,
            existing,
            content,
            derived.if_exists,
        )?;
    }
    for (from, to) in &plan.moved {
        let Some(content) = tree.read(from)?.map(str::to_string) else {
            continue;
        };
        if tree.read(to)?.is_some() {
            report.conflicts.push(to.clone());
            continue;
        }
        tree.remove(from)?;
        tree.write(to, content)?;
        report.moved.push((from.clone(), to.clone()));
    }
    insert_all(plan, templates, context, tree, rustfmt)?;
    for path in &plan.removed {
        if tree.read(path)?.is_some() {
            tree.remove(path)?;
        }
    }
    for computed in &plan.computed {
        tree.write(&computed.dest, computed.content.clone())?;
    }
    Ok(report)
}

/// Makes the inserts of `plan` into their files in `tree`.
fn insert_all(
    plan: &Plan,
    templates: &Templates,
    context: &impl Serialize,
    tree: &mut Tree,
    rustfmt: &Rustfmt,
) -> anyhow::Result<()> {
    // Rust files that got inserts, and whether rustfmt had left them as they were: those stay
    // formatted; a file formatted some other way by its user keeps its layout. (Only layouts
    // that format with rustfmt, 0.1's, pass a real one; for the others it changes nothing.)
    let mut inserted_rust: BTreeMap<String, bool> = BTreeMap::new();
    for insert in &plan.inserts {
        let Some(current) = tree.read(&insert.file)?.map(str::to_string) else {
            return Err(user_error(
                format!("`{}` is missing", insert.file),
                format!(
                    "restore `{}` (with its `{}` line) from version control",
                    insert.file,
                    marker::marker_line(&insert.file, &insert.marker)?
                ),
            ));
        };
        let fragment = match &insert.fragment {
            Fragment::Text(text) => text.clone(),
            Fragment::Template { template, vars } => {
                let text = templates.render_with(template, context, vars)?;
                text.strip_suffix('\n').unwrap_or(&text).to_string()
            }
        };
        let updated = marker::insert(&current, &insert.file, &insert.marker, &fragment)?;
        if updated == current {
            continue;
        }
        if insert.file.ends_with(".rs") && !inserted_rust.contains_key(&insert.file) {
            let formatted = rustfmt.format(&current, &insert.file)? == current;
            inserted_rust.insert(insert.file.clone(), formatted);
        }
        tree.write(&insert.file, updated)?;
    }
    for (file, _) in inserted_rust.iter().filter(|(_, formatted)| **formatted) {
        let content = tree.read(file)?.unwrap_or_default().to_string();
        tree.write(file, rustfmt.format(&content, file)?)?;
    }
    Ok(())
}

/// One file's content: its template rendered, then formatted or converted as it asks.
/// Writes `content` to `dest`, which holds `existing`, as `if_exists` says, and reports a
/// file left in the way or replaced.
fn place(
    tree: &mut Tree,
    report: &mut Report,
    dest: &str,
    existing: Option<String>,
    content: String,
    if_exists: IfExists,
) -> anyhow::Result<()> {
    match (existing, if_exists) {
        (Some(existing), _) if existing == content => {}
        (None, _) => tree.write(dest, content)?,
        (Some(_), IfExists::Skip) => {}
        (Some(_), IfExists::Error) => report.conflicts.push(dest.to_string()),
        (Some(_), IfExists::Overwrite) => {
            report.overwritten.push(dest.to_string());
            tree.write(dest, content)?;
        }
    }
    Ok(())
}

fn render_file(
    spec: &FileSpec,
    templates: &Templates,
    context: &impl Serialize,
    rustfmt: &Rustfmt,
) -> anyhow::Result<String> {
    let content = match &spec.item {
        None => templates.render(&spec.template, context)?,
        Some(item) => {
            let mut value = serde_json::to_value(context)?;
            value["item"] = item.clone();
            templates.render(&spec.template, &value)?
        }
    };
    match spec.output {
        Output::Text if spec.dest.ends_with(".rs") => rustfmt.format(&content, &spec.dest),
        Output::Text => Ok(content),
        Output::YamlFromJson { header }
        | Output::YamlMerged { header, .. }
        | Output::YamlPatched { header, .. } => {
            let value: serde_json::Value = serde_json::from_str(&content)
                .with_context(|| format!("template {} does not render JSON", spec.template))?;
            let yaml = serde_saphyr::to_string(&value)
                .with_context(|| format!("cannot write `{}` as YAML", spec.dest))?;
            Ok(format!("{header}{yaml}"))
        }
    }
}

/// `existing` (YAML) with `rendered` (the template's YAML, after `header`) joined in by `merge`.
fn merged(
    existing: &str,
    rendered: &str,
    header: &str,
    merge: super::plan::Merge,
    dest: &str,
) -> anyhow::Result<String> {
    let parse = |text: &str| serde_saphyr::from_str::<serde_json::Value>(text);
    let current = parse(existing).map_err(|err| {
        user_error(
            format!("`{dest}` is not valid YAML: {err}"),
            format!("fix `{dest}`, or delete it and run `make manifests` afterwards"),
        )
    })?;
    let new = parse(rendered).with_context(|| format!("cannot read back `{dest}`"))?;
    let value = merge(current, new)?;
    let yaml = serde_saphyr::to_string(&value)
        .with_context(|| format!("cannot write `{dest}` as YAML"))?;
    Ok(format!("{header}{yaml}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Names {
        project_name: &'static str,
        runtime: crate::scaffold::templates::RuntimeSource,
    }

    #[test]
    fn a_file_in_the_way_is_reported_not_replaced_and_skips_keep_the_users_file() {
        let templates = Templates::load().unwrap();
        let mut tree = Tree::empty();
        tree.write("Dockerfile", "mine\n".into()).unwrap();
        tree.write(".dockerignore", "mine too\n".into()).unwrap();
        let mut plan = Plan::default();
        plan.file("base/init/Dockerfile.tera", "Dockerfile", IfExists::Error);
        plan.file(
            "base/init/dockerignore.tera",
            ".dockerignore",
            IfExists::Skip,
        );
        let context = Names {
            project_name: "guestbook",
            runtime: templates.runtime(),
        };
        let report = render(&plan, &templates, &context, &mut tree, &Rustfmt::none()).unwrap();
        assert_eq!(report.conflicts, ["Dockerfile"]);
        assert_eq!(tree.read("Dockerfile").unwrap(), Some("mine\n"));
        assert_eq!(tree.read(".dockerignore").unwrap(), Some("mine too\n"));
    }
}
