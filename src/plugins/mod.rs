//! What gets generated. Each plugin adds files and inserts to a command's plan; the default
//! bundle is `base` (the Rust crate, Makefile, Dockerfile, workflows) plus `kustomize` (the
//! `config/` tree), as kubebuilder's `go/v4` is `base.go/v4` plus `kustomize/v2`. Later plugins
//! (deploy-image, webhooks, helm) go here beside them, and into `BUNDLE` or `--plugins`.
//!
//! `replay` renders a whole project from its PROJECT alone, in memory.

use serde::Serialize;

use crate::model::names;
use crate::model::project::{ApiInputs, Command, InitInputs, License, Project};
use crate::model::versions::{VERSIONS, Versions};
use crate::scaffold::plan::Plan;
use crate::scaffold::render::{self, Report};
use crate::scaffold::rustfmt::{Rustfmt, str_const};
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;

pub mod base;
pub mod kustomize;
pub mod v1;

/// A plugin: what it adds to the plan of each command.
pub trait Plugin {
    /// Its key, as PROJECT and `--plugins` name it.
    fn key(&self) -> &'static str;
    /// `init`'s files and inserts.
    fn init(&self, plan: &mut Plan, c: &InitContext);
    /// `create api`'s files and inserts; `tree` holds the project as it is.
    fn create_api(&self, plan: &mut Plan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()>;
}

/// The plugins every project is scaffolded with.
pub const BUNDLE: &[&dyn Plugin] = &[&base::Base, &kustomize::Kustomize];

/// Every plugin this kube-scaffold has, by which PROJECT's keys are found.
const KNOWN: &[&dyn Plugin] = BUNDLE;

/// The keys of `BUNDLE`, as a new PROJECT records them.
pub fn bundle_keys() -> Vec<String> {
    BUNDLE.iter().map(|p| p.key().to_string()).collect()
}

/// The plugins PROJECT names; an unknown key is an error that names the release to use.
pub fn resolve(project: &Project) -> anyhow::Result<Vec<&'static dyn Plugin>> {
    project
        .plugins
        .iter()
        .map(|key| {
            KNOWN.iter().copied().find(|p| p.key() == key).ok_or_else(|| {
                crate::error::user_error(
                    format!("PROJECT names the plugin `{key}`, which this kube-scaffold does not have"),
                    format!("use kube-scaffold {} or newer, which wrote it", project.cli_version),
                )
            })
        })
        .collect()
}

/// Everything the `init` templates see, computed from `init`'s inputs.
#[derive(Serialize)]
pub struct InitContext {
    pub project_name: String,
    pub crate_name: String,
    pub domain: String,
    pub owner: Option<String>,
    /// The repository URL for Cargo.toml, or empty.
    pub repository: String,
    pub year: i64,
    /// The license header for Rust sources, ending in a blank line, or empty.
    pub header: String,
    /// Whether `hack/boilerplate.rs.txt` is written.
    #[serde(skip)]
    pub license: bool,
    pub versions: Versions,
}

/// Everything the `api` templates see, computed from `create api`'s inputs and the project.
#[derive(Serialize)]
pub struct ApiContext {
    pub project_name: String,
    pub crate_name: String,
    pub domain: String,
    pub header: String,
    pub group: String,
    /// The group's Rust module name (`my-app` -> `my_app`).
    pub group_module: String,
    pub qualified_group: String,
    pub version: String,
    pub kind: String,
    /// The kind's Rust module name (`HTTPRoute` -> `http_route`).
    pub kind_module: String,
    pub kind_lower: String,
    pub plural: String,
    pub namespaced: bool,
    /// The controller puts a finalizer on its objects and cleans up before they go.
    pub finalizer: bool,
    /// The alias controllers import the group-version under, kubebuilder style (`webappv1`).
    pub api_alias: String,
    pub sample_file: String,
    /// The sample object's name: `<kind>-sample`, the kind cut short to fit a DNS label.
    pub sample_name: String,
    /// String constants, laid out as rustfmt would for their length.
    pub group_const: String,
    pub finalizer_const: String,
    pub field_manager_const: String,
    /// Which parts `create api` scaffolds.
    #[serde(skip)]
    pub resource: bool,
    #[serde(skip)]
    pub controller: bool,
    /// `--force`: the kind's own files replace existing ones.
    #[serde(skip)]
    pub force: bool,
}

impl InitContext {
    /// The context of `init`, its license header rendered.
    pub fn new(init: &InitInputs, templates: &Templates) -> anyhow::Result<Self> {
        let repository = match &init.repo {
            Some(repo) => crate::model::gvk::repository(repo)?,
            None => String::new(),
        };
        let mut context = Self {
            project_name: init.project_name.clone(),
            crate_name: names::crate_name(&init.project_name),
            domain: init.domain.clone(),
            owner: init.owner.clone(),
            repository,
            year: init.license_year,
            header: String::new(),
            license: init.license == License::Apache2,
            versions: VERSIONS,
        };
        if context.license {
            let boilerplate = templates.render(base::BOILERPLATE_TEMPLATE, &context)?;
            context.header = format!("{boilerplate}\n");
        }
        Ok(context)
    }
}

impl ApiContext {
    /// Every name the templates need, derived from validated inputs.
    pub fn new(init: &InitInputs, api: &ApiInputs, header: String) -> Self {
        let group_module = names::crate_name(&api.group);
        let kind_lower = api.kind.to_lowercase();
        let qualified_group = format!("{}.{}", api.group, init.domain);
        Self {
            group_const: str_const("pub const GROUP: &str", &qualified_group),
            finalizer_const: str_const(
                "pub const FINALIZER: &str",
                &format!("{qualified_group}/finalizer"),
            ),
            field_manager_const: str_const(
                "pub const FIELD_MANAGER: &str",
                &format!("{kind_lower}-controller"),
            ),
            project_name: init.project_name.clone(),
            crate_name: names::crate_name(&init.project_name),
            domain: init.domain.clone(),
            header,
            qualified_group,
            api_alias: format!("{group_module}{}", api.version),
            group_module,
            kind_module: names::snake(&api.kind),
            sample_file: format!("{}_{}_{kind_lower}.yaml", api.group, api.version),
            sample_name: format!("{}-sample", &kind_lower[..kind_lower.len().min(56)]),
            kind_lower,
            group: api.group.clone(),
            version: api.version.clone(),
            kind: api.kind.clone(),
            plural: api.plural.clone(),
            namespaced: api.namespaced,
            finalizer: api.controller && api.finalizer,
            resource: api.resource,
            controller: api.controller,
            force: api.force,
        }
    }
}

/// Renders `init` onto `tree`. The templates are written in rustfmt's layout for names of any
/// length (a test checks it against rustfmt), so nothing is formatted: the output does not
/// depend on the user's rustfmt, and no process is started.
pub fn init(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let context = InitContext::new(init, templates)?;
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.init(&mut plan, &context);
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// Renders `create api` onto `tree`, which holds the project as it is (formatted as `init`).
pub fn create_api(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    api: &ApiInputs,
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let header = base::read_header(tree)?;
    let context = ApiContext::new(init, api, header);
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.create_api(&mut plan, &context, tree)?;
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// The whole project as the templates of its own layout render it (the current one, or
/// kube-scaffold 0.1's), from its PROJECT alone.
pub fn replay_layout(
    project: &Project,
    templates: &Templates,
    rustfmt: &Rustfmt,
) -> anyhow::Result<Tree> {
    match project.layout.as_str() {
        crate::model::project::LAYOUT => replay(project, templates),
        v1::LAYOUT => v1::replay(project, templates, rustfmt),
        other => Err(crate::error::user_error(
            format!("PROJECT names the layout `{other}`, which this kube-scaffold does not know"),
            format!(
                "use the kube-scaffold release {} that wrote it",
                project.cli_version
            ),
        )),
    }
}

/// The whole project, rendered from its PROJECT alone: `init`, then every command in order.
/// Nothing is read from disk.
pub fn replay(project: &Project, templates: &Templates) -> anyhow::Result<Tree> {
    let plugins = resolve(project)?;
    let mut tree = Tree::empty();
    init(&plugins, &project.init, templates, &mut tree)?;
    for command in &project.commands {
        match command {
            Command::CreateApi(api) => {
                create_api(&plugins, &project.init, api, templates, &mut tree)?;
            }
        }
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use std::process::Command as Process;

    use super::*;

    fn project(name: &str, domain: &str, kinds: &[(&str, &str, &str, bool, bool)]) -> Project {
        let mut project = Project::new(
            InitInputs {
                domain: domain.into(),
                project_name: name.into(),
                repo: None,
                owner: Some(
                    "The Very Long Name Of The Authors Of This Operator, Incorporated".into(),
                ),
                license: License::Apache2,
                license_year: 2026,
            },
            bundle_keys(),
        );
        for (group, version, kind, namespaced, finalizer) in kinds {
            project.commands.push(Command::CreateApi(ApiInputs {
                group: group.to_string(),
                version: version.to_string(),
                kind: kind.to_string(),
                plural: format!("{}s", kind.to_lowercase()),
                namespaced: *namespaced,
                resource: true,
                controller: true,
                finalizer: *finalizer,
                force: false,
            }));
        }
        project
    }

    /// The generated Rust is what `cargo fmt` makes of it, for the shortest and the longest
    /// names the validators accept, without running rustfmt: the output does not depend on
    /// the user's rustfmt. (This test runs rustfmt, to compare.)
    #[test]
    fn generated_rust_is_formatted_for_any_name_length() {
        let long_kind = "MutatingWebhookConfigurationForTheVeryLongKindWithManyWordsInIt";
        let long_group = "infrastructure-automation-and-many-more-words-to-make-it-longer";
        let projects = [
            project(
                "a",
                "a.io",
                &[("a", "v1", "A", true, false), ("b", "v1", "B", false, true)],
            ),
            project(
                "guestbook",
                "mock.com",
                &[
                    ("webapp", "v1", "Guestbook", true, false),
                    ("webapp", "v1", "Config", false, true),
                ],
            ),
            project(
                "an-operator-project-name-that-is-as-long-as-a-dns-label-allows-x",
                "example.com",
                &[
                    (long_group, "v1beta1", long_kind, true, true),
                    (long_group, "v1beta1", &long_kind[..40], false, false),
                ],
            ),
        ];
        let templates = Templates::load().unwrap();
        for project in &projects {
            let tree = replay(project, &templates).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let mut files = Vec::new();
            for (path, content) in tree.files().filter(|(p, _)| p.ends_with(".rs")) {
                let file = dir.path().join(path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, content).unwrap();
                files.push((path.to_string(), file));
            }
            let status = Process::new("rustfmt")
                .args(["--edition", "2024"])
                .args(files.iter().map(|(_, f)| f))
                .current_dir(dir.path())
                .status()
                .expect("rustfmt runs (this test compares with it)");
            assert!(status.success());
            let mut unformatted = Vec::new();
            for (path, file) in &files {
                let formatted = std::fs::read_to_string(file).unwrap();
                let rendered = tree.files().find(|(p, _)| p == path).unwrap().1;
                if formatted != rendered {
                    unformatted.push(diff_of(path, rendered, &formatted));
                }
            }
            assert!(
                unformatted.is_empty(),
                "{}: not as rustfmt formats it:\n{}",
                project.init.project_name,
                unformatted.join("\n")
            );
        }
    }

    fn diff_of(path: &str, rendered: &str, formatted: &str) -> String {
        similar::TextDiff::from_lines(rendered, formatted)
            .unified_diff()
            .context_radius(1)
            .header(&format!("{path} (rendered)"), &format!("{path} (rustfmt)"))
            .to_string()
    }
}
