//! `kube-scaffold create webhook`: adds admission webhooks (defaulting, validation) for a kind
//! of the project: a module per hook, its route in the manager's webhook server, and its
//! registration in `config/webhook/manifests.yaml`, with the `config/` to deploy them
//! (cert-manager's certificate). Each kind of hook can be added later without `--force`.
//! `--conversion --spoke v2` adds the conversions between a version (the hub) and others,
//! served at `/convert`, and the CRD's `conversion` stanza.

use std::path::Path;

use crate::cli::CreateWebhookArgs;
use crate::error::user_error;
use crate::model::builtin;
use crate::model::gvk::Gvk;
use crate::model::project::{Command, Project, WebhookInputs};
use crate::plugins::{self, base};
use crate::scaffold::tree::Tree;

pub fn run(root: &Path, args: CreateWebhookArgs) -> anyhow::Result<()> {
    let project = Project::load(root)?;
    project.check_compatible()?;
    plugins::resolve(&project)?;
    if !args.spoke.is_empty() && !args.conversion {
        return Err(user_error(
            "`--spoke` names the versions of a conversion webhook",
            "add `--conversion`",
        ));
    }
    if !args.defaulting && !args.programmatic_validation && !args.conversion {
        return Err(user_error(
            "no webhook asked for",
            "pass `--defaulting`, `--programmatic-validation` and/or `--conversion --spoke <version>`",
        ));
    }
    // A kind of the project may share a Kubernetes kind's short group and name (the book's
    // CronJob in `batch`): the project's own comes first.
    let ours =
        Gvk::parse(&args.group, &args.version, &args.kind, &project.init.domain).is_ok_and(|gvk| {
            project
                .resource(&gvk.group, &gvk.version, &gvk.kind)
                .is_some_and(|r| r.api)
        });
    let gvk = match builtin::find(&args.group, &args.version, &args.kind) {
        Some(builtin) if !ours => builtin_kind(builtin, &args)?,
        _ => own_kind(&project, &args)?,
    };
    let spoke = spokes(&project, &gvk, &args)?;
    refuse_existing(&project, &gvk, &args)?;
    let self_signed = certificates(&project, args.self_signed)?;
    let mut tree = Tree::over(root);
    base::read_header(&mut tree)?;
    let inputs = WebhookInputs {
        group: gvk.group,
        version: gvk.version,
        kind: gvk.kind,
        defaulting: args.defaulting,
        validation: args.programmatic_validation,
        conversion: args.conversion,
        spoke,
        self_signed,
        force: args.write.force,
    };
    let how = super::Finish {
        overwrite_edited: args.write.overwrite_edited,
        merge_edited: None,
        dry_run: args.write.dry_run,
        conflict_help: "pass `--force` to scaffold the hook's files again",
    };
    let what = match inputs.conversion {
        true => {
            "write what the conversions do not copy in src/api/<group>/<spoke>/*_conversion.rs (their round-trip tests tell)"
        }
        false => "write your defaults and checks in src/webhook/",
    };
    let certificates = match inputs.self_signed {
        true => {
            "The manager makes the webhooks' certificate itself: no cert-manager needed (docs/webhooks.md)."
        }
        false => "Deploying webhooks needs cert-manager in the cluster (docs/webhooks.md).",
    };
    let next = format!(
        "\nNext: {what}, then generate the manifests with:\n$ make manifests\n{certificates}"
    );
    let command = Command::CreateWebhook(inputs);
    super::scaffold(root, tree, project, command, &how, &next)
}

/// An error if a hook `args` ask for exists already, unless `--force`.
fn refuse_existing(project: &Project, gvk: &Gvk, args: &CreateWebhookArgs) -> anyhow::Result<()> {
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
        if asked && exists && !args.write.force {
            return Err(user_error(
                format!(
                    "`{}/{} {}` has its `{flag}` webhook already; nothing was written",
                    gvk.group, gvk.version, gvk.kind
                ),
                "pass `--force` to scaffold its file again, or drop the flag",
            ));
        }
    }
    Ok(())
}

/// The spokes `--conversion --spoke` asks for, checked: other versions of the kind, without a
/// conversion yet (unless `--force`), around the kind's one hub.
fn spokes(project: &Project, gvk: &Gvk, args: &CreateWebhookArgs) -> anyhow::Result<Vec<String>> {
    if !args.conversion {
        return Ok(Vec::new());
    }
    let (group, hub, kind) = (&gvk.group, &gvk.version, &gvk.kind);
    let others: Vec<String> = project
        .resources()
        .into_iter()
        .filter(|r| r.api && (&r.group, &r.kind) == (group, kind) && r.version != *hub)
        .map(|r| r.version)
        .collect();
    let create_api = |version: &str| {
        format!("kube-scaffold create api --group {group} --version {version} --kind {kind}")
    };
    if args.spoke.is_empty() {
        let help = match others.is_empty() {
            true => format!("add a version first: `{}`", create_api("v2")),
            false => format!("pass `--spoke {}`", others.join(",")),
        };
        return Err(user_error(
            format!("`--conversion` needs the versions of {kind} to convert to and from {hub}"),
            help,
        ));
    }
    let earlier: Vec<&WebhookInputs> = project
        .commands
        .iter()
        .filter_map(Command::webhook)
        .filter(|w| w.conversion && (&w.group, &w.kind) == (group, kind))
        .collect();
    if let Some(other) = earlier.iter().find(|w| w.version != *hub) {
        return Err(user_error(
            format!("{kind}'s conversions go through {}, its hub", other.version),
            format!("pass `--version {}`: a kind has one hub", other.version),
        ));
    }
    let mut spokes: Vec<String> = Vec::new();
    for spoke in &args.spoke {
        if spoke == hub {
            return Err(user_error(
                format!("{spoke} is the hub (`--version`), not a spoke"),
                "pass the other versions with `--spoke`",
            ));
        }
        if !others.contains(spoke) {
            return Err(user_error(
                format!("{kind} has no version `{spoke}`"),
                format!("add it first: `{}`", create_api(spoke)),
            ));
        }
        if earlier.iter().any(|w| w.spoke.contains(spoke)) && !args.write.force {
            return Err(user_error(
                format!("{kind} {spoke} has its conversions already; nothing was written"),
                "pass `--force` to scaffold its file again, or drop that `--spoke`",
            ));
        }
        if !spokes.contains(spoke) {
            spokes.push(spoke.clone());
        }
    }
    Ok(spokes)
}

/// A kind Kubernetes defines (`core/v1 Pod`): its hooks need no type of the project.
fn builtin_kind(builtin: &builtin::CoreKind, args: &CreateWebhookArgs) -> anyhow::Result<Gvk> {
    if args.conversion {
        return Err(user_error(
            format!(
                "`{}` is Kubernetes' own kind: its versions are converted by the API server",
                builtin.flag()
            ),
            "drop `--conversion`; conversions are for the kinds of this project",
        ));
    }
    Ok(Gvk {
        group: builtin::spelled_group(builtin.group).into(),
        version: builtin.version.into(),
        kind: builtin.kind.into(),
    })
}

/// A kind of the project, another project's whose CRD it copied (`--external-api-crd`), or
/// one it adopted (`--from-crd`): one `create api` made its Rust type.
fn own_kind(project: &Project, args: &CreateWebhookArgs) -> anyhow::Result<Gvk> {
    let external = project.commands.iter().filter_map(Command::api).any(|a| {
        a.external().is_some()
            && (&a.group, &a.version, &a.kind) == (&args.group, &args.version, &args.kind)
    });
    if external {
        let gvk = Gvk::parse_external(&args.group, &args.version, &args.kind)?;
        if args.conversion {
            return Err(user_error(
                format!(
                    "`{}` is another project's kind: that project's conversion webhook converts its versions",
                    gvk.kind
                ),
                "drop `--conversion`; conversions are for the kinds this project defines",
            ));
        }
        return Ok(gvk);
    }
    let gvk = Gvk::parse(&args.group, &args.version, &args.kind, &project.init.domain)?;
    let same = |group: &str, version: &str, kind: &str| {
        (group, version, kind) == (&gvk.group, &gvk.version, &gvk.kind)
    };
    let resources = project.resources();
    if !resources
        .iter()
        .any(|r| r.api && same(&r.group, &r.version, &r.kind))
    {
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
    }
    Ok(gvk)
}

/// Whether the manager makes the webhooks' certificates: as the project's first webhook chose
/// (`--self-signed`), or as asked by this one if it is the first.
fn certificates(project: &Project, self_signed: bool) -> anyhow::Result<bool> {
    let Some(first) = project.commands.iter().find_map(Command::webhook) else {
        return Ok(self_signed);
    };
    if self_signed && !first.self_signed {
        return Err(user_error(
            "this project's webhooks have cert-manager's certificates (its first `create webhook` chose)",
            "drop `--self-signed`; docs/webhooks.md says how to move a project to the manager's own certificates",
        ));
    }
    Ok(first.self_signed)
}
