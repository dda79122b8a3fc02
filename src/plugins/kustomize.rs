//! The kustomize plugin: the `config/` tree, as kubebuilder's `kustomize/v2` lays it out:
//! `default`, `manager`, `rbac`, `crd`, `samples`, `prometheus`, `network-policy`.

use crate::codegen::kind_types::KindTypes;
use crate::codegen::manifests;
use crate::model::project::EditInputs;
use crate::scaffold::marker::Marker;
use crate::scaffold::plan::{Descriptor, IfExists, Plan};
use crate::scaffold::tree::Tree;
use crate::ui;

use super::base::own_files;
use super::multigroup::Grouped;
use super::{
    ApiContext, ApiPlan, Certificates, InitContext, Plugin, Source, WebhookContext, paths,
};

const DEFAULT: &str = "config/default/kustomization.yaml";
const CRD: &str = "config/crd/kustomization.yaml";
const SAMPLES: &str = "config/samples/kustomization.yaml";
const RBAC: &str = "config/rbac/kustomization.yaml";

pub const DEFAULT_CRD: Marker = Marker::new(DEFAULT, "crd");
pub const CRD_RESOURCES: Marker = Marker::new(CRD, "crdkustomizeresource");
pub const SAMPLE_RESOURCES: Marker = Marker::new(SAMPLES, "manifestskustomizesamples");
pub const RBAC_ROLES: Marker = Marker::new(RBAC, "rbac-roles");
pub const DEFAULT_WEBHOOK: Marker = Marker::new(DEFAULT, "webhook");
pub const DEFAULT_PATCHES: Marker = Marker::new(DEFAULT, "default-patches");
/// In the `replacements` that the first webhook adds to config/default.
pub const CA_INJECTION: Marker = Marker::new(DEFAULT, "ca-injection");

/// The files of config/crd the first kind adds.
#[rustfmt::skip]
const CRD_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/api/config/crd/kustomization.yaml.tera", CRD, IfExists::Skip).with_markers(&[CRD_RESOURCES]),
    Descriptor::new("kustomize/api/config/crd/kustomizeconfig.yaml.tera", "config/crd/kustomizeconfig.yaml", IfExists::Skip),
];

/// config/samples' kustomization, which the first kind with a sample adds.
const SAMPLES_KUSTOMIZATION: Descriptor = Descriptor::new(
    "kustomize/api/config/samples/kustomization.yaml.tera",
    SAMPLES,
    IfExists::Skip,
)
.with_markers(&[SAMPLE_RESOURCES]);

/// The files the first webhook adds.
#[rustfmt::skip]
const WEBHOOK_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/webhook/config/webhook/kustomization.yaml.tera", "config/webhook/kustomization.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhook/kustomizeconfig.yaml.tera", "config/webhook/kustomizeconfig.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhook/service.yaml.tera", "config/webhook/service.yaml", IfExists::Skip),
];

/// The first webhook's PodDisruptionBudget.
const WEBHOOK_PDB: Descriptor = Descriptor::new(
    "kustomize/webhook/config/webhook/pdb.yaml.tera",
    "config/webhook/pdb.yaml",
    IfExists::Skip,
);

/// The first webhook's files for cert-manager's certificates.
#[rustfmt::skip]
const CERT_MANAGER_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/webhook/config/certmanager/kustomization.yaml.tera", "config/certmanager/kustomization.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/certmanager/kustomizeconfig.yaml.tera", "config/certmanager/kustomizeconfig.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/certmanager/issuer.yaml.tera", "config/certmanager/issuer.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/certmanager/certificate-webhook.yaml.tera", "config/certmanager/certificate-webhook.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/default/manager_webhook_patch.yaml.tera", WEBHOOK_MANAGER_PATCH, IfExists::Skip),
];

/// The first webhook's files for the certificates the manager makes (`--self-signed`).
#[rustfmt::skip]
const SELF_SIGNED_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/webhook/config/webhookcerts/kustomization.yaml.tera", "config/webhookcerts/kustomization.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhookcerts/kustomizeconfig.yaml.tera", "config/webhookcerts/kustomizeconfig.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhookcerts/role.yaml.tera", "config/webhookcerts/role.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhookcerts/role_binding.yaml.tera", "config/webhookcerts/role_binding.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/webhookcerts/cluster_role.yaml.tera", CERTS_CLUSTER_ROLE, IfExists::Skip).with_markers(&[CERTS_CRDS]),
    Descriptor::new("kustomize/webhook/config/webhookcerts/cluster_role_binding.yaml.tera", "config/webhookcerts/cluster_role_binding.yaml", IfExists::Skip),
    Descriptor::new("kustomize/webhook/config/default/manager_webhook_certs_patch.yaml.tera", WEBHOOK_MANAGER_PATCH, IfExists::Skip),
];

const CERTS_CLUSTER_ROLE: &str = "config/webhookcerts/cluster_role.yaml";
/// In the ClusterRole of the manager's certificates: a rule per CRD it converts.
pub const CERTS_CRDS: Marker = Marker::new(CERTS_CLUSTER_ROLE, "webhook-certs-crds");

/// What the first webhook adds to config/default when the manager makes the certificates:
/// the manager's patch, and the replacement that gives it the webhook Service's name.
const SELF_SIGNED_SECTIONS: &str = "kustomize/webhook/fragments/default_self_signed.yaml.tera";

/// What the first webhook adds to config/default: the manager's patch, and the replacements
/// that name the webhook Service in the Certificate and have cert-manager inject its CA.
const WEBHOOK_SECTIONS: &str = "kustomize/webhook/fragments/default_cert_manager.yaml.tera";

/// The replacements that have cert-manager inject its CA into the objects of a `kind` (the one
/// `name`d, if given): webhook configurations, CRDs.
const CA_INJECTION_FRAGMENT: &str = "kustomize/webhook/fragments/default_ca_injection.yaml.tera";

/// The rule of the manager's certificates ClusterRole on the CRD `crd` (it also watches it,
/// to set a removed CA bundle again).
const CRD_RULE: &str = "kustomize/webhook/fragments/webhookcerts_crd_rule.yaml.tera";

/// The manager's Deployment, and the binding of its role: `edit --namespaced` changes both.
const MANAGER: Descriptor = Descriptor::new(
    "kustomize/init/config/manager/manager.yaml.tera",
    "config/manager/manager.yaml",
    IfExists::Error,
);
const ROLE_BINDING: Descriptor = Descriptor::new(
    "kustomize/init/config/rbac/role_binding.yaml.tera",
    "config/rbac/role_binding.yaml",
    IfExists::Error,
);

/// The webhook patch of the manager's Deployment (the certificate, the port, the replicas).
const WEBHOOK_MANAGER_PATCH: &str = "config/default/manager_webhook_patch.yaml";

/// A sharded manager's PodDisruptionBudget, where no webhook's budget selects its pods already.
const MANAGER_PDB: Descriptor = Descriptor::new(
    "kustomize/init/config/manager/pdb.yaml.tera",
    "config/manager/pdb.yaml",
    IfExists::Overwrite,
);
const MANAGER_KUSTOMIZATION: &str = "config/manager/kustomization.yaml";
const WEBHOOK_KUSTOMIZATION: &str = "config/webhook/kustomization.yaml";

/// The Leases the manager may use: `edit --sharding` adds the shards' (list, delete).
const LEADER_ELECTION_ROLE: Descriptor = Descriptor::new(
    "kustomize/init/config/rbac/leader_election_role.yaml.tera",
    "config/rbac/leader_election_role.yaml",
    IfExists::Error,
);

/// The files `init` writes.
#[rustfmt::skip]
const INIT_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/init/config/default/kustomization.yaml.tera", DEFAULT, IfExists::Error).with_markers(&[DEFAULT_CRD, DEFAULT_WEBHOOK, DEFAULT_PATCHES]),
    Descriptor::new("kustomize/init/config/default/metrics_service.yaml.tera", "config/default/metrics_service.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/manager/kustomization.yaml.tera", "config/manager/kustomization.yaml", IfExists::Error),
    MANAGER,
    Descriptor::new("kustomize/init/config/prometheus/kustomization.yaml.tera", "config/prometheus/kustomization.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/prometheus/monitor.yaml.tera", "config/prometheus/monitor.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/network-policy/kustomization.yaml.tera", "config/network-policy/kustomization.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/network-policy/allow-metrics-traffic.yaml.tera", "config/network-policy/allow-metrics-traffic.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/rbac/kustomization.yaml.tera", RBAC, IfExists::Error).with_markers(&[RBAC_ROLES]),
    Descriptor::new("kustomize/init/config/rbac/service_account.yaml.tera", "config/rbac/service_account.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/rbac/role.yaml.tera", manifests::ROLE_FILE, IfExists::Error),
    ROLE_BINDING,
    LEADER_ELECTION_ROLE,
    Descriptor::new("kustomize/init/config/rbac/leader_election_role_binding.yaml.tera", "config/rbac/leader_election_role_binding.yaml", IfExists::Error),
];

/// The files `init` writes for who may read /metrics over HTTPS.
#[rustfmt::skip]
const METRICS_AUTH_FILES: &[Descriptor] = &[
    Descriptor::new("kustomize/init/config/rbac/metrics_auth_role.yaml.tera", "config/rbac/metrics_auth_role.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/rbac/metrics_auth_role_binding.yaml.tera", "config/rbac/metrics_auth_role_binding.yaml", IfExists::Error),
    Descriptor::new("kustomize/init/config/rbac/metrics_reader_role.yaml.tera", "config/rbac/metrics_reader_role.yaml", IfExists::Error),
];

/// Every table of files above.
const DESCRIPTORS: &[&[Descriptor]] = &[
    INIT_FILES,
    METRICS_AUTH_FILES,
    CRD_FILES,
    std::slice::from_ref(&SAMPLES_KUSTOMIZATION),
    WEBHOOK_FILES,
    std::slice::from_ref(&WEBHOOK_PDB),
    std::slice::from_ref(&MANAGER_PDB),
    CERT_MANAGER_FILES,
    SELF_SIGNED_FILES,
];

/// The kustomize plugin.
pub struct Kustomize;

impl Plugin for Kustomize {
    fn key(&self) -> &'static str {
        "kustomize.common.kube-scaffold.io/v2"
    }

    fn init(&self, plan: &mut Plan, _: &InitContext) {
        plan.add_all(INIT_FILES);
        plan.add_all(METRICS_AUTH_FILES);
    }

    fn create_api(
        &self,
        plan: &mut Plan,
        p: &ApiPlan,
        c: &ApiContext,
        tree: &mut Tree,
    ) -> anyhow::Result<()> {
        let own = own_files(p.force);
        if p.resource {
            let crd_base = paths::crd_base(&c.qualified_group, &c.plural);
            let crd = paths::crd(&c.qualified_group, &c.plural);
            match &p.types {
                // The user's CRD, until `make manifests` writes it from the types.
                KindTypes::Adopted { manifest, .. } => {
                    plan.computed(crd, manifest.clone());
                }
                // Another version of a kind joins its CRD.
                _ => plan.yaml_merged(
                    "kustomize/api/config/crd/crd.json.tera",
                    crd,
                    manifests::HEADER,
                    manifests::add_crd_version,
                ),
            }
            plan.add_all(CRD_FILES);
            // An adopted kind's spec is the user's: no sample can be guessed that validates.
            if c.source != Source::Adopted {
                plan.add(&SAMPLES_KUSTOMIZATION);
                plan.file(
                    "kustomize/api/config/samples/sample.yaml.tera",
                    paths::sample(&c.sample_file),
                    own,
                );
                plan.insert(SAMPLE_RESOURCES, format!("- {}", c.sample_file));
            }
            // The roles are the kind's, whatever the version: the first version made them.
            if !p.new_version {
                plan.file(
                    "kustomize/api/config/rbac/editor_role.yaml.tera",
                    paths::kind_role(&c.role_prefix, "editor"),
                    own,
                );
                plan.file(
                    "kustomize/api/config/rbac/viewer_role.yaml.tera",
                    paths::kind_role(&c.role_prefix, "viewer"),
                    own,
                );
            }
            plan.insert(DEFAULT_CRD, "- ../crd");
            plan.insert(CRD_RESOURCES, format!("- {crd_base}"));
            plan.insert(
                RBAC_ROLES,
                format!(
                    "- {}\n- {}",
                    paths::kind_role_base(&c.role_prefix, "editor"),
                    paths::kind_role_base(&c.role_prefix, "viewer")
                ),
            );
        }
        if p.controller {
            plan_role(plan, p, c, tree)?;
        }
        Ok(())
    }

    fn create_webhook(&self, plan: &mut Plan, c: &WebhookContext) -> anyhow::Result<()> {
        plan_webhook(plan, c);
        Ok(())
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        DESCRIPTORS
    }

    /// `--namespaced`: the manager watches its own namespace (`WATCH_NAMESPACE`), bound to a
    /// Role there, or every namespace with a ClusterRole again. `--sharding`: the manager runs
    /// sharded, 3 replicas, and may list and delete the shards' Leases.
    fn edit(
        &self,
        plan: &mut Plan,
        c: &InitContext,
        edit: &EditInputs,
        tree: &mut Tree,
    ) -> anyhow::Result<()> {
        if let Some(moves) = &c.moves {
            regroup_roles(plan, tree, &moves.roles)?;
        }
        if let Some(sharding) = edit.sharding {
            for file in [MANAGER, LEADER_ELECTION_ROLE] {
                plan.file(file.template, file.dest, IfExists::Overwrite);
            }
            sharded_webhook_replicas(plan, tree, sharding)?;
            manager_budget(plan, tree, sharding)?;
            // `make manifests` of a sharded manager grants `patch` on the watched kinds; it
            // takes it back after `--sharding=false` (the runtime's feature stays on).
            if sharding {
                let role = tree
                    .read(manifests::ROLE_FILE)?
                    .and_then(manifests::role_sharded);
                match role {
                    Some(role) => plan.computed(manifests::ROLE_FILE, role),
                    None => ui::note(&format!(
                        "{} is not as `make manifests` wrote it: run `make manifests` to let the manager label its objects",
                        manifests::ROLE_FILE
                    )),
                }
            }
        }
        if edit.namespaced.is_none() {
            return Ok(());
        }
        for file in [MANAGER, ROLE_BINDING] {
            plan.file(file.template, file.dest, IfExists::Overwrite);
        }
        let role = tree
            .read(manifests::ROLE_FILE)?
            .and_then(|text| manifests::role_kind(text, c.namespaced_manager));
        match role {
            Some(role) => plan.computed(manifests::ROLE_FILE, role),
            None => ui::note(&format!(
                "{} is not as `make manifests` wrote it: run `make manifests` to write the manager's role",
                manifests::ROLE_FILE
            )),
        }
        Ok(())
    }
}

/// The replicas the webhook patch of config/default asks for (it replaces the Deployment's):
/// 3 for a sharded manager, 2 otherwise, if the patch is as written.
fn sharded_webhook_replicas(plan: &mut Plan, tree: &mut Tree, sharded: bool) -> anyhow::Result<()> {
    let replicas = |n| format!("- op: replace\n  path: /spec/replicas\n  value: {n}\n");
    let (from, to) = match sharded {
        true => (replicas(2), replicas(3)),
        false => (replicas(3), replicas(2)),
    };
    if let Some(text) = tree.read(WEBHOOK_MANAGER_PATCH)?
        && text.matches(&from).count() == 1
    {
        plan.computed(WEBHOOK_MANAGER_PATCH, text.replace(&from, &to));
    }
    Ok(())
}

/// A sharded manager's budget, config/manager/pdb.yaml: a drain evicts one replica at a time.
/// Only one budget may select a pod (the eviction API refuses it otherwise), so a project with
/// webhooks keeps theirs (config/webhook/pdb.yaml), and `create webhook` adds none when the
/// manager is sharded. `--sharding=false` removes the budget, unless webhooks rely on it.
fn manager_budget(plan: &mut Plan, tree: &mut Tree, sharded: bool) -> anyhow::Result<()> {
    if tree.read(WEBHOOK_KUSTOMIZATION)?.is_some() {
        return Ok(());
    }
    let (without, with) = ("- manager.yaml\n", "- manager.yaml\n- pdb.yaml\n");
    let Some(text) = tree.read(MANAGER_KUSTOMIZATION)?.map(str::to_string) else {
        return Ok(());
    };
    let listed = text.contains(with);
    if sharded {
        plan.add(&MANAGER_PDB);
        if listed {
            return Ok(());
        }
        match text.matches(without).count() {
            1 => plan.computed(MANAGER_KUSTOMIZATION, text.replacen(without, with, 1)),
            _ => ui::note(&format!(
                "{MANAGER_KUSTOMIZATION} is not as `init` wrote it: add `- pdb.yaml` to its resources to deploy the manager's PodDisruptionBudget"
            )),
        }
    } else if listed {
        plan.remove(MANAGER_PDB.dest);
        plan.computed(MANAGER_KUSTOMIZATION, text.replacen(with, without, 1));
    }
    Ok(())
}

/// `edit --multigroup`'s share of `config/`: the kinds' editor and viewer roles renamed after
/// their groups (`webapp_guestbook_editor_role.yaml`; the roles' names stay), and listed so.
fn regroup_roles(plan: &mut Plan, tree: &mut Tree, roles: &[Grouped]) -> anyhow::Result<()> {
    let mut renamed = Vec::new();
    for g in roles {
        let prefix = format!("{}_{}", g.group, g.module);
        for role in ["editor", "viewer"] {
            plan.moved(
                paths::kind_role(&g.module, role),
                paths::kind_role(&prefix, role),
            );
            let (from, to) = (
                paths::kind_role_base(&g.module, role),
                paths::kind_role_base(&prefix, role),
            );
            renamed.push((format!("- {from}"), format!("- {to}")));
        }
    }
    let Some(text) = tree.read(RBAC)? else {
        return Ok(());
    };
    let lines = text.split_inclusive('\n').map(|line| {
        let entry = line.trim();
        match renamed.iter().find(|(from, _)| *from == entry) {
            Some((from, to)) => line.replacen(from.as_str(), to, 1),
            None => line.to_string(),
        }
    });
    plan.computed(RBAC, lines.collect());
    Ok(())
}

/// The webhook plugin's share of `config/`: the Service, the configurations, cert-manager's
/// certificate, and config/default wired to them.
pub fn plan_webhook(plan: &mut Plan, c: &WebhookContext) {
    plan.add_all(WEBHOOK_FILES);
    // Two replicas (the webhook patches of config/default) and their budget; a sharded
    // manager's budget (config/manager/pdb.yaml) keeps them already.
    if !c.sharded_manager {
        plan.add(&WEBHOOK_PDB);
    }
    plan.computed(WEBHOOK_MANIFESTS, manifests::webhook_manifests(&c.hooks));
    let crd = format!("{}.{}", c.plural, c.qualified_group);
    if !c.conversions.is_empty() {
        plan.yaml_patched(
            "kustomize/webhook/config/crd/conversion.json.tera",
            paths::crd(&c.qualified_group, &c.plural),
            manifests::HEADER,
            manifests::set_conversion,
        );
    }
    if c.certificates == Certificates::SelfSigned {
        plan.add_all(SELF_SIGNED_FILES);
        plan.insert(DEFAULT_WEBHOOK, "- ../webhook\n- ../webhookcerts");
        plan.insert_template(DEFAULT_PATCHES, SELF_SIGNED_SECTIONS, &[]);
        if !c.conversions.is_empty() {
            plan.insert_template(CERTS_CRDS, CRD_RULE, &[("crd", &crd)]);
        }
        return;
    }
    plan.add_all(CERT_MANAGER_FILES);
    plan.insert(DEFAULT_WEBHOOK, "- ../webhook\n- ../certmanager");
    plan.insert_template(DEFAULT_PATCHES, WEBHOOK_SECTIONS, &[]);
    // A fragment of its own: what is inserted above it must not split the sections above.
    plan.insert(DEFAULT_PATCHES, "# +kube-scaffold:scaffold:ca-injection");
    for (mutating, kind) in [
        (true, "MutatingWebhookConfiguration"),
        (false, "ValidatingWebhookConfiguration"),
    ] {
        if c.hooks.iter().any(|h| h.mutating == mutating) {
            let vars = [("kind", kind), ("name", "")];
            plan.insert_template(CA_INJECTION, CA_INJECTION_FRAGMENT, &vars);
        }
    }
    if !c.conversions.is_empty() {
        let vars = [("kind", "CustomResourceDefinition"), ("name", crd.as_str())];
        plan.insert_template(CA_INJECTION, CA_INJECTION_FRAGMENT, &vars);
    }
}

/// The webhook configurations, as `make manifests` writes them.
pub const WEBHOOK_MANIFESTS: &str = "config/webhook/manifests.yaml";

/// The manager's ClusterRole with the rules of the kind's controller, if `role.yaml` is still
/// as `make manifests` wrote it; else a note, and the file is left for `make manifests`.
fn plan_role(plan: &mut Plan, p: &ApiPlan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()> {
    let role = tree
        .read(manifests::ROLE_FILE)?
        .and_then(|text| manifests::role_with(text, &c.qualified_group, &c.plural, &p.role_rules));
    match role {
        Some(role) => plan.computed(manifests::ROLE_FILE, role),
        None => ui::note(&format!(
            "{} is not as `make manifests` wrote it: run `make manifests` to add the rules of {}",
            manifests::ROLE_FILE,
            c.kind
        )),
    }
    Ok(())
}
