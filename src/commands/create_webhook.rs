//! `kube-scaffold create webhook`: adds admission webhooks (defaulting, validation) for a kind
//! of the project: a module per hook, its route in the manager's webhook server, and its
//! registration in `config/webhook/manifests.yaml`, with the `config/` to deploy them
//! (cert-manager's certificate). Each kind of hook can be added later without `--force`.

use std::path::Path;

use crate::cli::CreateWebhookArgs;
use crate::error::user_error;
use crate::model::gvk::Gvk;
use crate::model::project::{Command, Project, WebhookInputs};
use crate::plugins::{self, base};
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;

pub fn run(root: &Path, args: CreateWebhookArgs) -> anyhow::Result<()> {
    let project = Project::load(root)?;
    project.check_compatible()?;
    let bundle = plugins::resolve(&project)?;
    if args.conversion || !args.spoke.is_empty() {
        return Err(user_error(
            "conversion webhooks are not there yet in kube-scaffold",
            "scaffold the defaulting and validation webhooks (`--defaulting`, `--programmatic-validation`); meanwhile the versions of a kind share one schema (`conversion: None`)",
        ));
    }
    if !args.defaulting && !args.programmatic_validation {
        return Err(user_error(
            "no webhook asked for",
            "pass `--defaulting` and/or `--programmatic-validation`",
        ));
    }
    let gvk = Gvk::parse(&args.group, &args.version, &args.kind, &project.init.domain)?;
    let resources = project.resources();
    let Some(resource) = resources.iter().find(|r| {
        r.api && (&r.group, &r.version, &r.kind) == (&gvk.group, &gvk.version, &gvk.kind)
    }) else {
        return Err(user_error(
            format!(
                "no kind `{}/{} {}` in this project: a webhook needs the kind's type",
                gvk.group, gvk.version, gvk.kind
            ),
            format!(
                "create it first: `kube-scaffold create api --group {} --version {} --kind {}`",
                gvk.group, gvk.version, gvk.kind
            ),
        ));
    };
    if resource.adopted {
        return Err(user_error(
            format!(
                "`{}` was adopted from a CRD, whose types kopium wrote: webhooks for it are not there yet",
                gvk.kind
            ),
            "write the webhook by hand in src/webhook/, after the scaffolded ones of other kinds",
        ));
    }
    let had = |wanted: fn(&WebhookInputs) -> bool| {
        project
            .commands
            .iter()
            .filter_map(Command::webhook)
            .any(|w| {
                (&w.group, &w.version, &w.kind) == (&gvk.group, &gvk.version, &gvk.kind)
                    && wanted(w)
            })
    };
    for (asked, exists, flag) in [
        (args.defaulting, had(|w| w.defaulting), "--defaulting"),
        (
            args.programmatic_validation,
            had(|w| w.validation),
            "--programmatic-validation",
        ),
    ] {
        if asked && exists && !args.force {
            return Err(user_error(
                format!(
                    "`{}/{} {}` has its `{flag}` webhook already; nothing was written",
                    gvk.group, gvk.version, gvk.kind
                ),
                "pass `--force` to scaffold its file again, or drop the flag",
            ));
        }
    }
    let mut tree = Tree::over(root);
    base::read_header(&mut tree)?;
    let inputs = WebhookInputs {
        group: gvk.group,
        version: gvk.version,
        kind: gvk.kind,
        defaulting: args.defaulting,
        validation: args.programmatic_validation,
        force: args.force,
    };
    let templates = Templates::load()?;
    let report = plugins::create_webhook(
        &bundle,
        &project.init,
        &inputs,
        &project.commands,
        &templates,
        &mut tree,
    )?;
    let how = super::Finish {
        overwrite_edited: args.overwrite_edited,
        dry_run: args.dry_run,
        conflict_help: "pass `--force` to scaffold the hook's files again",
    };
    let next = "\nNext: write your defaults and checks in src/webhook/, then generate the manifests with:\n$ make manifests\nDeploying webhooks needs cert-manager in the cluster (docs/webhooks.md).";
    let command = Command::CreateWebhook(inputs);
    super::record(root, tree, &report, project, command, &how, next)
}
