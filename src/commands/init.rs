//! `kube-scaffold init`: lays out a new operator project in the current directory.

use std::path::Path;

use serde::Serialize;

use crate::cli::{InitArgs, License};
use crate::model::gvk;
use crate::model::names;
use crate::model::project::{self, Project};
use crate::model::versions::{VERSIONS, Versions};
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::templates::Templates;
use crate::ui::{self, user_error};

/// The files `init` writes: (template under `scaffolds/`, destination).
#[rustfmt::skip]
const FILES: &[(&str, &str)] = &[
    ("init/Cargo.toml.tera", "Cargo.toml"),
    ("init/Makefile.tera", "Makefile"),
    ("init/Dockerfile.tera", "Dockerfile"),
    ("init/dockerignore.tera", ".dockerignore"),
    ("init/gitignore.tera", ".gitignore"),
    ("init/README.md.tera", "README.md"),
    ("init/src/main.rs.tera", "src/main.rs"),
    ("init/src/lib.rs.tera", "src/lib.rs"),
    ("init/src/health.rs.tera", "src/health.rs"),
    ("init/src/leader.rs.tera", "src/leader.rs"),
    ("init/src/metrics.rs.tera", "src/metrics.rs"),
    ("init/src/server.rs.tera", "src/server.rs"),
    ("init/src/api/mod.rs.tera", "src/api/mod.rs"),
    ("init/src/api/conditions.rs.tera", "src/api/conditions.rs"),
    ("init/src/controller/mod.rs.tera", "src/controller/mod.rs"),
    ("init/src/controller/conditions.rs.tera", "src/controller/conditions.rs"),
    ("init/src/bin/crdgen.rs.tera", "src/bin/crdgen.rs"),
    ("init/tests/e2e.rs.tera", "tests/e2e.rs"),
    ("init/github/workflows/test.yml.tera", ".github/workflows/test.yml"),
    ("init/github/workflows/lint.yml.tera", ".github/workflows/lint.yml"),
    ("init/github/workflows/test-e2e.yml.tera", ".github/workflows/test-e2e.yml"),
    ("init/config/default/kustomization.yaml.tera", "config/default/kustomization.yaml"),
    ("init/config/default/metrics_service.yaml.tera", "config/default/metrics_service.yaml"),
    ("init/config/manager/kustomization.yaml.tera", "config/manager/kustomization.yaml"),
    ("init/config/manager/manager.yaml.tera", "config/manager/manager.yaml"),
    ("init/config/prometheus/kustomization.yaml.tera", "config/prometheus/kustomization.yaml"),
    ("init/config/prometheus/monitor.yaml.tera", "config/prometheus/monitor.yaml"),
    ("init/config/network-policy/kustomization.yaml.tera", "config/network-policy/kustomization.yaml"),
    ("init/config/network-policy/allow-metrics-traffic.yaml.tera", "config/network-policy/allow-metrics-traffic.yaml"),
    ("init/config/rbac/kustomization.yaml.tera", "config/rbac/kustomization.yaml"),
    ("init/config/rbac/service_account.yaml.tera", "config/rbac/service_account.yaml"),
    ("init/config/rbac/role.yaml.tera", "config/rbac/role.yaml"),
    ("init/config/rbac/role_binding.yaml.tera", "config/rbac/role_binding.yaml"),
    ("init/config/rbac/leader_election_role.yaml.tera", "config/rbac/leader_election_role.yaml"),
    ("init/config/rbac/leader_election_role_binding.yaml.tera", "config/rbac/leader_election_role_binding.yaml"),
];

/// The license header template, rendered first: it goes to `hack/` and atop every source.
const BOILERPLATE: (&str, &str) = (
    "init/hack/boilerplate.rs.txt.tera",
    "hack/boilerplate.rs.txt",
);

/// Everything the `init` templates see.
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
    pub versions: Versions,
}

pub fn run(root: &Path, args: InitArgs) -> anyhow::Result<()> {
    let domain = gvk::domain(&args.domain)?;
    let project_name = match args.project_name {
        Some(name) => gvk::project_name(&name)?,
        None => default_project_name(root)?,
    };
    if root.join(project::FILE).exists() {
        return Err(user_error(
            format!(
                "`{}` is already initialized: it has a {} file",
                root.display(),
                project::FILE
            ),
            "add to the project with `kube-scaffold create api`, or run `init` in a new directory",
        ));
    }
    if let Some(owner) = &args.owner
        && owner.contains(['\n', '\r'])
    {
        return Err(user_error(
            "invalid owner: it must be a single line",
            "pass e.g. `--owner \"The Guestbook Authors\"`",
        ));
    }

    let repository = args.repo.as_deref().map(gvk::repository).transpose()?;
    let mut context = InitContext {
        crate_name: names::crate_name(&project_name),
        project_name: project_name.clone(),
        domain: domain.clone(),
        owner: args.owner,
        repository: repository.clone().unwrap_or_default(),
        year: super::current_year(),
        header: String::new(),
        versions: VERSIONS,
    };
    let templates = Templates::load()?;
    let apache2 = args.license == License::Apache2;
    if apache2 {
        let boilerplate = templates.render(BOILERPLATE.0, &context)?;
        context.header = format!("{boilerplate}\n");
    }
    let plan = plan(apache2);
    let mut project = Project::new(domain, project_name);
    project.repo = args.repo;
    let how = super::Execution {
        force: false,
        overwrite_edited: false,
        dry_run: args.dry_run,
        track_edits: false,
        conflict_help: "`init` writes these files: move them away, or run `init` in a new directory",
    };
    super::execute(&templates, &plan, &context, root, project, &how)?;
    if args.dry_run {
        return Ok(());
    }
    ui::say(
        "\nNext: define a resource with:\n$ kube-scaffold create api --group <group> --version v1 --kind <Kind>",
    );
    Ok(())
}

/// The files of a new project; the boilerplate only with a license.
pub fn plan(license_header: bool) -> Plan {
    let mut plan = Plan::default();
    if license_header {
        plan.file(BOILERPLATE.0, BOILERPLATE.1, IfExists::Error);
    }
    for (template, dest) in FILES {
        plan.file(template, *dest, IfExists::Error);
    }
    plan
}

/// The directory's name, as kubebuilder takes it, checked like `--project-name`.
fn default_project_name(root: &Path) -> anyhow::Result<String> {
    let dir = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    gvk::project_name(&dir).map_err(|err| {
        user_error(
            format!("the directory name `{dir}` cannot name the project: {err:#}"),
            "pass a name with `--project-name`, e.g. `--project-name guestbook`",
        )
    })
}
