//! What gets generated. Each plugin adds files and inserts to a command's plan; the default
//! bundle is `base` (the Rust crate, Makefile, Dockerfile, workflows) plus `kustomize` (the
//! `config/` tree), as kubebuilder's `go/v4` is `base.go/v4` plus `kustomize/v2`. Later plugins
//! (deploy-image for one API; grafana, autoupdate and helm for the whole project, which
//! `init --plugins` and `edit --plugins` add) go here beside them.
//!
//! Beside the plugins: `context` (what the templates see), `policy` (the project-wide RBAC
//! rules and webhook hooks), `run` (a command's plugins run onto a tree; `replay` renders a
//! whole project from its PROJECT alone, in memory).

use std::path::Path;

use crate::error::user_error;
use crate::model::project::{EditInputs, Project};
use crate::scaffold::plan::{Descriptor, Plan};
use crate::scaffold::tree::Tree;

pub mod autoupdate;
pub mod base;
mod context;
pub mod deploy_image;
pub mod grafana;
pub mod helm;
pub mod kustomize;
pub mod multigroup;
pub mod paths;
mod policy;
mod run;

pub use context::{
    ApiContext, ApiPlan, Builder, Certificates, ConversionContext, DeployImageContext, Direction,
    Earlier, InitContext, OwnedContext, Source, Variant, WebhookContext,
};
pub use run::{command, init, recorded, replay, replay_digests, replay_onto};

/// A plugin: what it adds to the plan of each command.
pub trait Plugin {
    /// Its key, as PROJECT and `--plugins` name it.
    fn key(&self) -> &'static str;
    /// `init`'s files and inserts.
    fn init(&self, _plan: &mut Plan, _c: &InitContext) {}
    /// `create api`'s files and inserts, planned from `p` with templates that see `c`;
    /// `tree` holds the project as it is.
    fn create_api(
        &self,
        _plan: &mut Plan,
        _p: &ApiPlan,
        _c: &ApiContext,
        _tree: &mut Tree,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// `create webhook`'s files and inserts.
    fn create_webhook(&self, _plan: &mut Plan, _c: &WebhookContext) -> anyhow::Result<()> {
        Ok(())
    }
    /// `edit`'s files and inserts, for the flags it handles (`c` is the project as the edit
    /// leaves it); `tree` holds the project as it is.
    fn edit(
        &self,
        _plan: &mut Plan,
        _c: &InitContext,
        _edit: &EditInputs,
        _tree: &mut Tree,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// The files it adds when a project takes it (`init --plugins`, `edit --plugins`): a
    /// plugin of the whole project (grafana, autoupdate, helm) has them; the default bundle's and
    /// deploy-image add theirs with each command.
    /// `tree` holds the project as it is (a replay's, in memory, when PROJECT is replayed).
    fn enable(&self, _plan: &mut Plan, _c: &InitContext, _tree: &mut Tree) -> anyhow::Result<()> {
        Ok(())
    }
    /// What the project in `root` must have before the plugin can run (helm: the manifests
    /// `make build-installer` writes); an error says how to get it.
    fn check(&self, _root: &std::path::Path) -> anyhow::Result<()> {
        Ok(())
    }
    /// The files it made its files from (paths in the project), which a replay reads from the
    /// project to make them again: helm's chart is made from a build's output.
    fn recorded(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether `edit --plugins` may name it again once the project has it: to make its files
    /// again from what changed since (helm's chart from the newest `dist/install.yaml`).
    fn regenerates(&self) -> bool {
        false
    }
    /// The names `init --plugins` and `edit --plugins` take for it: kubebuilder's short and
    /// full names, and its key. None for a plugin no project takes that way.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// The files it scaffolds at fixed places, in tables of descriptors (with their markers).
    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[]
    }
}

/// The plugins every project is scaffolded with.
pub const BUNDLE: &[&dyn Plugin] = &[&base::Base, &kustomize::Kustomize];

/// Every plugin this kube-scaffold has, by which PROJECT's keys are found.
const KNOWN: &[&dyn Plugin] = &[
    &base::Base,
    &kustomize::Kustomize,
    &deploy_image::DeployImage,
    &grafana::Grafana,
    &autoupdate::AutoUpdate,
    &helm::Helm,
];

/// The plugin of the whole project that `init --plugins` or `edit --plugins` names `name`, if
/// any.
pub fn project_plugin(name: &str) -> Option<&'static dyn Plugin> {
    KNOWN.iter().copied().find(|p| p.aliases().contains(&name))
}

/// How `--plugins` may name the plugins of the whole project, for a `help:` line.
pub fn project_plugin_names() -> String {
    KNOWN
        .iter()
        .filter_map(|p| p.aliases().first())
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The keys of the plugins `names` asks for, checked: each a plugin of the whole project that
/// the project in `root` (whose plugins are `taken`) does not have yet (or one that makes its
/// files again), named once, with what it needs there.
pub fn project_plugins(
    root: &Path,
    names: &[String],
    taken: &[String],
) -> anyhow::Result<Vec<String>> {
    let mut keys: Vec<String> = Vec::new();
    for name in names {
        let Some(plugin) = project_plugin(name) else {
            return Err(user_error(
                format!("unknown plugin `{name}` for the whole project"),
                format!(
                    "pass one of {} (deploy-image is `create api --plugins`'s)",
                    project_plugin_names()
                ),
            ));
        };
        let key = plugin.key().to_string();
        if (taken.contains(&key) && !plugin.regenerates()) || keys.contains(&key) {
            return Err(user_error(
                format!("the project has the plugin `{name}` already; nothing was written"),
                "drop it from `--plugins`",
            ));
        }
        plugin.check(root)?;
        keys.push(key);
    }
    Ok(keys)
}

/// Every plugin this kube-scaffold has.
pub fn known() -> &'static [&'static dyn Plugin] {
    KNOWN
}

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
                user_error(
                    format!("PROJECT names the plugin `{key}`, which this kube-scaffold does not have"),
                    format!("use kube-scaffold {} or newer, which wrote it", project.cli_version),
                )
            })
        })
        .collect()
}
