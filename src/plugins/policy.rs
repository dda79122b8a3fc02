//! The project-wide rules a command's files depend on: what a `create api` targets (its API
//! group, a built-in kind, what its controller controls), the RBAC rules of every controller of
//! the project, and every webhook's hook as its manifests list it.

use crate::codegen::manifests;
use crate::model::api::ApiInputs;
use crate::model::builtin;
use crate::model::gvk;
use crate::model::owned::Owned;
use crate::model::project::{Command, InitInputs, Resource, WebhookInputs, resources_of};

/// What a `create api` command is about: the API group Kubernetes sees, the built-in kind
/// (if it is one), and what its controller's rules cover.
pub(super) struct Target {
    pub(super) group: String,
    pub(super) builtin: Option<&'static builtin::CoreKind>,
    /// The kind's types came from a CRD file (another project's, or adopted): its controller
    /// is the generic one, which writes no status.
    pub(super) from_file: bool,
    pub(super) controls: manifests::Controls,
}

/// `known`: the kinds of the commands before `api`.
pub(super) fn target(
    init: &InitInputs,
    api: &ApiInputs,
    known: &[Resource],
) -> anyhow::Result<Target> {
    if api.builtin() {
        let Some(k) = builtin::find(&api.group, &api.version, &api.kind) else {
            return Err(crate::error::user_error(
                format!(
                    "PROJECT names the built-in kind `{}/{}/{}`, which k8s-openapi does not have",
                    api.group, api.version, api.kind
                ),
                "fix or remove that command in PROJECT",
            ));
        };
        return Ok(Target {
            group: k.group.to_string(),
            builtin: Some(k),
            from_file: false,
            controls: manifests::Controls::Builtin,
        });
    }
    let adopted_earlier = known
        .iter()
        .any(|r| r.adopted && r.group == api.group && r.kind == api.kind);
    let from_file = api.external().is_some() || api.adopted().is_some() || adopted_earlier;
    let controls = match from_file {
        true => manifests::Controls::Builtin,
        false => manifests::Controls::Kind {
            finalizer: api.finalizer,
        },
    };
    Ok(Target {
        group: gvk::qualified_group(&api.group, &init.domain),
        builtin: None,
        from_file,
        controls,
    })
}

/// The RBAC rules of every controller of the project once `api` is scaffolded after
/// `earlier`, as their `rbac_rules` declare them: the last scaffold of a kind's controller
/// counts.
pub(super) fn project_rules(
    init: &InitInputs,
    earlier: &[Command],
    api: &ApiInputs,
) -> anyhow::Result<Vec<manifests::Rule>> {
    // Each `create api` with the index of the first command after it.
    let all: Vec<(usize, &ApiInputs)> = earlier
        .iter()
        .enumerate()
        .filter_map(|(i, command)| command.api().map(|a| (i + 1, a)))
        .chain([(earlier.len() + 1, api)])
        .collect();
    let same = |a: &ApiInputs, b: &ApiInputs| {
        (&a.group, &a.version, &a.kind) == (&b.group, &b.version, &b.kind)
    };
    let mut rules = Vec::new();
    for (i, (after, a)) in all.iter().enumerate() {
        if !a.controller || all[i + 1..].iter().any(|(_, b)| b.controller && same(a, b)) {
            continue;
        }
        let known = resources_of(&earlier[..(after - 1).min(earlier.len())]);
        let Target {
            group, controls, ..
        } = target(init, a, &known)?;
        let children = a
            .owns
            .iter()
            .map(|flag| {
                let owned = Owned::parse(flag, &init.domain, &known)?;
                Ok((owned.api_group().to_string(), owned.plural().to_string()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        rules.extend(manifests::controller_rules(
            &group, &a.plural, controls, &children,
        ));
    }
    Ok(rules)
}

/// The hooks of `webhook` (after `earlier`), as its templates and the manifests see them.
pub(super) fn webhook_hook(
    init: &InitInputs,
    webhook: &WebhookInputs,
    earlier: &[Command],
    mutating: bool,
) -> anyhow::Result<manifests::Hook> {
    if let Some(builtin) = builtin_of(webhook, earlier) {
        let mut hook = manifests::Hook::new(
            mutating,
            builtin.group,
            builtin.version,
            builtin.kind,
            builtin.plural,
        );
        hook.excluded_namespaces = excluded_namespaces(init);
        return Ok(hook);
    }
    let external = is_external(webhook, earlier);
    let resource = resources_of(earlier)
        .into_iter()
        .find(|r| {
            (r.api || external)
                && (&r.group, &r.version, &r.kind)
                    == (&webhook.group, &webhook.version, &webhook.kind)
        })
        .ok_or_else(|| {
            crate::error::user_error(
                format!(
                    "PROJECT has a webhook for `{}/{} {}`, which no `create api` made",
                    webhook.group, webhook.version, webhook.kind
                ),
                "fix or remove that command in PROJECT",
            )
        })?;
    let mut hook = manifests::Hook::new(
        mutating,
        &gvk::qualified_group(&webhook.group, &init.domain),
        &webhook.version,
        &webhook.kind,
        &resource.plural,
    );
    if external {
        hook.excluded_namespaces = excluded_namespaces(init);
    }
    Ok(hook)
}

/// Whether `webhook` is for another project's kind (`create api --external-api-crd`).
pub(super) fn is_external(webhook: &WebhookInputs, earlier: &[Command]) -> bool {
    earlier.iter().filter_map(Command::api).any(|a| {
        a.external().is_some()
            && (&a.group, &a.version, &a.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    })
}

/// Whether `webhook` is for a kind the project adopted from a CRD (`create api --from-crd`).
pub(super) fn is_adopted(webhook: &WebhookInputs, earlier: &[Command]) -> bool {
    resources_of(earlier).into_iter().any(|r| {
        r.adopted
            && (&r.group, &r.version, &r.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    })
}

/// The kind Kubernetes defines that `webhook` is for, unless the project has a kind of that
/// name (`earlier`).
pub(super) fn builtin_of(
    webhook: &WebhookInputs,
    earlier: &[Command],
) -> Option<&'static builtin::CoreKind> {
    let own = resources_of(earlier).into_iter().any(|r| {
        r.api
            && (&r.group, &r.version, &r.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    });
    match own {
        true => None,
        false => builtin::find(&webhook.group, &webhook.version, &webhook.kind),
    }
}

/// The namespaces a hook on a kind Kubernetes or another project defines leaves out: the
/// cluster's and the manager's (config/default's `<project>-system`), as its template lists
/// them (`LEFT_OUT`).
pub(super) fn excluded_namespaces(init: &InitInputs) -> Vec<String> {
    vec![
        "kube-system".into(),
        format!("{}-system", init.project_name),
    ]
}

/// Every hook `commands` made, in the order `webhook::hooks()` lists them: a hook made again
/// (`--force`) keeps its place.
pub(super) fn project_hooks(
    init: &InitInputs,
    commands: &[Command],
) -> anyhow::Result<Vec<manifests::Hook>> {
    let mut hooks: Vec<manifests::Hook> = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let Some(webhook) = command.webhook() else {
            continue;
        };
        for (wanted, mutating) in [(webhook.defaulting, true), (webhook.validation, false)] {
            if !wanted {
                continue;
            }
            let hook = webhook_hook(init, webhook, &commands[..i], mutating)?;
            if !hooks.iter().any(|h| h.name == hook.name) {
                hooks.push(hook);
            }
        }
    }
    Ok(hooks)
}
