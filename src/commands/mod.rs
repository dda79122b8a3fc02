//! One module per command: arguments -> validated inputs -> the plugins' plan -> the scaffold
//! engine. `finish` applies the policy every command shares to what was rendered.

use std::path::Path;

use crate::cli::{AlphaCommand, Cli, Command, CreateCommand};
use crate::error::user_error;
use crate::model::project::{self, Project};
use crate::scaffold::apply::{self, Action};
use crate::scaffold::render::Report;
use crate::scaffold::tree::Tree;
use crate::ui;

pub mod alpha_generate;
pub mod completion;
pub mod create_api;
pub mod create_webhook;
pub mod edit;
pub mod init;
pub mod upgrade;
pub mod version;

/// Runs the parsed command in the current directory.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    match cli.command {
        Command::Init(args) => init::run(&root, args),
        Command::Create(CreateCommand::Api(args)) => create_api::run(&root, *args),
        Command::Create(CreateCommand::Webhook(args)) => create_webhook::run(&root, args),
        Command::Edit(args) => edit::run(&root, args),
        Command::Alpha(AlphaCommand::Generate(args)) => alpha_generate::run(&root, args),
        Command::Upgrade(args) | Command::Alpha(AlphaCommand::Update(args)) => {
            upgrade::run(&root, args)
        }
        Command::Version => version::run(),
        Command::Completion { shell } => completion::run(shell),
    }
}

/// How a command wants its rendered tree finished.
struct Finish<'a> {
    /// Replace files their user edited too (with `--force`).
    overwrite_edited: bool,
    /// Merge a file its user edited with its new content (three-way, the base from a replay of
    /// PROJECT), instead of refusing it, when the merge is clean: `Some` of the `help:` line
    /// for a file whose merge is not.
    merge_edited: Option<&'a str>,
    /// Print what would change; write nothing.
    dry_run: bool,
    /// The `help:` line when files are in the way.
    conflict_help: &'a str,
}

/// Refuses files in the way and edited files `report` names, records the digest of every file
/// the command generated in `project`, adds PROJECT to `tree`, and writes it all or nothing
/// (or, in a dry run, prints one line and a diff per file).
fn finish(
    root: &Path,
    mut tree: Tree,
    report: &Report,
    mut project: Project,
    how: &Finish<'_>,
) -> anyhow::Result<()> {
    if !report.conflicts.is_empty() {
        return Err(user_error(
            format!(
                "{} would be overwritten; nothing was written",
                quoted(&report.conflicts)
            ),
            how.conflict_help,
        ));
    }
    let edited: Vec<String> = report
        .overwritten
        .iter()
        .filter(|path| !unedited(&project, &tree, path))
        .cloned()
        .collect();
    if !edited.is_empty() && !how.overwrite_edited {
        // A command that merges edits is left with those it could not merge.
        let (why, help) = match how.merge_edited {
            Some(help) => (
                "your edits there change the lines the command changes",
                help,
            ),
            None => (
                "`--force` keeps your edits",
                "add `--overwrite-edited` to replace them too (your changes there are lost), or move them away first",
            ),
        };
        return Err(user_error(
            format!(
                "{} changed since kube-scaffold wrote them, and {why}; nothing was written",
                quoted(&edited)
            ),
            help,
        ));
    }
    record_digests(&mut project, &tree, report);
    tree.write(project::FILE, project.to_toml())?;

    let changes = apply::changes(&tree);
    if how.dry_run {
        for change in &changes {
            ui::status(change.action.label(), &change.path);
            if let (Some(original), Action::Update) = (&change.original, change.action) {
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

/// Records in `project` the digest of every file of `tree` the command generated whole, as
/// `report` tells, and forgets those it deleted.
fn record_digests(project: &mut Project, tree: &Tree, report: &Report) {
    // A file is recorded as generated when the tool wrote all of it: new, replaced, or
    // unedited before an insert. One the user had edited stays unrecorded as it was.
    // A moved file stays the tool's if it was (its digest moves with it), else the user's.
    let moved_edited = |path: &str| {
        report
            .moved
            .iter()
            .any(|(from, to)| to == path && !unedited(project, tree, from))
    };
    let mut digests = Vec::new();
    for (path, content) in tree.files() {
        let changed = tree.original(path) != Some(content);
        let ours = (unedited(project, tree, path) && !moved_edited(path))
            || report.overwritten.iter().any(|p| p == path);
        if changed && ours {
            digests.push((path.to_string(), apply::digest(content)));
        }
    }
    project.generated.extend(digests);
    // A merged file: the tool's part is what it rendered, the rest is the user's.
    for (path, digest) in &report.merged {
        project.generated.insert(path.clone(), digest.clone());
    }
    // A file the command deleted is no longer the tool's.
    let deleted: Vec<String> = tree
        .entries()
        .filter(|(_, content)| content.is_none())
        .map(|(path, _)| path.to_string())
        .collect();
    for path in deleted {
        project.generated.remove(&path);
    }
}

/// Whether the file at `path` was, before the command, as the tool last wrote it (or absent).
fn unedited(project: &Project, tree: &Tree, path: &str) -> bool {
    match tree.original(path) {
        None => true,
        Some(before) => project.generated.get(path) == Some(&apply::digest(before)),
    }
}

/// Renders `command` onto `tree` (the project as it is) with the project's plugins, records it
/// in `project` and finishes (`finish`); then, unless in a dry run, says what to do `next`.
fn scaffold(
    root: &Path,
    mut tree: Tree,
    mut project: Project,
    command: project::Command,
    how: &Finish<'_>,
    next: &str,
) -> anyhow::Result<()> {
    let plugins = crate::plugins::resolve(&project)?;
    let templates = crate::scaffold::templates::Templates::load()?;
    let (init, earlier) = (&project.init, &project.commands);
    let mut report =
        crate::plugins::command(&plugins, init, &command, earlier, &templates, &mut tree)?;
    if how.merge_edited.is_some() && !how.overwrite_edited {
        merge_edited(root, &project, &templates, &mut tree, &mut report)?;
    }
    if let Some(recorded) = command.to_record(&project.commands) {
        project.commands.push(recorded);
    }
    finish(root, tree, &report, project, how)?;
    if !how.dry_run {
        ui::say(next);
    }
    Ok(())
}

/// Merges into each file `report` says was overwritten and its user had edited, the user's
/// edits: base, what the tool last wrote there (a replay of `project`, onto the files its
/// plugins recorded in `root`; checked against the digest PROJECT recorded); theirs, what was
/// rendered now. A clean merge replaces the rendered content and leaves `overwritten`; a
/// conflict, or a base that cannot be reproduced, leaves the file for `finish` to refuse.
fn merge_edited(
    root: &Path,
    project: &Project,
    templates: &crate::scaffold::templates::Templates,
    tree: &mut Tree,
    report: &mut Report,
) -> anyhow::Result<()> {
    let edited: Vec<String> = report
        .overwritten
        .iter()
        .filter(|path| {
            let original = tree.original(path).map(apply::digest);
            project.generated.get(*path) != original.as_ref()
        })
        .cloned()
        .collect();
    if edited.is_empty() {
        return Ok(());
    }
    let recorded = crate::plugins::recorded(project, root)?;
    let mut replayed = crate::plugins::replay_onto(project, templates, recorded)?;
    for path in edited {
        let Some(base) = replayed.read(&path)?.map(str::to_string) else {
            continue;
        };
        if project.generated.get(&path) != Some(&apply::digest(&base)) {
            continue;
        }
        let ours = tree.original(&path).unwrap_or_default().to_string();
        let theirs = tree.read(&path)?.unwrap_or_default().to_string();
        if let crate::scaffold::merge::Merged::Clean(merged) =
            crate::scaffold::merge::merge3(&base, &ours, &theirs)
        {
            tree.write(&path, merged)?;
            report.overwritten.retain(|p| *p != path);
            report.merged.push((path, apply::digest(&theirs)));
        }
    }
    Ok(())
}

fn quoted(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A unified diff of one file, with three lines of context.
pub(crate) fn unified_diff(old: &str, new: &str, path: &str) -> String {
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
    use crate::codegen::kind_types::KindTypes;
    use crate::model::api::{ApiInputs, ApiKind};
    use crate::model::project::{Command as Step, InitInputs, License};
    use crate::plugins::{self, ApiContext, ApiPlan, BUNDLE, Earlier, InitContext, kustomize};
    use crate::scaffold::marker;
    use crate::scaffold::plan::{Fragment, Plan};
    use crate::scaffold::templates::Templates;

    fn init_inputs() -> InitInputs {
        InitInputs {
            domain: "mock.com".into(),
            project_name: "guestbook".into(),
            repo: Some("github.com/me/guestbook".into()),
            owner: Some("The Authors".into()),
            license: License::Apache2,
            license_year: 2026,
        }
    }

    fn api_inputs(namespaced: bool) -> ApiInputs {
        let mut api = ApiInputs::own("web-app", "v1", "HTTPRoute");
        (api.namespaced, api.finalizer) = (namespaced, namespaced);
        api
    }

    #[test]
    fn every_template_is_used_by_exactly_one_spec_and_renders() {
        let templates = Templates::load().unwrap();
        let mut used = uses(&templates);
        let twice: Vec<_> = used.iter().filter(|(_, n)| **n > 1).collect();
        assert!(
            twice.is_empty(),
            "templates used by several specs: {twice:?}"
        );
        for plan in crate::layouts::v1::plans() {
            for spec in &plan.files {
                *used.entry(spec.template.clone()).or_default() += 1;
            }
        }
        let all = crate::scaffold::templates::names();
        // A partial is used through the templates that include or extend it.
        for name in &all {
            let text = crate::scaffold::templates::source(name).unwrap();
            for partial in crate::scaffold::templates::dependencies(text) {
                assert!(all.contains(&partial), "{name} names {partial}");
                used.entry(partial).or_default();
            }
        }
        // 0.2's templates, frozen, are all rendered by the test of its projects byte for byte
        // (`layouts::v2`).
        let unused: Vec<_> = all
            .iter()
            .filter(|t| !t.starts_with("v2/") && !used.contains_key(*t))
            .collect();
        assert!(unused.is_empty(), "templates no spec uses: {unused:?}");
    }

    /// What the planner and the templates of `create api` see for `api` in a new project.
    fn api_context(api: &ApiInputs) -> (ApiPlan, ApiContext) {
        let types = KindTypes::generate(api).unwrap();
        let before = Earlier::read(api, &[]);
        let c = ApiContext::new(&init_inputs(), api, &types, String::new(), &before).unwrap();
        (ApiPlan::new(api, &c, types, Vec::new(), &before), c)
    }

    /// What `plugins` plan for `create api` with `context`, in a new project.
    fn api_plan(plugins: &[&dyn plugins::Plugin], (p, c): &(ApiPlan, ApiContext)) -> Plan {
        let mut plan = Plan::default();
        for plugin in plugins {
            let mut tree = Tree::empty();
            plugin.create_api(&mut plan, p, c, &mut tree).unwrap();
        }
        plan
    }

    /// The least `make build-installer` writes: the manager's Namespace and Deployment.
    const SAMPLE_INSTALLER: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: guestbook-system\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: guestbook-controller-manager\n  namespace: guestbook-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: controller:v1\n";

    /// The templates a layout's commands render (each rendered), by their embedded name, with
    /// how many specs use each. Long: one context of each command, side by side, so that a
    /// template no command renders shows.
    fn uses(templates: &Templates) -> BTreeMap<String, usize> {
        let mut used: BTreeMap<String, usize> = BTreeMap::new();
        let init = InitContext::new(&init_inputs(), templates).unwrap();
        let mut plan = Plan::default();
        for plugin in BUNDLE {
            plugin.init(&mut plan, &init);
        }
        // The plugins of the whole project.
        {
            // A project that has run `make build-installer`, for helm's chart, and lists a
            // metric of its own, for grafana's custom dashboard.
            let mut built = Tree::empty();
            built
                .write(plugins::helm::MANIFESTS, SAMPLE_INSTALLER.into())
                .unwrap();
            let metrics =
                "customMetrics:\n  - metric: guestbook_widgets_total\n    type: counter\n";
            built
                .write("grafana/custom-metrics/config.yaml", metrics.into())
                .unwrap();
            for plugin in plugins::known() {
                plugin.enable(&mut plan, &init, &mut built).unwrap();
            }
        }
        for spec in &plan.files {
            *used.entry(templates.resolve(&spec.template)).or_default() += 1;
            let mut context = serde_json::to_value(&init).unwrap();
            if let Some(item) = &spec.item {
                context["item"] = item.clone();
            }
            let text = templates.render(&spec.template, &context).unwrap();
            assert!(!text.trim().is_empty(), "{} renders empty", spec.template);
        }
        // `edit --sharding` in a project without webhooks: the manager's budget.
        {
            let mut tree = Tree::empty();
            let kustomization = "resources:\n- manager.yaml\n";
            tree.write("config/manager/kustomization.yaml", kustomization.into())
                .unwrap();
            let edit = crate::model::project::EditInputs {
                sharding: Some(true),
                ..Default::default()
            };
            let mut plan = Plan::default();
            let kustomize = &kustomize::Kustomize as &dyn plugins::Plugin;
            kustomize.edit(&mut plan, &init, &edit, &mut tree).unwrap();
            let budgets = plan
                .files
                .iter()
                .filter(|s| s.dest == "config/manager/pdb.yaml");
            for spec in budgets {
                *used.entry(templates.resolve(&spec.template)).or_default() += 1;
                let context = serde_json::to_value(&init).unwrap();
                let text = templates.render(&spec.template, &context).unwrap();
                assert!(text.contains("maxUnavailable: 1\n"), "{text}");
            }
        }
        for namespaced in [true, false] {
            let inputs = api_inputs(namespaced);
            let context = api_context(&inputs);
            for spec in &api_plan(BUNDLE, &context).files {
                if namespaced {
                    *used.entry(templates.resolve(&spec.template)).or_default() += 1;
                }
                let text = templates.render(&spec.template, &context.1).unwrap();
                assert!(
                    !text.contains("{{ ") && !text.contains("{%"),
                    "{} left a placeholder",
                    spec.template
                );
            }
        }
        let mut deployment = api_inputs(true);
        (deployment.group, deployment.kind) = ("apps".into(), "Deployment".into());
        deployment.api = ApiKind::Builtin;
        let context = api_context(&deployment);
        let plan = api_plan(BUNDLE, &context);
        for spec in plan
            .files
            .iter()
            .filter(|s| s.template.ends_with("builtin.rs.tera"))
        {
            *used.entry(templates.resolve(&spec.template)).or_default() += 1;
            let text = templates.render(&spec.template, &context.1).unwrap();
            assert!(text.contains("Deployment as Object"), "{text}");
        }
        let mut memcached = api_inputs(true);
        memcached.owns = vec!["apps/v1/Deployment".into()];
        memcached.deploy_image = Some(crate::model::api::DeployImage {
            image: "memcached:1.6.26-alpine3.19".into(),
            container_command: Some("memcached,-v".into()),
            container_port: Some(11211),
            run_as_user: Some(1001),
        });
        let context = api_context(&memcached);
        let deploy_image = &plugins::deploy_image::DeployImage as &dyn plugins::Plugin;
        let all: Vec<_> = BUNDLE.iter().copied().chain([deploy_image]).collect();
        let plan = api_plan(&all, &context);
        let ours = plan
            .files
            .iter()
            .filter(|s| s.template.starts_with("deploy-image/"));
        for spec in ours {
            *used.entry(templates.resolve(&spec.template)).or_default() += 1;
            let text = templates.render(&spec.template, &context.1).unwrap();
            assert!(text.contains("11211"), "{}: {text}", spec.template);
        }
        // Every kind of webhook, for a kind of the project with two versions.
        let mut v2 = api_inputs(true);
        v2.version = "v2".into();
        v2.controller = false;
        let earlier = [Step::CreateApi(api_inputs(true)), Step::CreateApi(v2)];
        let webhook = crate::model::project::WebhookInputs {
            group: "web-app".into(),
            version: "v1".into(),
            kind: "HTTPRoute".into(),
            defaulting: true,
            validation: true,
            conversion: true,
            spoke: vec!["v2".into()],
            self_signed: false,
            force: false,
        };
        let mut tree = crate::scaffold::tree::Tree::empty();
        plugins::init(BUNDLE, &init_inputs(), templates, &mut tree).unwrap();
        for (i, step) in earlier.iter().enumerate() {
            let before = &earlier[..i];
            plugins::command(BUNDLE, &init_inputs(), step, before, templates, &mut tree).unwrap();
        }
        let mut context_of = |webhook: &crate::model::project::WebhookInputs| {
            let init = init_inputs();
            plugins::WebhookContext::new(&init, webhook, String::new(), &earlier, &mut tree)
                .unwrap()
        };
        let context = context_of(&webhook);
        let mut plan = Plan::default();
        for plugin in BUNDLE {
            plugin.create_webhook(&mut plan, &context).unwrap();
        }
        for spec in &plan.files {
            *used.entry(templates.resolve(&spec.template)).or_default() += 1;
            let mut context = serde_json::to_value(&context).unwrap();
            context["item"] = spec.item.clone().unwrap_or_default();
            let text = templates.render(&spec.template, &context).unwrap();
            assert!(!text.contains("{{ ") && !text.contains("{%"), "{text}");
        }
        fragments(&plan, templates, &context, &mut used);
        // The hooks of the other kinds of API, whole templates of their own.
        let others = plugins::Variant::ALL
            .into_iter()
            .filter(|v| *v != context.variant);
        for variant in others {
            for hook in ["defaulter", "validator"] {
                let template = variant.template(hook);
                *used.entry(templates.resolve(&template)).or_default() += 1;
                let text = templates.render(&template, &context).unwrap();
                assert!(!text.contains("{{ ") && !text.contains("{%"), "{text}");
            }
        }
        // The other certificate mode: its own files (those of both modes are counted once).
        let self_signed = context_of(&crate::model::project::WebhookInputs {
            self_signed: true,
            ..webhook.clone()
        });
        let mut plan = Plan::default();
        kustomize::plan_webhook(&mut plan, &self_signed);
        let both: Vec<&str> = plan.files.iter().map(|s| s.template.as_str()).collect();
        let new: Vec<_> = plan
            .files
            .iter()
            .filter(|s| !used.contains_key(&templates.resolve(&s.template)))
            .collect();
        for spec in new {
            *used.entry(templates.resolve(&spec.template)).or_default() += 1;
            let text = templates.render(&spec.template, &self_signed).unwrap();
            assert!(!text.contains("{{ ") && !text.contains("{%"), "{text}");
        }
        assert!(both.contains(&"kustomize/webhook/config/webhookcerts/cluster_role.yaml.tera"));
        let mut own = BTreeMap::new();
        fragments(&plan, templates, &self_signed, &mut own);
        for (fragment, count) in own {
            used.entry(fragment).or_insert(count);
        }
        // `edit --multigroup`: the groups' modules of controllers and of hooks.
        {
            let mut init = InitContext::new(&init_inputs(), templates).unwrap();
            let all = [&earlier[..], &[Step::CreateWebhook(webhook.clone())]].concat();
            init.moves = Some(plugins::multigroup::Moves::of(&all));
            let edit = crate::model::project::EditInputs {
                multigroup: true,
                ..Default::default()
            };
            let mut plan = Plan::default();
            for plugin in BUNDLE {
                plugin.edit(&mut plan, &init, &edit, &mut tree).unwrap();
            }
            for spec in plan
                .files
                .iter()
                .filter(|s| s.template.ends_with("group.rs.tera"))
            {
                *used.entry(templates.resolve(&spec.template)).or_default() += 1;
                let mut context = serde_json::to_value(&init).unwrap();
                context["item"] = spec.item.clone().unwrap_or_default();
                let text = templates.render(&spec.template, &context).unwrap();
                assert!(text.contains("API group `web-app`"), "{text}");
            }
        }
        used
    }

    /// Counts each fragment template of `plan` once (a fragment may go in above several
    /// markers), each rendered with its variables.
    fn fragments(
        plan: &Plan,
        templates: &Templates,
        context: &impl serde::Serialize,
        used: &mut BTreeMap<String, usize>,
    ) {
        let mut seen = std::collections::BTreeSet::new();
        for insert in &plan.inserts {
            if let Fragment::Template { template, vars } = &insert.fragment {
                let text = templates.render_with(template, context, vars).unwrap();
                assert!(!text.contains("{{ ") && !text.contains("{%"), "{text}");
                if seen.insert(templates.resolve(template)) {
                    *used.entry(templates.resolve(template)).or_default() += 1;
                }
            }
        }
    }

    /// Markers are declared once, as constants, in the descriptor of the file that holds them:
    /// each names that file and stands in it as the plugins write it (in a project with a kind
    /// and a webhook, of either certificate mode).
    #[test]
    fn every_declared_marker_stands_in_its_file() {
        let templates = Templates::load().unwrap();
        let mut trees: Vec<Tree> = [false, true]
            .map(|self_signed| {
                let mut project = Project::new(init_inputs(), plugins::bundle_keys());
                project.commands.push(Step::CreateApi(api_inputs(true)));
                let webhook = crate::model::project::WebhookInputs {
                    group: "web-app".into(),
                    version: "v1".into(),
                    kind: "HTTPRoute".into(),
                    defaulting: true,
                    validation: false,
                    conversion: false,
                    spoke: Vec::new(),
                    self_signed,
                    force: false,
                };
                project.commands.push(Step::CreateWebhook(webhook));
                plugins::replay(&project, &templates).unwrap()
            })
            .into();
        let mut declared = 0;
        for plugin in plugins::known() {
            for d in plugin.descriptors().iter().copied().flatten() {
                for m in d.markers {
                    assert_eq!(m.file, d.dest, "`{}` is declared in {}", m.name, d.dest);
                    let line = marker::marker_line(m.file, m.name).unwrap();
                    let text = trees
                        .iter_mut()
                        .find_map(|t| t.read(d.dest).unwrap().map(str::to_string));
                    let text = text.unwrap_or_else(|| panic!("no {} was written", d.dest));
                    assert!(
                        text.lines().any(|l| l.trim() == line),
                        "{} lacks `{line}`",
                        m.file
                    );
                    declared += 1;
                }
            }
        }
        assert_eq!(declared, 21, "markers declared in descriptors");
    }

    #[test]
    fn a_replay_is_the_same_whatever_the_disk_holds() {
        let templates = Templates::load().unwrap();
        let mut project = Project::new(init_inputs(), plugins::bundle_keys());
        project.commands.push(Step::CreateApi(api_inputs(true)));
        project.commands.push(Step::CreateApi(api_inputs(false)));
        let first = plugins::replay(&project, &templates).unwrap();
        let second = plugins::replay(&project, &templates).unwrap();
        let files = |t: &Tree| {
            t.files()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(files(&first), files(&second));
        assert!(
            files(&first)
                .iter()
                .any(|(p, _)| p == "src/controller/http_route.rs")
        );
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
