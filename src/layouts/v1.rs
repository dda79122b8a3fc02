//! The layout of kube-scaffold 0.1 (`rust.kube-scaffold.io/v1`), frozen: its templates are
//! `scaffolds/v1/` as that release shipped them, and this module plans them as it did. It
//! exists so that `upgrade` can render exactly what 0.1 generated (the base of its three-way
//! merge). Never edit it or its templates.

use serde::Serialize;

use crate::model::api::ApiInputs;
use crate::model::names;
use crate::model::project::{Command, InitInputs, License, Project};
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::render;
use crate::scaffold::rustfmt::Rustfmt;
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;

use crate::error::user_error;

/// The layout's name in PROJECT.
pub const LAYOUT: &str = "rust.kube-scaffold.io/v1";

/// The versions kube-scaffold 0.1 pinned.
#[derive(Clone, Debug, Serialize)]
struct Versions {
    kube: &'static str,
    k8s_openapi: &'static str,
    kubernetes_feature: &'static str,
    schemars: &'static str,
    serde_saphyr: &'static str,
    axum: &'static str,
    kube_lease_manager: &'static str,
    prometheus_client: &'static str,
    rust: &'static str,
}

const VERSIONS: Versions = Versions {
    kube: "5.0.0",
    k8s_openapi: "0.29.0",
    kubernetes_feature: "v1_33",
    schemars: "1.2",
    serde_saphyr: "2",
    axum: "0.8",
    kube_lease_manager: "0.13",
    prometheus_client: "0.25",
    rust: "1.89",
};

#[rustfmt::skip]
const INIT_FILES: &[(&str, &str)] = &[
    ("v1/init/Cargo.toml.tera", "Cargo.toml"),
    ("v1/init/Makefile.tera", "Makefile"),
    ("v1/init/Dockerfile.tera", "Dockerfile"),
    ("v1/init/dockerignore.tera", ".dockerignore"),
    ("v1/init/gitignore.tera", ".gitignore"),
    ("v1/init/README.md.tera", "README.md"),
    ("v1/init/src/main.rs.tera", "src/main.rs"),
    ("v1/init/src/lib.rs.tera", "src/lib.rs"),
    ("v1/init/src/health.rs.tera", "src/health.rs"),
    ("v1/init/src/leader.rs.tera", "src/leader.rs"),
    ("v1/init/src/metrics.rs.tera", "src/metrics.rs"),
    ("v1/init/src/api/mod.rs.tera", "src/api/mod.rs"),
    ("v1/init/src/controller/mod.rs.tera", "src/controller/mod.rs"),
    ("v1/init/src/controller/conditions.rs.tera", "src/controller/conditions.rs"),
    ("v1/init/src/bin/crdgen.rs.tera", "src/bin/crdgen.rs"),
    ("v1/init/tests/e2e.rs.tera", "tests/e2e.rs"),
    ("v1/init/github/workflows/test.yml.tera", ".github/workflows/test.yml"),
    ("v1/init/github/workflows/lint.yml.tera", ".github/workflows/lint.yml"),
    ("v1/init/github/workflows/test-e2e.yml.tera", ".github/workflows/test-e2e.yml"),
    ("v1/init/config/default/kustomization.yaml.tera", "config/default/kustomization.yaml"),
    ("v1/init/config/default/metrics_service.yaml.tera", "config/default/metrics_service.yaml"),
    ("v1/init/config/manager/kustomization.yaml.tera", "config/manager/kustomization.yaml"),
    ("v1/init/config/manager/manager.yaml.tera", "config/manager/manager.yaml"),
    ("v1/init/config/prometheus/kustomization.yaml.tera", "config/prometheus/kustomization.yaml"),
    ("v1/init/config/prometheus/monitor.yaml.tera", "config/prometheus/monitor.yaml"),
    ("v1/init/config/network-policy/kustomization.yaml.tera", "config/network-policy/kustomization.yaml"),
    ("v1/init/config/network-policy/allow-metrics-traffic.yaml.tera", "config/network-policy/allow-metrics-traffic.yaml"),
    ("v1/init/config/rbac/kustomization.yaml.tera", "config/rbac/kustomization.yaml"),
    ("v1/init/config/rbac/service_account.yaml.tera", "config/rbac/service_account.yaml"),
    ("v1/init/config/rbac/role.yaml.tera", "config/rbac/role.yaml"),
    ("v1/init/config/rbac/role_binding.yaml.tera", "config/rbac/role_binding.yaml"),
    ("v1/init/config/rbac/leader_election_role.yaml.tera", "config/rbac/leader_election_role.yaml"),
    ("v1/init/config/rbac/leader_election_role_binding.yaml.tera", "config/rbac/leader_election_role_binding.yaml"),
];

const BOILERPLATE: (&str, &str) = (
    "v1/init/hack/boilerplate.rs.txt.tera",
    "hack/boilerplate.rs.txt",
);

#[derive(Serialize)]
struct InitContext {
    project_name: String,
    crate_name: String,
    domain: String,
    owner: Option<String>,
    year: i64,
    header: String,
    versions: Versions,
}

#[derive(Serialize)]
struct ApiContext {
    project_name: String,
    crate_name: String,
    domain: String,
    header: String,
    group: String,
    group_module: String,
    qualified_group: String,
    version: String,
    kind: String,
    kind_module: String,
    kind_lower: String,
    plural: String,
    namespaced: bool,
    api_alias: String,
    sample_file: String,
    sample_name: String,
}

/// What kube-scaffold 0.1 generated for `project`, in memory.
pub fn replay(project: &Project, templates: &Templates, rustfmt: &Rustfmt) -> anyhow::Result<Tree> {
    let mut tree = Tree::empty();
    init(&project.init, templates, &mut tree, rustfmt)?;
    for api in project.commands.iter().filter_map(Command::api) {
        create_api(&project.init, api, templates, &mut tree, rustfmt)?;
    }
    Ok(tree)
}

/// Plans of 0.1, with the template names each uses (for the templates' test).
pub fn plans() -> Vec<Plan> {
    let mut init = Plan::default();
    init_plan(&mut init, true);
    let mut api = Plan::default();
    api_plan(&mut api, "g", "v1", "kind", "K", "g_v1_k.yaml", "k");
    controller_plan(&mut api, "kind");
    vec![init, api]
}

fn init(
    init: &InitInputs,
    templates: &Templates,
    tree: &mut Tree,
    rustfmt: &Rustfmt,
) -> anyhow::Result<()> {
    let mut context = InitContext {
        project_name: init.project_name.clone(),
        crate_name: names::crate_name(&init.project_name),
        domain: init.domain.clone(),
        owner: init.owner.clone(),
        year: init.license_year,
        header: String::new(),
        versions: VERSIONS,
    };
    let license = init.license == License::Apache2;
    if license {
        context.header = format!("{}\n", templates.render(BOILERPLATE.0, &context)?);
    }
    let mut plan = Plan::default();
    init_plan(&mut plan, license);
    render::render(&plan, templates, &context, tree, rustfmt).map(drop)
}

fn init_plan(plan: &mut Plan, license: bool) {
    if license {
        plan.file(BOILERPLATE.0, BOILERPLATE.1, IfExists::Error);
    }
    for (template, dest) in INIT_FILES {
        plan.file(template, *dest, IfExists::Error);
    }
}

fn create_api(
    init: &InitInputs,
    api: &ApiInputs,
    templates: &Templates,
    tree: &mut Tree,
    rustfmt: &Rustfmt,
) -> anyhow::Result<()> {
    let group_module = names::crate_name(&api.group);
    let kind_lower = api.kind.to_lowercase();
    let c = ApiContext {
        project_name: init.project_name.clone(),
        crate_name: names::crate_name(&init.project_name),
        domain: init.domain.clone(),
        header: read_header(tree)?,
        qualified_group: format!("{}.{}", api.group, init.domain),
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
    };
    let mut plan = Plan::default();
    if api.resource() {
        resource_plan(&mut plan, &c);
    }
    if api.controller {
        controller_plan(&mut plan, &c.kind_module);
    }
    render::render(&plan, templates, &c, tree, rustfmt).map(drop)
}

fn resource_plan(plan: &mut Plan, c: &ApiContext) {
    api_plan(
        plan,
        &c.group_module,
        &c.version,
        &c.kind_module,
        &c.kind,
        &c.sample_file,
        &c.kind_lower,
    );
    plan.insert_at(
        "config/crd/kustomization.yaml",
        "crdkustomizeresource",
        format!("- bases/{}_{}.yaml", c.qualified_group, c.plural),
    );
}

/// `create api`'s plan in 0.1's layout. Long, as 0.1 planned it: frozen, never to change.
#[allow(clippy::too_many_arguments)]
fn api_plan(
    plan: &mut Plan,
    group: &str,
    version: &str,
    kind: &str,
    kind_name: &str,
    sample_file: &str,
    kind_lower: &str,
) {
    plan.file(
        "v1/api/src/api/group.rs.tera",
        format!("src/api/{group}/mod.rs"),
        IfExists::Skip,
    );
    plan.file(
        "v1/api/src/api/version.rs.tera",
        format!("src/api/{group}/{version}/mod.rs"),
        IfExists::Skip,
    );
    plan.file(
        "v1/api/src/api/kind.rs.tera",
        format!("src/api/{group}/{version}/{kind}.rs"),
        IfExists::Error,
    );
    plan.file(
        "v1/api/config/crd/kustomization.yaml.tera",
        "config/crd/kustomization.yaml",
        IfExists::Skip,
    );
    plan.file(
        "v1/api/config/samples/kustomization.yaml.tera",
        "config/samples/kustomization.yaml",
        IfExists::Skip,
    );
    plan.file(
        "v1/api/config/samples/sample.yaml.tera",
        format!("config/samples/{sample_file}"),
        IfExists::Error,
    );
    plan.file(
        "v1/api/config/rbac/editor_role.yaml.tera",
        format!("config/rbac/{kind_lower}_editor_role.yaml"),
        IfExists::Error,
    );
    plan.file(
        "v1/api/config/rbac/viewer_role.yaml.tera",
        format!("config/rbac/{kind_lower}_viewer_role.yaml"),
        IfExists::Error,
    );
    plan.insert_at(
        "src/api/mod.rs",
        "api-groups",
        format!("pub mod {group};\n\n"),
    );
    plan.insert_at(
        "src/api/mod.rs",
        "resources",
        format!("ApiResource::erase::<{group}::{version}::{kind_name}>(&()),"),
    );
    plan.insert_at(
        "src/api/mod.rs",
        "crds",
        format!("<{group}::{version}::{kind_name} as kube::CustomResourceExt>::crd(),"),
    );
    plan.insert_at(
        format!("src/api/{group}/mod.rs"),
        "api-versions",
        format!("pub mod {version};\n\n"),
    );
    plan.insert_at(
        format!("src/api/{group}/{version}/mod.rs"),
        "api-kinds",
        format!("mod {kind};\npub use {kind}::*;"),
    );
    plan.insert_at("config/default/kustomization.yaml", "crd", "- ../crd");
    plan.insert_at(
        "config/samples/kustomization.yaml",
        "manifestskustomizesamples",
        format!("- {sample_file}"),
    );
    plan.insert_at(
        "config/rbac/kustomization.yaml",
        "rbac-roles",
        format!("- {kind_lower}_editor_role.yaml\n- {kind_lower}_viewer_role.yaml"),
    );
}

fn controller_plan(plan: &mut Plan, kind: &str) {
    plan.file(
        "v1/api/src/controller/mock.rs.tera",
        "src/controller/mock.rs",
        IfExists::Skip,
    );
    plan.insert_at(
        "src/controller/mod.rs",
        "controller-modules",
        "#[cfg(test)]\nmod mock;\n\n",
    );
    plan.file(
        "v1/api/src/controller/kind.rs.tera",
        format!("src/controller/{kind}.rs"),
        IfExists::Error,
    );
    plan.insert_at(
        "src/controller/mod.rs",
        "controller-modules",
        format!("pub mod {kind};\n\n"),
    );
    plan.insert_at(
        "src/controller/mod.rs",
        "controllers",
        format!("controllers.spawn({kind}::run(ctx.clone()));"),
    );
    plan.insert_at(
        "src/controller/mod.rs",
        "rbac-rules",
        format!("{kind}::rbac_rules(),"),
    );
}

/// The license header for new sources: `hack/boilerplate.rs.txt` plus a blank line, or nothing.
fn read_header(tree: &mut Tree) -> anyhow::Result<String> {
    let file = BOILERPLATE.1;
    let Some(text) = tree.read(file)? else {
        return Ok(String::new());
    };
    if let Some(line) = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with("//"))
    {
        return Err(user_error(
            format!("{file} must hold only `//` comment lines, but has `{line}`"),
            format!("make every line of {file} start with `//`, or delete the file"),
        ));
    }
    Ok(format!("{}\n\n", text.trim_end()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The base of an upgrade must be exact: rendering 0.1's frozen projects from their PROJECT
    /// gives them back byte for byte (formatted with this machine's rustfmt, as 0.1 did).
    #[test]
    fn the_projects_of_0_1_are_rendered_again_byte_for_byte() {
        let templates = Templates::load().unwrap();
        let rustfmt = Rustfmt::detect();
        for case in ["init", "create-api", "two-kinds"] {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/v0.1.0")
                .join(case);
            let project = Project::load(&root).unwrap();
            assert_eq!(project.layout, LAYOUT);
            let tree = replay(&project, &templates, &rustfmt).unwrap();
            let mut count = 0;
            for (path, content) in tree.files() {
                let on_disk = std::fs::read_to_string(root.join(path)).unwrap();
                assert_eq!(content, on_disk, "{case}: {path}");
                count += 1;
            }
            let files = walk(&root);
            assert_eq!(
                count + 1,
                files,
                "{case}: every file but PROJECT is rendered"
            );
        }
    }

    fn walk(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| if p.is_dir() { walk(&p) } else { 1 })
            .sum()
    }
}
