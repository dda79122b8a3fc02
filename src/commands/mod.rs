//! One module per command: arguments -> validated options -> a plan -> the scaffold engine.

use std::path::Path;

use serde::Serialize;

use crate::cli::{Cli, Command, CreateCommand};
use crate::model::project::{self, Project};
use crate::scaffold::apply::{self, Action, Options};
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::rustfmt::Rustfmt;
use crate::scaffold::templates::Templates;
use crate::ui;

pub mod completion;
pub mod create_api;
pub mod init;
pub mod version;

/// Runs the parsed command in the current directory.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    match cli.command {
        Command::Init(args) => init::run(&root, args),
        Command::Create(CreateCommand::Api(args)) => create_api::run(&root, args),
        Command::Version => version::run(),
        Command::Completion { shell } => completion::run(shell),
    }
}

/// How a command wants its plan carried out.
struct Execution<'a> {
    /// Overwrite the files `--force` may replace.
    force: bool,
    /// With `force`, overwrite files their user edited too.
    overwrite_edited: bool,
    /// Print what would change; write nothing.
    dry_run: bool,
    /// Record the digest of each file `--force` may replace, to tell user edits later.
    track_edits: bool,
    /// The `help:` line when files are in the way.
    conflict_help: &'a str,
}

/// Renders `plan` with `context` and the PROJECT record `project`, then writes it all or
/// nothing and prints one line per file (or, in a dry run, prints what would change).
fn execute(
    templates: &Templates,
    plan: &Plan,
    context: &impl Serialize,
    root: &Path,
    mut project: Project,
    how: &Execution<'_>,
) -> anyhow::Result<()> {
    let rustfmt = Rustfmt::detect();
    if !rustfmt.available() {
        ui::note(
            "rustfmt not found: the generated Rust is written unformatted; run `cargo fmt` once rustfmt is installed",
        );
    }
    let recorded = project.generated.clone();
    let options = Options {
        force: how.force,
        overwrite_edited: how.overwrite_edited,
        recorded: &recorded,
        conflict_help: how.conflict_help,
        rustfmt: &rustfmt,
    };
    let mut changes = apply::render(plan, templates, context, root, &options)?;
    if how.track_edits {
        for spec in plan.files.iter().filter(|s| s.if_exists == IfExists::Error) {
            if let Some(change) = changes.iter().find(|c| c.path == spec.dest) {
                project
                    .generated
                    .insert(spec.dest.clone(), apply::digest(&change.content));
            }
        }
    }
    changes.push(apply::replace(root, project::FILE, project.to_toml()?)?);

    if how.dry_run {
        for change in &changes {
            ui::status(change.action.label(), &change.path);
            if let (Some(original), Action::Overwrite | Action::Update) =
                (&change.original, change.action)
            {
                ui::diff(&unified_diff(original, &change.content, &change.path));
            }
        }
        ui::note("dry run: nothing was written");
        return Ok(());
    }
    apply::write(root, &changes)?;
    for change in &changes {
        ui::status(change.action.label(), &change.path);
    }
    Ok(())
}

/// A unified diff of one file, with three lines of context.
fn unified_diff(old: &str, new: &str, path: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// The year for license headers: from `SOURCE_DATE_EPOCH` when set (reproducible output),
/// else from the clock.
fn current_year() -> i64 {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    year_of_day(seconds.div_euclid(86_400))
}

/// The proleptic Gregorian year of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, hand-written to avoid a date crate for one number).
fn year_of_day(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::versions::VERSIONS;

    fn init_context() -> init::InitContext {
        init::InitContext {
            project_name: "guestbook".into(),
            crate_name: "guestbook".into(),
            domain: "mock.com".into(),
            owner: Some("The Authors".into()),
            repository: "https://github.com/me/guestbook".into(),
            year: 2026,
            header: "// header\n\n".into(),
            versions: VERSIONS,
        }
    }

    fn api_context(namespaced: bool) -> create_api::ApiContext {
        create_api::ApiContext {
            project_name: "guestbook".into(),
            crate_name: "guestbook".into(),
            domain: "mock.com".into(),
            header: String::new(),
            group: "web-app".into(),
            group_module: "web_app".into(),
            qualified_group: "web-app.mock.com".into(),
            version: "v1".into(),
            kind: "HTTPRoute".into(),
            kind_module: "http_route".into(),
            kind_lower: "httproute".into(),
            plural: "httproutes".into(),
            namespaced,
            finalizer: namespaced,
            api_alias: "web_appv1".into(),
            sample_file: "web-app_v1_httproute.yaml".into(),
            sample_name: "httproute-sample".into(),
        }
    }

    #[test]
    fn every_template_is_used_by_exactly_one_spec_and_renders() {
        let templates = Templates::load().unwrap();
        let mut used: BTreeMap<String, usize> = BTreeMap::new();
        for spec in &init::plan(true).files {
            *used.entry(spec.template.clone()).or_default() += 1;
            let text = templates.render(&spec.template, &init_context()).unwrap();
            assert!(!text.trim().is_empty(), "{} renders empty", spec.template);
        }
        for namespaced in [true, false] {
            let mut plan = Plan::default();
            create_api::plan_resource(&mut plan, &api_context(namespaced));
            create_api::plan_controller(&mut plan, &api_context(namespaced));
            for spec in &plan.files {
                if namespaced {
                    *used.entry(spec.template.clone()).or_default() += 1;
                }
                let text = templates
                    .render(&spec.template, &api_context(namespaced))
                    .unwrap();
                assert!(
                    !text.contains("{{ ") && !text.contains("{%"),
                    "{} left a placeholder",
                    spec.template
                );
            }
        }
        let all = crate::scaffold::templates::names();
        let unused: Vec<_> = all.iter().filter(|t| !used.contains_key(*t)).collect();
        assert!(unused.is_empty(), "templates no spec uses: {unused:?}");
        let twice: Vec<_> = used.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "templates used by several specs: {twice:?}"
        );
    }

    #[test]
    fn an_undefined_variable_is_an_error() {
        let templates = Templates::load().unwrap();
        let err = templates
            .render("api/src/api/kind.rs.tera", &init_context())
            .unwrap_err();
        assert!(format!("{err:#}").contains("kind"), "{err:#}");
    }

    #[test]
    fn years_of_days() {
        assert_eq!(year_of_day(0), 1970);
        assert_eq!(year_of_day(364), 1970);
        assert_eq!(year_of_day(365), 1971);
        assert_eq!(year_of_day(20_088), 2024); // 2024-12-31
        assert_eq!(year_of_day(20_089), 2025); // 2025-01-01
        assert_eq!(year_of_day(20_778), 2026); // 2026-11-21
    }
}
