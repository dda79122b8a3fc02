//! The kustomize plugin: the `config/` tree, as kubebuilder's `kustomize/v2` lays it out:
//! `default`, `manager`, `rbac`, `crd`, `samples`, `prometheus`, `network-policy`.

use super::manifests;
use crate::scaffold::marker::Marker;
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::tree::Tree;
use crate::ui;

use super::base::own_files;
use super::{ApiContext, InitContext, Plugin, WebhookContext};

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

/// The files the first webhook adds: (template under `scaffolds/`, destination).
#[rustfmt::skip]
const WEBHOOK_FILES: &[(&str, &str)] = &[
    ("v2/webhook/config/webhook/kustomization.yaml.tera", "config/webhook/kustomization.yaml"),
    ("v2/webhook/config/webhook/kustomizeconfig.yaml.tera", "config/webhook/kustomizeconfig.yaml"),
    ("v2/webhook/config/webhook/service.yaml.tera", "config/webhook/service.yaml"),
];

/// The first webhook's files for cert-manager's certificates.
#[rustfmt::skip]
const CERT_MANAGER_FILES: &[(&str, &str)] = &[
    ("v2/webhook/config/certmanager/kustomization.yaml.tera", "config/certmanager/kustomization.yaml"),
    ("v2/webhook/config/certmanager/kustomizeconfig.yaml.tera", "config/certmanager/kustomizeconfig.yaml"),
    ("v2/webhook/config/certmanager/issuer.yaml.tera", "config/certmanager/issuer.yaml"),
    ("v2/webhook/config/certmanager/certificate-webhook.yaml.tera", "config/certmanager/certificate-webhook.yaml"),
    ("v2/webhook/config/default/manager_webhook_patch.yaml.tera", "config/default/manager_webhook_patch.yaml"),
];

/// The first webhook's files for the certificates the manager makes (`--self-signed`).
#[rustfmt::skip]
const SELF_SIGNED_FILES: &[(&str, &str)] = &[
    ("v2/webhook/config/webhookcerts/kustomization.yaml.tera", "config/webhookcerts/kustomization.yaml"),
    ("v2/webhook/config/webhookcerts/kustomizeconfig.yaml.tera", "config/webhookcerts/kustomizeconfig.yaml"),
    ("v2/webhook/config/webhookcerts/role.yaml.tera", "config/webhookcerts/role.yaml"),
    ("v2/webhook/config/webhookcerts/role_binding.yaml.tera", "config/webhookcerts/role_binding.yaml"),
    ("v2/webhook/config/webhookcerts/cluster_role.yaml.tera", CERTS_CLUSTER_ROLE),
    ("v2/webhook/config/webhookcerts/cluster_role_binding.yaml.tera", "config/webhookcerts/cluster_role_binding.yaml"),
    ("v2/webhook/config/default/manager_webhook_certs_patch.yaml.tera", "config/default/manager_webhook_patch.yaml"),
];

const CERTS_CLUSTER_ROLE: &str = "config/webhookcerts/cluster_role.yaml";
/// In the ClusterRole of the manager's certificates: a rule per CRD it converts.
pub const CERTS_CRDS: Marker = Marker::new(CERTS_CLUSTER_ROLE, "webhook-certs-crds");

/// What the first webhook adds to config/default when the manager makes the certificates:
/// the manager's patch, and the replacement that gives it the webhook Service's name.
const SELF_SIGNED_SECTIONS: &str = "patches:
# [WEBHOOK] The manager serves the webhooks with the certificate it makes itself.
- path: manager_webhook_patch.yaml
  target:
    kind: Deployment
    name: controller-manager

replacements:
# [WEBHOOK] The manager's certificate is for the webhook Service's names (and its prefix
# names the webhook configurations that get the CA).
- source:
    kind: Service
    version: v1
    name: webhook-service
    fieldPath: .metadata.name
  targets:
  - select:
      kind: Deployment
      name: controller-manager
    fieldPaths:
    - spec.template.spec.containers.[name=manager].env.[name=WEBHOOK_SERVICE].value
";

/// What the first webhook adds to config/default: the manager's patch, and the replacements
/// that name the webhook Service in the Certificate and have cert-manager inject its CA.
const WEBHOOK_SECTIONS: &str = "patches:
# [WEBHOOK] The manager serves the webhooks with the certificate cert-manager issues.
- path: manager_webhook_patch.yaml
  target:
    kind: Deployment
    name: controller-manager

replacements:
# [CERTMANAGER] The Certificate's DNS names are the webhook Service's.
- source:
    kind: Service
    version: v1
    name: webhook-service
    fieldPath: .metadata.name
  targets:
  - select:
      kind: Certificate
      group: cert-manager.io
      version: v1
      name: serving-cert
    fieldPaths:
    - .spec.dnsNames.0
    - .spec.dnsNames.1
    options:
      delimiter: '.'
      index: 0
      create: true
- source:
    kind: Service
    version: v1
    name: webhook-service
    fieldPath: .metadata.namespace
  targets:
  - select:
      kind: Certificate
      group: cert-manager.io
      version: v1
      name: serving-cert
    fieldPaths:
    - .spec.dnsNames.0
    - .spec.dnsNames.1
    options:
      delimiter: '.'
      index: 1
      create: true
# [CERTMANAGER] cert-manager injects its CA into each webhook configuration and CRD converted:
";

/// The replacements that have cert-manager inject its CA into the objects of `kind` (the one
/// `name`d, if given): webhook configurations, CRDs.
fn ca_injection(kind: &str, name: Option<&str>) -> String {
    let name = name
        .map(|n| format!("\n      name: {n}"))
        .unwrap_or_default();
    let target = |field: &str, index: u8| {
        format!(
            "- source:
    kind: Certificate
    group: cert-manager.io
    version: v1
    name: serving-cert
    fieldPath: .metadata.{field}
  targets:
  - select:
      kind: {kind}{name}
    fieldPaths:
    - .metadata.annotations.[cert-manager.io/inject-ca-from]
    options:
      delimiter: '/'
      index: {index}
      create: true
"
        )
    };
    format!("{}{}", target("namespace", 0), target("name", 1))
}

/// The files `init` writes: (template under `scaffolds/`, destination).
#[rustfmt::skip]
const INIT_FILES: &[(&str, &str)] = &[
    ("v2/init/config/default/kustomization.yaml.tera", DEFAULT),
    ("v2/init/config/default/metrics_service.yaml.tera", "config/default/metrics_service.yaml"),
    ("v2/init/config/manager/kustomization.yaml.tera", "config/manager/kustomization.yaml"),
    ("v2/init/config/manager/manager.yaml.tera", "config/manager/manager.yaml"),
    ("v2/init/config/prometheus/kustomization.yaml.tera", "config/prometheus/kustomization.yaml"),
    ("v2/init/config/prometheus/monitor.yaml.tera", "config/prometheus/monitor.yaml"),
    ("v2/init/config/network-policy/kustomization.yaml.tera", "config/network-policy/kustomization.yaml"),
    ("v2/init/config/network-policy/allow-metrics-traffic.yaml.tera", "config/network-policy/allow-metrics-traffic.yaml"),
    ("v2/init/config/rbac/kustomization.yaml.tera", RBAC),
    ("v2/init/config/rbac/service_account.yaml.tera", "config/rbac/service_account.yaml"),
    ("v2/init/config/rbac/role.yaml.tera", manifests::ROLE_FILE),
    ("v2/init/config/rbac/role_binding.yaml.tera", "config/rbac/role_binding.yaml"),
    ("v2/init/config/rbac/leader_election_role.yaml.tera", "config/rbac/leader_election_role.yaml"),
    ("v2/init/config/rbac/leader_election_role_binding.yaml.tera", "config/rbac/leader_election_role_binding.yaml"),
];

/// The kustomize plugin.
pub struct Kustomize;

impl Plugin for Kustomize {
    fn key(&self) -> &'static str {
        "kustomize.common.kube-scaffold.io/v2"
    }

    fn init(&self, plan: &mut Plan, _: &InitContext) {
        for (template, dest) in INIT_FILES {
            plan.file(template, *dest, IfExists::Error);
        }
    }

    fn create_api(&self, plan: &mut Plan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()> {
        let own = own_files(c.force);
        if c.resource {
            let crd_base = format!("bases/{}_{}.yaml", c.qualified_group, c.plural);
            match &c.adopted_crd {
                // The user's CRD, until `make manifests` writes it from the types.
                Some((_, _, manifest)) => {
                    plan.computed(format!("config/crd/{crd_base}"), manifest.clone());
                }
                // Another version of a kind joins its CRD.
                None => plan.yaml_merged(
                    "v2/api/config/crd/crd.json.tera",
                    format!("config/crd/{crd_base}"),
                    manifests::HEADER,
                    manifests::add_crd_version,
                ),
            }
            plan.file(
                "v2/api/config/crd/kustomization.yaml.tera",
                CRD,
                IfExists::Skip,
            );
            plan.file(
                "v2/api/config/crd/kustomizeconfig.yaml.tera",
                "config/crd/kustomizeconfig.yaml",
                IfExists::Skip,
            );
            // An adopted kind's spec is the user's: no sample can be guessed that validates.
            if !c.adopted {
                plan.file(
                    "v2/api/config/samples/kustomization.yaml.tera",
                    SAMPLES,
                    IfExists::Skip,
                );
                plan.file(
                    "v2/api/config/samples/sample.yaml.tera",
                    format!("config/samples/{}", c.sample_file),
                    own,
                );
                plan.insert(SAMPLE_RESOURCES, format!("- {}", c.sample_file));
            }
            // The roles are the kind's, whatever the version: the first version made them.
            if !c.new_version {
                plan.file(
                    "v2/api/config/rbac/editor_role.yaml.tera",
                    format!("config/rbac/{}_editor_role.yaml", c.kind_lower),
                    own,
                );
                plan.file(
                    "v2/api/config/rbac/viewer_role.yaml.tera",
                    format!("config/rbac/{}_viewer_role.yaml", c.kind_lower),
                    own,
                );
            }
            plan.insert(DEFAULT_CRD, "- ../crd");
            plan.insert(CRD_RESOURCES, format!("- {crd_base}"));
            plan.insert(
                RBAC_ROLES,
                format!(
                    "- {0}_editor_role.yaml\n- {0}_viewer_role.yaml",
                    c.kind_lower
                ),
            );
        }
        if c.controller {
            plan_role(plan, c, tree)?;
        }
        Ok(())
    }

    fn create_webhook(&self, plan: &mut Plan, c: &WebhookContext) -> anyhow::Result<()> {
        plan_webhook(plan, c);
        Ok(())
    }
}

/// The webhook plugin's share of `config/`: the Service, the configurations, cert-manager's
/// certificate, and config/default wired to them.
pub fn plan_webhook(plan: &mut Plan, c: &WebhookContext) {
    for (template, dest) in WEBHOOK_FILES {
        plan.file(template, *dest, IfExists::Skip);
    }
    plan.computed(WEBHOOK_MANIFESTS, manifests::webhook_manifests(&c.hooks));
    let crd = format!("{}.{}", c.plural, c.qualified_group);
    if !c.conversions.is_empty() {
        plan.yaml_patched(
            "v2/webhook/config/crd/conversion.json.tera",
            format!("config/crd/bases/{}_{}.yaml", c.qualified_group, c.plural),
            manifests::HEADER,
            manifests::set_conversion,
        );
    }
    if c.self_signed {
        for (template, dest) in SELF_SIGNED_FILES {
            plan.file(template, *dest, IfExists::Skip);
        }
        plan.insert(DEFAULT_WEBHOOK, "- ../webhook\n- ../webhookcerts");
        plan.insert(DEFAULT_PATCHES, SELF_SIGNED_SECTIONS);
        if !c.conversions.is_empty() {
            plan.insert(CERTS_CRDS, crd_rule(&crd));
        }
        return;
    }
    for (template, dest) in CERT_MANAGER_FILES {
        plan.file(template, *dest, IfExists::Skip);
    }
    plan.insert(DEFAULT_WEBHOOK, "- ../webhook\n- ../certmanager");
    plan.insert(DEFAULT_PATCHES, WEBHOOK_SECTIONS);
    // A fragment of its own: what is inserted above it must not split the sections above.
    plan.insert(DEFAULT_PATCHES, "# +kube-scaffold:scaffold:ca-injection");
    for (mutating, kind) in [
        (true, "MutatingWebhookConfiguration"),
        (false, "ValidatingWebhookConfiguration"),
    ] {
        if c.hooks.iter().any(|h| h.mutating == mutating) {
            plan.insert(CA_INJECTION, ca_injection(kind, None));
        }
    }
    if !c.conversions.is_empty() {
        plan.insert(
            CA_INJECTION,
            ca_injection("CustomResourceDefinition", Some(&crd)),
        );
    }
}

/// The rule of the manager's certificates ClusterRole on the CRD `name`.
fn crd_rule(name: &str) -> String {
    format!(
        "- apiGroups:
  - apiextensions.k8s.io
  resources:
  - customresourcedefinitions
  resourceNames:
  - {name}
  verbs:
  - get
  - update"
    )
}

/// The webhook configurations, as `make manifests` writes them.
pub const WEBHOOK_MANIFESTS: &str = "config/webhook/manifests.yaml";

/// The manager's ClusterRole with the rules of the kind's controller, if `role.yaml` is still
/// as `make manifests` wrote it; else a note, and the file is left for `make manifests`.
fn plan_role(plan: &mut Plan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()> {
    let role = tree
        .read(manifests::ROLE_FILE)?
        .and_then(|text| manifests::role_with(text, &c.qualified_group, &c.plural, &c.role_rules));
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
