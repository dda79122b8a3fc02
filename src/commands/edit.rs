//! `kube-scaffold edit`: changes a project after `init`. `--plugins` adds plugins of the whole
//! project (grafana, autoupdate, helm), each of which writes its files; `--license` and `--owner`
//! rewrite the license header new sources get. PROJECT records the command, so `alpha
//! generate` renders it again.

use std::path::Path;

use crate::cli::{EditArgs, License as LicenseFlag};
use crate::error::user_error;
use crate::model::project::{self, Command, EditInputs, License, Project};
use crate::plugins;
use crate::scaffold::tree::Tree;

pub fn run(root: &Path, args: EditArgs) -> anyhow::Result<()> {
    let mut project = Project::load(root)?;
    project.check_compatible()?;
    plugins::resolve(&project)?;
    if args.plugins.is_empty()
        && args.license.is_none()
        && args.owner.is_none()
        && args.namespaced.is_none()
        && args.multigroup.is_none()
        && args.sharding.is_none()
    {
        return Err(user_error(
            "nothing to edit",
            "pass `--plugins <plugin>`, `--namespaced[=false]`, `--sharding[=false]`, `--multigroup`, `--license apache2|none` and/or `--owner <name>`",
        ));
    }
    if args.namespaced == Some(true) {
        check_namespaced(&project)?;
    }
    if let Some(multigroup) = args.multigroup {
        check_multigroup(&project, multigroup)?;
    }
    if let Some(sharding) = args.sharding {
        check_sharding(&project, sharding)?;
    }
    let keys = plugins::project_plugins(root, &args.plugins, &project.plugins)?;
    let license = args.license.map(|l| match l {
        LicenseFlag::Apache2 => License::Apache2,
        LicenseFlag::None => License::None,
    });
    if let Some(owner) = &args.owner {
        project::check_owner(owner)?;
    }
    let edits = project.commands.iter().filter_map(Command::edit);
    let now = EditInputs::applied(&project.init, edits);
    if args.owner.is_some() && license.unwrap_or(now.license) == License::None {
        return Err(user_error(
            "the project has no license header to put `--owner` in",
            "add `--license apache2`",
        ));
    }
    let header = license.is_some() || args.owner.is_some();
    for key in &keys {
        if !project.plugins.contains(key) {
            project.plugins.push(key.clone());
        }
    }
    let how = super::Finish {
        overwrite_edited: args.force,
        merge_edited: Some(
            "pass `--force` to replace them (your changes there are lost), or move them away, run the command again and put your changes back",
        ),
        dry_run: args.dry_run,
        conflict_help: "move those files away, then run the command again (`--force` replaces files kube-scaffold wrote that you edited)",
    };
    let next = "\nNext: commit the changes; `kube-scaffold alpha generate` renders them again from PROJECT.";
    let command = Command::Edit(EditInputs {
        plugins: keys,
        license,
        owner: args.owner,
        license_year: header.then(super::current_year),
        namespaced: args.namespaced,
        multigroup: args.multigroup == Some(true),
        sharding: args.sharding,
    });
    super::scaffold(root, Tree::over(root), project, command, &how, next)
}

/// A manager that watches one namespace, with a Role there, cannot reconcile a cluster-scoped
/// kind: a project with a controller of one cannot be made `--namespaced`.
fn check_namespaced(project: &Project) -> anyhow::Result<()> {
    let resources = project.resources();
    let cluster = resources.iter().find(|r| r.controller && !r.namespaced);
    if let Some(r) = cluster {
        return Err(user_error(
            format!(
                "`{}/{} {}` is cluster-scoped and has a controller, which a manager watching one namespace with a Role cannot run",
                r.group, r.version, r.kind
            ),
            "keep the manager cluster-wide, or remove that controller first (src/controller/ and PROJECT)",
        ));
    }
    Ok(())
}

/// `--multigroup` moves a project's kinds under their groups once; moving them back is not
/// supported.
fn check_multigroup(project: &Project, wanted: bool) -> anyhow::Result<()> {
    match (EditInputs::multigroup(&project.commands), wanted) {
        (true, true) => Err(user_error(
            "the project is multigroup already: its controllers and webhooks are under their groups; nothing was written",
            "drop `--multigroup`",
        )),
        (true, false) => Err(user_error(
            "kube-scaffold does not move kinds back out of their groups; nothing was written",
            "keep the project multigroup (one kind may be in two groups then), or move the files back by hand and remove the `multigroup` edit from PROJECT",
        )),
        (false, false) => Err(user_error(
            "the project is not multigroup; nothing was written",
            "drop `--multigroup=false`",
        )),
        (false, true) => Ok(()),
    }
}

/// `--sharding` shards the objects of the project's controllers: it needs one, and it turns
/// the mode on or off once.
fn check_sharding(project: &Project, wanted: bool) -> anyhow::Result<()> {
    let now = EditInputs::sharded_manager(&project.commands);
    if wanted && !project.resources().iter().any(|r| r.controller) {
        return Err(user_error(
            "the project has no controller whose objects replicas could share; nothing was written",
            "add one first: `kube-scaffold create api --group <group> --version <version> --kind <Kind> --controller`",
        ));
    }
    match (now, wanted) {
        (true, true) => Err(user_error(
            "the manager is sharded already; nothing was written",
            "drop `--sharding`, or scale the manager by its Deployment's replicas (config/manager/manager.yaml)",
        )),
        (false, false) => Err(user_error(
            "the manager is not sharded; nothing was written",
            "drop `--sharding=false`",
        )),
        _ => Ok(()),
    }
}
