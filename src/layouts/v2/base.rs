//! The base plugin: the Rust crate (manager, `crdgen`, API types, controllers and their
//! tests), Makefile, Dockerfile, README and GitHub workflows.

use crate::error::user_error;
use crate::scaffold::marker::Marker;
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::tree::Tree;

use super::{ApiContext, InitContext, Plugin, WebhookContext};

/// The license header's template, rendered first: it goes to `hack/` and atop every source.
pub const BOILERPLATE_TEMPLATE: &str = "v2/init/hack/boilerplate.rs.txt.tera";
/// Where `init` puts the license header that `create api` puts atop new sources.
pub const BOILERPLATE: &str = crate::model::project::BOILERPLATE;

/// The module of every API group, and the lists of every kind.
pub const API_MOD: &str = "src/api/mod.rs";
/// The module of every controller, and the manager's list of them.
pub const CONTROLLER_MOD: &str = "src/controller/mod.rs";
/// The webhook server, and the list of every webhook.
pub const WEBHOOK_MOD: &str = "src/webhook/mod.rs";
/// The mocked API server of the controllers' tests.
pub const MOCK: &str = "src/controller/mock.rs";

pub const API_GROUPS: Marker = Marker::new(API_MOD, "api-groups");
pub const RESOURCES: Marker = Marker::new(API_MOD, "resources");
pub const EXTERNAL_RESOURCES: Marker = Marker::new(API_MOD, "external-resources");
pub const CRDS: Marker = Marker::new(API_MOD, "crds");
pub const CONTROLLER_MODULES: Marker = Marker::new(CONTROLLER_MOD, "controller-modules");
pub const CONTROLLERS: Marker = Marker::new(CONTROLLER_MOD, "controllers");
pub const RBAC_RULES: Marker = Marker::new(CONTROLLER_MOD, "rbac-rules");
pub const WEBHOOK_MODULES: Marker = Marker::new(WEBHOOK_MOD, "webhook-modules");
pub const WEBHOOKS: Marker = Marker::new(WEBHOOK_MOD, "webhooks");
/// The conversion webhook, and the list of every conversion.
pub const CONVERSION_MOD: &str = "src/webhook/conversion.rs";
pub const CONVERSIONS: Marker = Marker::new(CONVERSION_MOD, "conversions");
/// In each group's and each version's `mod.rs`.
const API_VERSIONS: &str = "api-versions";
const API_KINDS: &str = "api-kinds";

/// The files `init` writes: (template under `scaffolds/`, destination).
#[rustfmt::skip]
const INIT_FILES: &[(&str, &str)] = &[
    ("v2/init/Cargo.toml.tera", "Cargo.toml"),
    ("v2/init/Makefile.tera", "Makefile"),
    ("v2/init/Dockerfile.tera", "Dockerfile"),
    ("v2/init/dockerignore.tera", ".dockerignore"),
    ("v2/init/gitignore.tera", ".gitignore"),
    ("v2/init/README.md.tera", "README.md"),
    ("v2/init/src/main.rs.tera", "src/main.rs"),
    ("v2/init/src/lib.rs.tera", "src/lib.rs"),
    ("v2/init/src/health.rs.tera", "src/health.rs"),
    ("v2/init/src/leader.rs.tera", "src/leader.rs"),
    ("v2/init/src/metrics.rs.tera", "src/metrics.rs"),
    ("v2/init/src/server.rs.tera", "src/server.rs"),
    ("v2/init/src/testing.rs.tera", "src/testing.rs"),
    ("v2/init/src/api/mod.rs.tera", API_MOD),
    ("v2/init/src/api/conditions.rs.tera", "src/api/conditions.rs"),
    ("v2/init/src/controller/mod.rs.tera", CONTROLLER_MOD),
    ("v2/init/src/webhook/mod.rs.tera", WEBHOOK_MOD),
    ("v2/init/src/webhook/conversion.rs.tera", CONVERSION_MOD),
    ("v2/init/src/webhook/certs.rs.tera", "src/webhook/certs.rs"),
    ("v2/init/src/webhook/fake.rs.tera", "src/webhook/fake.rs"),
    ("v2/init/src/webhook/local.rs.tera", "src/webhook/local.rs"),
    ("v2/init/src/controller/children.rs.tera", "src/controller/children.rs"),
    ("v2/init/src/controller/conditions.rs.tera", "src/controller/conditions.rs"),
    ("v2/init/src/bin/crdgen.rs.tera", "src/bin/crdgen.rs"),
    ("v2/init/tests/e2e.rs.tera", "tests/e2e.rs"),
    ("v2/init/tests/integration.rs.tera", "tests/integration.rs"),
    ("v2/init/tests/envtest/mod.rs.tera", "tests/envtest/mod.rs"),
    ("v2/init/tests/support/mod.rs.tera", "tests/support/mod.rs"),
    ("v2/init/github/workflows/test.yml.tera", ".github/workflows/test.yml"),
    ("v2/init/github/workflows/lint.yml.tera", ".github/workflows/lint.yml"),
    ("v2/init/github/workflows/test-e2e.yml.tera", ".github/workflows/test-e2e.yml"),
];

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
        for (template, dest) in INIT_FILES {
            plan.file(template, *dest, IfExists::Error);
        }
    }

    fn create_api(&self, plan: &mut Plan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()> {
        let own = own_files(c.force);
        let (group, version, kind) = (&c.group_module, &c.version, &c.kind_module);
        let kind_file = format!("src/api/{group}/{version}/{kind}.rs");
        if let Some((copy, text, _)) = &c.adopted_crd {
            // kopium's layout is its own: rustfmt leaves the modules alone.
            let declaration = format!("#[rustfmt::skip]\nmod {kind};\npub use {kind}::*;");
            for v in &c.adopted_versions {
                let version = &v.version;
                plan_modules(plan, c, version, declaration.clone());
                plan.computed(
                    format!("src/api/{group}/{version}/{kind}.rs"),
                    format!("{}{}", c.header, v.types),
                );
                // The manager checks at start that the versions it may be sent are served.
                plan_lists(plan, c, version, v.served);
            }
            plan.computed(copy.clone(), text.clone());
        } else if c.resource {
            plan_modules(plan, c, version, format!("mod {kind};\npub use {kind}::*;"));
            plan.file("v2/api/src/api/kind.rs.tera", &kind_file, own);
            if let Some(previous) = &c.previous_stored {
                let file = format!("src/api/{group}/{previous}/{kind}.rs");
                let text = tree.read(&file)?.unwrap_or_default().to_string();
                let Some(marked) = not_stored(&text, previous) else {
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
        if let Some((copy, text)) = &c.external_crd {
            // kopium's layout is its own: rustfmt leaves the module alone.
            let declaration = format!(
                "// Generated by kopium from {copy}.\n#[rustfmt::skip]\nmod {kind};\npub use {kind}::*;"
            );
            plan_modules(plan, c, version, declaration);
            plan.computed(kind_file, format!("{}{}", c.header, c.external_types));
            plan.computed(copy.clone(), text.clone());
        }
        if c.controller {
            plan.file("v2/api/src/controller/mock.rs.tera", MOCK, IfExists::Skip);
            plan.insert(CONTROLLER_MODULES, "/// A fake API server for the controllers' tests.\n#[cfg(test)]\npub mod mock;\n\n");
            let template = match c.builtin {
                true => "v2/api/src/controller/builtin.rs.tera",
                false => "v2/api/src/controller/kind.rs.tera",
            };
            plan.file(template, format!("src/controller/{kind}.rs"), own);
            plan.insert(CONTROLLER_MODULES, format!("pub mod {kind};\n\n"));
            plan.insert(CONTROLLERS, format!("{kind}::start,"));
            plan.insert(RBAC_RULES, format!("{kind}::rbac_rules(),"));
            if c.external_crd.is_some() {
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

    fn create_webhook(&self, plan: &mut Plan, c: &WebhookContext) -> anyhow::Result<()> {
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
    for (module, template) in [
        (&c.defaulter, "v2/webhook/src/webhook/defaulter.rs.tera"),
        (&c.validator, "v2/webhook/src/webhook/validator.rs.tera"),
    ] {
        let Some(module) = module else {
            continue;
        };
        plan.file(template, format!("src/webhook/{module}.rs"), own);
        plan.insert(WEBHOOK_MODULES, format!("pub mod {module};\n\n"));
        plan.insert(WEBHOOKS, format!("{module}::hook(),"));
    }
    for conversion in &c.conversions {
        let (group, spoke, module) = (&c.group_module, &conversion.spoke, &conversion.module);
        plan.file_of(
            "v2/webhook/src/api/conversion.rs.tera",
            format!("src/api/{group}/{spoke}/{module}.rs"),
            own,
            conversion,
        )?;
        let version_mod = format!("src/api/{group}/{spoke}/mod.rs");
        plan.insert_at(version_mod, API_KINDS, format!("pub mod {module};"));
        plan.insert(
            CONVERSIONS,
            format!("crate::api::{group}::{spoke}::{module}::conversion(),"),
        );
    }
    Ok(())
}

/// The modules of the kind's group and `version`, and `declaration` of the kind's module in
/// the version's.
fn plan_modules(plan: &mut Plan, c: &ApiContext, version: &str, declaration: String) {
    let group = &c.group_module;
    let group_mod = format!("src/api/{group}/mod.rs");
    let version_mod = format!("src/api/{group}/{version}/mod.rs");
    plan.file("v2/api/src/api/group.rs.tera", &group_mod, IfExists::Skip);
    plan.file(
        "v2/api/src/api/version.rs.tera",
        &version_mod,
        IfExists::Skip,
    );
    plan.insert(API_GROUPS, format!("pub mod {group};\n\n"));
    plan.insert_at(group_mod, API_VERSIONS, format!("pub mod {version};\n\n"));
    plan.insert_at(version_mod, API_KINDS, declaration);
}

/// `text`, the type of a kind's `version`, with `storage = false` added to its `#[kube]`
/// attribute: after its `version = "<version>",` line, as kube-scaffold lays it out, or as a
/// line of its own after kopium's one-line attribute. `None` when neither is there once.
fn not_stored(text: &str, version: &str) -> Option<String> {
    let ours = format!("    version = \"{version}\",\n");
    if text.matches(&ours).count() == 1 {
        return Some(text.replacen(&ours, &format!("{ours}    storage = false,\n"), 1));
    }
    let kopium = text
        .lines()
        .filter(|l| {
            l.starts_with("#[kube(group = ") && l.contains(&format!("version = \"{version}\""))
        })
        .collect::<Vec<_>>();
    match kopium[..] {
        [line] => Some(text.replacen(
            &format!("{line}\n"),
            &format!("{line}\n#[kube(storage = false)]\n"),
            1,
        )),
        _ => None,
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
