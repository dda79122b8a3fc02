//! The base plugin: the Rust crate (manager, `crdgen`, API types, controllers and their
//! tests), Makefile, Dockerfile, README and GitHub workflows.

use crate::codegen;
use crate::codegen::kind_types::KindTypes;
use crate::codegen::vendor;
use crate::error::user_error;
use crate::model::project::EditInputs;
use crate::scaffold::marker::Marker;
use crate::scaffold::plan::{Descriptor, IfExists, Plan};
use crate::scaffold::templates::{self, RuntimeSource};
use crate::scaffold::tree::Tree;

use super::multigroup::{self, GroupItem, Grouped};
use super::{ApiContext, ApiPlan, InitContext, Plugin, Source, WebhookContext, paths};

/// The license header's template, rendered first: it goes to `hack/` and atop every source.
pub const BOILERPLATE_TEMPLATE: &str = "base/init/hack/boilerplate.rs.txt.tera";
/// Where `init` puts the license header that `create api` puts atop new sources.
pub const BOILERPLATE: &str = crate::model::project::BOILERPLATE;

/// The module of every API group, and the lists of every kind.
pub const API_MOD: &str = "src/api/mod.rs";
/// The module of every controller, and the manager's list of them.
pub const CONTROLLER_MOD: &str = "src/controller/mod.rs";
/// The crate's root: its modules, its manager and what `make manifests` writes.
const LIB: &str = "src/lib.rs";
const LIB_MODULES: Marker = Marker::new(LIB, "modules");
const MANAGER_WEBHOOKS: Marker = Marker::new(LIB, "manager");
const MANIFESTS_WEBHOOKS: Marker = Marker::new(LIB, "manifests");
/// The list of every webhook (the first `create webhook` writes it).
pub const WEBHOOK_MOD: &str = "src/webhook/mod.rs";

pub const API_GROUPS: Marker = Marker::new(API_MOD, "api-groups");
pub const RESOURCES: Marker = Marker::new(API_MOD, "resources");
pub const EXTERNAL_RESOURCES: Marker = Marker::new(API_MOD, "external-resources");
pub const CRDS: Marker = Marker::new(API_MOD, "crds");
pub const CONTROLLER_MODULES: Marker = Marker::new(CONTROLLER_MOD, "controller-modules");
pub const CONTROLLERS: Marker = Marker::new(CONTROLLER_MOD, "controllers");
pub const RBAC_RULES: Marker = Marker::new(CONTROLLER_MOD, "rbac-rules");
pub const WEBHOOK_MODULES: Marker = Marker::new(WEBHOOK_MOD, "webhook-modules");
pub const WEBHOOKS: Marker = Marker::new(WEBHOOK_MOD, "webhooks");
/// The list of every conversion (the first `create webhook` writes it).
pub const CONVERSION_MOD: &str = "src/webhook/conversion.rs";
pub const CONVERSIONS: Marker = Marker::new(CONVERSION_MOD, "conversions");
/// A group's module of controllers or hooks in a multigroup project: its template, and its
/// file from the group.
type GroupModule = (&'static str, fn(&str) -> String);
const CONTROLLER_GROUP: GroupModule = (
    "base/api/src/controller/group.rs.tera",
    paths::controller_group,
);
const WEBHOOK_GROUP: GroupModule = (
    "base/webhook/src/webhook/group.rs.tera",
    paths::webhook_group,
);
/// In each group's and each version's `mod.rs`.
const API_VERSIONS: &str = "api-versions";
const API_KINDS: &str = "api-kinds";

/// `make manifests`: CRDs, the manager's role and webhook configurations from the code.
const CRDGEN: &str = "src/bin/crdgen.rs";
const CRDGEN_TEMPLATE: &str = "base/init/src/bin/crdgen.rs.tera";

/// The files `init` writes.
#[rustfmt::skip]
const INIT_FILES: &[Descriptor] = &[
    Descriptor::new("base/init/Cargo.toml.tera", "Cargo.toml", IfExists::Error).with_markers(&[RUNTIME_FEATURES]),
    Descriptor::new("base/init/build.rs.tera", "build.rs", IfExists::Error),
    Descriptor::new("base/init/Makefile.tera", "Makefile", IfExists::Error),
    Descriptor::new("base/init/Dockerfile.tera", "Dockerfile", IfExists::Error),
    Descriptor::new("base/init/dockerignore.tera", ".dockerignore", IfExists::Error),
    Descriptor::new("base/init/gitignore.tera", ".gitignore", IfExists::Error),
    Descriptor::new("base/init/README.md.tera", "README.md", IfExists::Error),
    Descriptor::new("base/init/src/main.rs.tera", "src/main.rs", IfExists::Error),
    Descriptor::new("base/init/src/lib.rs.tera", LIB, IfExists::Error).with_markers(&[LIB_MODULES, MANAGER_WEBHOOKS, MANIFESTS_WEBHOOKS]),
    Descriptor::new("base/init/src/api/mod.rs.tera", API_MOD, IfExists::Error).with_markers(&[API_GROUPS, RESOURCES, EXTERNAL_RESOURCES, CRDS]),
    Descriptor::new("base/init/src/controller/mod.rs.tera", CONTROLLER_MOD, IfExists::Error).with_markers(&[CONTROLLER_MODULES, CONTROLLERS, RBAC_RULES]),
    Descriptor::new(CRDGEN_TEMPLATE, CRDGEN, IfExists::Error),
    Descriptor::new("base/init/tests/e2e.rs.tera", "tests/e2e.rs", IfExists::Error),
    Descriptor::new("base/init/tests/integration.rs.tera", "tests/integration.rs", IfExists::Error),
    Descriptor::new("base/init/tests/support/mod.rs.tera", "tests/support/mod.rs", IfExists::Error),
    Descriptor::new("base/init/github/workflows/test.yml.tera", ".github/workflows/test.yml", IfExists::Error),
    Descriptor::new("base/init/github/workflows/lint.yml.tera", ".github/workflows/lint.yml", IfExists::Error),
    Descriptor::new("base/init/github/workflows/test-e2e.yml.tera", ".github/workflows/test-e2e.yml", IfExists::Error),
    Descriptor::new("base/init/AGENTS.md.tera", "AGENTS.md", IfExists::Error),
    Descriptor::new("base/init/devcontainer/devcontainer.json.tera", ".devcontainer/devcontainer.json", IfExists::Error),
    Descriptor::new("base/init/devcontainer/post-install.sh.tera", ".devcontainer/post-install.sh", IfExists::Error),
];

/// The project's webhook module, which the first `create webhook` writes.
#[rustfmt::skip]
const WEBHOOK_FILES: &[Descriptor] = &[
    Descriptor::new("base/webhook/src/webhook/mod.rs.tera", WEBHOOK_MOD, IfExists::Skip).with_markers(&[WEBHOOK_MODULES, WEBHOOKS]),
    Descriptor::new("base/webhook/src/webhook/conversion.rs.tera", CONVERSION_MOD, IfExists::Skip).with_markers(&[CONVERSIONS]),
];

/// Where the project keeps its copy of the runtime crate, until the crate is on crates.io.
pub const RUNTIME_DIR: &str = "kube-scaffold-runtime";

/// The features of the runtime crate that the project's Cargo.toml enables.
pub const RUNTIME_FEATURES: Marker = Marker::new("Cargo.toml", "runtime-features");

/// The base plugin.
pub struct Base;

impl Plugin for Base {
    fn key(&self) -> &'static str {
        "base.rust.kube-scaffold.io/v2"
    }

    fn init(&self, plan: &mut Plan, c: &InitContext) {
        if c.license {
            plan.file(BOILERPLATE_TEMPLATE, BOILERPLATE, IfExists::Error);
        }
        plan.add_all(INIT_FILES);
        if c.runtime == RuntimeSource::Vendored {
            for (path, text) in vendor::without_tests(&templates::runtime_files())
                .expect("the runtime crate's sources parse: a unit test renders them")
            {
                plan.computed(format!("{RUNTIME_DIR}/{path}"), text);
            }
        }
    }

    fn create_api(
        &self,
        plan: &mut Plan,
        p: &ApiPlan,
        c: &ApiContext,
        tree: &mut Tree,
    ) -> anyhow::Result<()> {
        let own = own_files(p.force);
        let (group, version, kind) = (&c.group_module, &c.version, &c.kind_module);
        let kind_file = paths::api_module(group, version, kind);
        if let KindTypes::Adopted { crd, versions, .. } = &p.types {
            // kopium's layout is its own: rustfmt leaves the modules alone.
            let declaration = format!("#[rustfmt::skip]\nmod {kind};\npub use {kind}::*;");
            for v in versions {
                let version = &v.version;
                plan_modules(plan, c, version, declaration.clone());
                let file = paths::api_module(group, version, kind);
                plan.computed(file, format!("{}{}", c.header, v.types));
                // The manager checks at start that the versions it may be sent are served.
                plan_lists(plan, c, version, v.served);
            }
            plan.computed(crd.path.clone(), crd.text.clone());
        } else if p.resource {
            plan_modules(plan, c, version, format!("mod {kind};\npub use {kind}::*;"));
            plan.file("base/api/src/api/kind.rs.tera", &kind_file, own);
            if let Some(previous) = &p.previous_stored {
                let file = paths::api_module(group, previous, kind);
                let text = tree.read(&file)?.unwrap_or_default().to_string();
                let Some(marked) = codegen::edit::not_stored(&text, previous) else {
                    return Err(user_error(
                        format!(
                            "cannot find the `#[kube(...)]` attribute of {} {previous} in {file}, to mark it `storage = false`",
                            c.kind
                        ),
                        "add `storage = false` to that attribute yourself, then run this command again without `--storage-version`",
                    ));
                };
                plan.computed(file, marked);
            }
            plan_lists(plan, c, version, true);
        }
        if let KindTypes::External { crd, types } = &p.types {
            // kopium's layout is its own: rustfmt leaves the module alone.
            let declaration = format!(
                "// Generated by kopium from {}.\n#[rustfmt::skip]\nmod {kind};\npub use {kind}::*;",
                crd.path
            );
            plan_modules(plan, c, version, declaration);
            plan.computed(kind_file, format!("{}{types}", c.header));
            plan.computed(crd.path.clone(), crd.text.clone());
        }
        if p.controller {
            let template = match c.source {
                Source::Own => "base/api/src/controller/kind.rs.tera",
                _ => "base/api/src/controller/builtin.rs.tera",
            };
            plan.file(template, &p.controller_file, own);
            let group_dir = p.group_dir.as_deref().map(|g| (g, c.group.as_str()));
            let module =
                declare_module(plan, group_dir, kind, CONTROLLER_MODULES, CONTROLLER_GROUP)?;
            plan.insert(CONTROLLERS, format!("{module}::start,"));
            plan.insert(RBAC_RULES, format!("{module}::rbac_rules(),"));
            if c.source == Source::External {
                // The manager checks at start that the other project's CRD is installed.
                let path = format!("{group}::{version}::{}", c.rust_kind);
                plan.insert(
                    EXTERNAL_RESOURCES,
                    format!("ApiResource::erase::<{path}>(&()),"),
                );
            }
        }
        Ok(())
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[INIT_FILES, WEBHOOK_FILES]
    }

    fn edit(
        &self,
        plan: &mut Plan,
        c: &InitContext,
        edit: &EditInputs,
        tree: &mut Tree,
    ) -> anyhow::Result<()> {
        if edit.license.is_some() || edit.owner.is_some() {
            license_header(plan, c);
        }
        if edit.sharding == Some(true) {
            plan.insert(RUNTIME_FEATURES, "\"sharding\",");
        }
        if edit.namespaced.is_some() || edit.sharding.is_some() {
            // `make manifests` writes the manager's role as a Role or a ClusterRole, with
            // `patch` on the watched kinds when sharded (the runtime's `sharding` feature).
            plan.file(CRDGEN_TEMPLATE, CRDGEN, IfExists::Overwrite);
        }
        if let Some(moves) = &c.moves {
            let (controllers, hooks) = (&moves.controllers, &moves.hooks);
            regroup(
                plan,
                tree,
                controllers,
                CONTROLLER_MODULES,
                CONTROLLER_GROUP,
                paths::controller,
            )?;
            regroup(
                plan,
                tree,
                hooks,
                WEBHOOK_MODULES,
                WEBHOOK_GROUP,
                paths::webhook,
            )?;
        }
        Ok(())
    }

    fn create_webhook(&self, plan: &mut Plan, c: &WebhookContext) -> anyhow::Result<()> {
        plan.insert(RUNTIME_FEATURES, "\"webhooks\",");
        // The first one makes the project's webhook module and hands it to the manager and
        // to `make manifests`.
        plan.add_all(WEBHOOK_FILES);
        plan.insert(LIB_MODULES, "pub mod webhook;");
        let (hooks, conversions) = ("webhook::hooks()", "webhook::conversion::conversions()");
        plan.insert(
            MANAGER_WEBHOOKS,
            format!(".webhooks({hooks}, {conversions})"),
        );
        let manifests = format!("let manifests = manifests.webhooks({hooks}, {conversions});");
        plan.insert(MANIFESTS_WEBHOOKS, manifests);
        plan_webhook(plan, c)
    }
}

/// The kind's `version` in `api::crds()` and, if the API server serves it, `api::resources()`.
fn plan_lists(plan: &mut Plan, c: &ApiContext, version: &str, served: bool) {
    let path = format!("{}::{version}::{}", c.group_module, c.rust_kind);
    if served {
        plan.insert(RESOURCES, format!("ApiResource::erase::<{path}>(&()),"));
    }
    plan.insert(CRDS, format!("<{path} as kube::CustomResourceExt>::crd(),"));
}

/// `create webhook`'s Rust: a module per hook, listed in `webhook::hooks()`, and a module of
/// conversions per spoke, listed in `webhook::conversion::conversions()`.
fn plan_webhook(plan: &mut Plan, c: &WebhookContext) -> anyhow::Result<()> {
    let own = own_files(c.force);
    for (module, hook) in [(&c.defaulter, "defaulter"), (&c.validator, "validator")] {
        let Some(module) = module else {
            continue;
        };
        let group_dir = c.multigroup.then_some(c.group_module.as_str());
        plan.file(
            &c.variant.template(hook),
            paths::webhook(group_dir, module),
            own,
        );
        let group = group_dir.map(|g| (g, c.group.as_str()));
        let module = declare_module(plan, group, module, WEBHOOK_MODULES, WEBHOOK_GROUP)?;
        plan.insert(WEBHOOKS, format!("{module}::hook(),"));
    }
    for conversion in &c.conversions {
        let (group, spoke, module) = (&c.group_module, &conversion.spoke, &conversion.module);
        plan.file_of(
            "base/webhook/src/api/conversion.rs.tera",
            paths::api_module(group, spoke, module),
            own,
            conversion,
        )?;
        let version_mod = paths::version_module(group, spoke);
        // A blank line after: rustfmt sorts a run of `mod` lines, and the next kind's `mod`
        // would join this one's.
        plan.insert_at(version_mod, API_KINDS, format!("pub mod {module};\n\n"));
        plan.insert(
            CONVERSIONS,
            format!("crate::api::{group}::{spoke}::{module}::conversion(),"),
        );
    }
    Ok(())
}

/// Declares the module `module` (a controller's, a hook's) where `modules` (the marker of
/// `src/controller/mod.rs` or `src/webhook/mod.rs`) says, or in a multigroup project in its
/// group's module, from the template `group_template`, itself declared there. Returns the
/// module's path from `modules`'s file: `guestbook` or `webapp::guestbook`.
fn declare_module(
    plan: &mut Plan,
    group: Option<(&str, &str)>,
    module: &str,
    modules: Marker,
    group_module: GroupModule,
) -> anyhow::Result<String> {
    let Some((group, name)) = group else {
        plan.insert(modules, format!("pub mod {module};\n\n"));
        return Ok(module.to_string());
    };
    declare_in_group(plan, group, name, module, modules, group_module)?;
    plan.insert(modules, format!("pub mod {group};\n\n"));
    Ok(format!("{group}::{module}"))
}

/// Declares `module` in the module of its group `group` (spelled `name` in PROJECT), written
/// from its template if missing.
fn declare_in_group(
    plan: &mut Plan,
    group: &str,
    name: &str,
    module: &str,
    modules: Marker,
    (template, group_file): GroupModule,
) -> anyhow::Result<()> {
    let file = group_file(group);
    if !plan.files.iter().any(|spec| spec.dest == file) {
        plan.file_of(template, &file, IfExists::Skip, &GroupItem { group: name })?;
    }
    plan.insert_at(file, modules.name, format!("pub mod {module};\n\n"));
    Ok(())
}

/// `edit --multigroup`'s share of the crate: each module of `list` moved under its group's,
/// from where `path` puts it, and `modules`'s file declaring the groups instead.
fn regroup(
    plan: &mut Plan,
    tree: &mut Tree,
    list: &[Grouped],
    modules: Marker,
    group_module: GroupModule,
    path: fn(Option<&str>, &str) -> String,
) -> anyhow::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    for g in list {
        plan.moved(path(None, &g.module), path(Some(&g.group), &g.module));
        declare_in_group(plan, &g.group, &g.name, &g.module, modules, group_module)?;
    }
    let file = modules.file;
    let text = tree.read(file)?.unwrap_or_default();
    let Some(regrouped) = codegen::edit::regroup(text, &multigroup::pairs(list)) else {
        return Err(user_error(
            format!(
                "`{file}` does not parse as Rust, so its modules cannot be moved under their groups; nothing was written"
            ),
            format!("fix `{file}` (`cargo check` points at the error), then run the command again"),
        ));
    };
    plan.computed(file, regrouped);
    Ok(())
}

/// The modules of the kind's group and `version`, and `declaration` of the kind's module in
/// the version's.
fn plan_modules(plan: &mut Plan, c: &ApiContext, version: &str, declaration: String) {
    let group = &c.group_module;
    let group_mod = paths::group_module(group);
    let version_mod = paths::version_module(group, version);
    plan.file("base/api/src/api/group.rs.tera", &group_mod, IfExists::Skip);
    plan.file(
        "base/api/src/api/version.rs.tera",
        &version_mod,
        IfExists::Skip,
    );
    plan.insert(API_GROUPS, format!("pub mod {group};\n\n"));
    plan.insert_at(group_mod, API_VERSIONS, format!("pub mod {version};\n\n"));
    plan.insert_at(version_mod, API_KINDS, declaration);
}

/// The license header as `c` says (`edit --license/--owner`): `hack/boilerplate.rs.txt`
/// rewritten, or deleted with `--license none`. Sources already written keep theirs; new ones
/// get this one.
pub fn license_header(plan: &mut Plan, c: &InitContext) {
    match c.license {
        true => plan.file(BOILERPLATE_TEMPLATE, BOILERPLATE, IfExists::Overwrite),
        false => plan.remove(BOILERPLATE),
    }
}

/// How a kind's own files (its type, controller, sample, roles) meet existing ones: refused,
/// or with `--force` replaced.
pub fn own_files(force: bool) -> IfExists {
    if force {
        IfExists::Overwrite
    } else {
        IfExists::Error
    }
}

/// The license header for new sources: `hack/boilerplate.rs.txt` plus a blank line, or nothing.
pub fn read_header(tree: &mut Tree) -> anyhow::Result<String> {
    let Some(text) = tree.read(BOILERPLATE)? else {
        return Ok(String::new());
    };
    if let Some(line) = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with("//"))
    {
        return Err(user_error(
            format!("{BOILERPLATE} must hold only `//` comment lines, but has `{line}`"),
            format!("make every line of {BOILERPLATE} start with `//`, or delete the file"),
        ));
    }
    Ok(format!("{}\n\n", text.trim_end()))
}
