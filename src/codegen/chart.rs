//! A Helm chart made from the manifests `make build-installer` writes (`dist/install.yaml`), as
//! kubebuilder's helm/v2-alpha makes one: each object a template under `templates/<part>/`, the
//! namespace the release's, the manager's image, replicas and resources in `values.yaml`, and
//! the optional parts (CRDs, the editor and viewer roles, the metrics Service, cert-manager's
//! objects, the ServiceMonitor, the network policy) behind a switch each. With the values as
//! written, `helm template --namespace <ns>` renders the manifests it was made from, but for the
//! Namespace (`helm install --create-namespace` makes it), `app.kubernetes.io/managed-by`
//! (`Helm`) and the CRDs' `helm.sh/resource-policy: keep` (`crd.keep`).

use std::collections::BTreeMap;

use anyhow::Context as _;
use serde_json::{Map, Value};

use crate::error::user_error;

/// Stand-ins written into the objects, replaced by template actions once they are YAML.
const REPLICAS: &str = "__kube_scaffold_replicas__";
const RESOURCES: &str = "__kube_scaffold_resources__";
const KEEP: &str = "__kube_scaffold_keep__";

/// A chart made from manifests: its files but `Chart.yaml` (paths relative to the chart's
/// directory), and the manager's image tag, the chart's `appVersion`.
#[derive(Debug)]
pub struct Chart {
    pub files: BTreeMap<String, String>,
    pub app_version: String,
}

/// The chart made from `manifests`, the text of `source` (named in errors), for the project
/// `project_name`.
pub fn chart(project_name: &str, manifests: &str, source: &str) -> anyhow::Result<Chart> {
    let unreadable = |err: &dyn std::fmt::Display| {
        user_error(
            format!("`{source}` is not the YAML `make build-installer` writes: {err}"),
            "run `make build-installer` to write it again, then run this command again",
        )
    };
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(manifests).map_err(|err| unreadable(&err))?;
    let documents: Vec<Value> = documents.into_iter().filter(|d| !d.is_null()).collect();
    let namespace = namespace(&documents).ok_or_else(|| {
        unreadable(&"it has no Namespace and no Deployment of the manager to name one")
    })?;
    let mut values = Values::default();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let prefix = format!("{project_name}-");
    for mut document in documents {
        let kind = text(&document, &["kind"]).to_string();
        if kind == "Namespace" {
            continue;
        }
        let name = text(&document, &["metadata", "name"]).to_string();
        escape_actions(&mut document);
        if kind == "Deployment" {
            values.manager = Some(take_manager(&mut document, source)?);
        }
        release_namespace(&mut document, &namespace);
        managed_by_helm(&mut document);
        let part = Part::of(&kind, &name, &document);
        if part == Part::Crd {
            let annotations = document["metadata"]
                .as_object_mut()
                .context("a CRD without metadata")?
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            annotations["helm.sh/resource-policy"] = Value::String(KEEP.into());
        }
        values.parts.insert(part);
        let yaml = serde_saphyr::to_string(&document)
            .with_context(|| format!("cannot write {kind} {name} as YAML"))?;
        let yaml = actions(&yaml);
        let content = match part.switch() {
            Some((key, _)) => format!("{{{{- if .Values.{key}.enable }}}}\n{yaml}{{{{- end }}}}\n"),
            None => yaml,
        };
        let stem = match part {
            Part::Crd => name.clone(),
            _ => name.strip_prefix(&prefix).unwrap_or(&name).to_string(),
        };
        let mut path = format!("templates/{}/{stem}.yaml", part.dir());
        if files.contains_key(&path) {
            path = format!(
                "templates/{}/{stem}-{}.yaml",
                part.dir(),
                kind.to_lowercase()
            );
        }
        files.insert(path, content);
    }
    let Some(manager) = &values.manager else {
        return Err(unreadable(&"it has no Deployment of the manager"));
    };
    let app_version = manager.tag.clone();
    files.insert("values.yaml".into(), values.yaml()?);
    Ok(Chart { files, app_version })
}

/// The namespace the manifests install into: their Namespace's, else the manager's.
fn namespace(documents: &[Value]) -> Option<String> {
    let of = |kind: &str, path: &[&str]| {
        documents
            .iter()
            .find(|d| d["kind"] == kind)
            .map(|d| text(d, path).to_string())
            .filter(|s| !s.is_empty())
    };
    of("Namespace", &["metadata", "name"]).or_else(|| of("Deployment", &["metadata", "namespace"]))
}

/// The string at `path` in `value`, or "".
fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(value, |v, key| &v[*key])
        .as_str()
        .unwrap_or_default()
}

/// Calls `f` on every string value in `value`.
fn each_string(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| each_string(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| each_string(v, f)),
        _ => {}
    }
}

/// Text in the manifests that reads like a template action (`{{` in a CRD's description, say)
/// is written so that helm renders it as it was: `{{` becomes ``{{`{{`}}``.
fn escape_actions(value: &mut Value) {
    each_string(value, &mut |s| {
        if s.contains("{{") {
            *s = s.replace("{{", "{{`{{`}}");
        }
    });
}

/// Every mention of `namespace` in a string of `value` (a whole value, or a part between dots,
/// slashes or colons: `<service>.<namespace>.svc`, `<namespace>/<certificate>`) becomes the
/// release's namespace.
fn release_namespace(value: &mut Value, namespace: &str) {
    each_string(value, &mut |s| {
        let replaced: Vec<String> = s
            .split_inclusive(['.', '/', ':'])
            .map(|part| {
                let (word, sep) = match part.char_indices().last() {
                    Some((i, c)) if ['.', '/', ':'].contains(&c) => part.split_at(i),
                    _ => (part, ""),
                };
                match word == namespace {
                    true => format!("{{{{ .Release.Namespace }}}}{sep}"),
                    false => part.to_string(),
                }
            })
            .collect();
        *s = replaced.concat();
    });
}

/// `app.kubernetes.io/managed-by: kustomize`, wherever it labels something, becomes the
/// release's service (`Helm`).
fn managed_by_helm(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(labels)) = map.get_mut("labels")
                && labels.get("app.kubernetes.io/managed-by") == Some(&Value::from("kustomize"))
            {
                labels.insert(
                    "app.kubernetes.io/managed-by".into(),
                    Value::from("{{ .Release.Service }}"),
                );
            }
            map.values_mut().for_each(managed_by_helm);
        }
        Value::Array(items) => items.iter_mut().for_each(managed_by_helm),
        _ => {}
    }
}

/// The stand-ins replaced by template actions: the replicas, the manager's resources (a block
/// as deep as the key) and the CRDs' resource policy.
fn actions(yaml: &str) -> String {
    let mut out = String::with_capacity(yaml.len());
    for line in yaml.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let pad = " ".repeat(indent);
        let trimmed = line.trim();
        if trimmed == format!("resources: {RESOURCES}") {
            out.push_str(&format!(
                "{pad}resources:\n{pad}  {{{{- toYaml .Values.manager.resources | nindent {} }}}}\n",
                indent + 2
            ));
        } else if trimmed == format!("helm.sh/resource-policy: {KEEP}") {
            out.push_str(&format!(
                "{pad}{{{{- if .Values.crd.keep }}}}\n{pad}helm.sh/resource-policy: keep\n{pad}{{{{- end }}}}\n"
            ));
        } else {
            out.push_str(&line.replace(REPLICAS, "{{ .Values.manager.replicas }}"));
        }
    }
    out
}

/// Where an object's template goes, and the value that switches it on, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Crd,
    Rbac,
    RbacHelpers,
    Manager,
    Metrics,
    Webhook,
    CertManager,
    Prometheus,
    NetworkPolicy,
    Other,
}

impl Part {
    fn of(kind: &str, name: &str, document: &Value) -> Part {
        let group = text(document, &["apiVersion"])
            .split('/')
            .next()
            .unwrap_or_default();
        match kind {
            "CustomResourceDefinition" => Part::Crd,
            "ClusterRole"
                if ["-editor-role", "-viewer-role", "-admin-role"]
                    .iter()
                    .any(|s| name.ends_with(s)) =>
            {
                Part::RbacHelpers
            }
            "ServiceAccount" | "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => {
                Part::Rbac
            }
            "Deployment" | "PodDisruptionBudget" => Part::Manager,
            "Service" if name.ends_with("metrics-service") => Part::Metrics,
            "Service" | "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
                Part::Webhook
            }
            _ if group == "cert-manager.io" => Part::CertManager,
            "ServiceMonitor" => Part::Prometheus,
            "NetworkPolicy" => Part::NetworkPolicy,
            _ => Part::Other,
        }
    }

    fn dir(self) -> &'static str {
        match self {
            Part::Crd => "crd",
            Part::Rbac | Part::RbacHelpers => "rbac",
            Part::Manager => "manager",
            Part::Metrics => "metrics",
            Part::Webhook => "webhook",
            Part::CertManager => "cert-manager",
            Part::Prometheus => "prometheus",
            Part::NetworkPolicy => "network-policy",
            Part::Other => "other",
        }
    }

    /// The key of the values that switch this part on (`<key>.enable`), and what they say
    /// of it in `values.yaml`.
    fn switch(self) -> Option<(&'static str, &'static str)> {
        match self {
            Part::Crd => Some((
                "crd",
                "The CRDs; `keep` leaves them (and every object of theirs) when the release is uninstalled.",
            )),
            Part::RbacHelpers => Some((
                "rbacHelpers",
                "The editor and viewer ClusterRoles of each kind, for the cluster's admins to bind.",
            )),
            Part::Metrics => Some(("metrics", "The Service in front of the manager's /metrics.")),
            Part::CertManager => Some((
                "certManager",
                "cert-manager's Issuer and Certificate for the webhooks (cert-manager must be installed).",
            )),
            Part::Prometheus => Some((
                "prometheus",
                "The ServiceMonitor of the Prometheus Operator.",
            )),
            Part::NetworkPolicy => Some((
                "networkPolicy",
                "The NetworkPolicy that lets only labelled namespaces scrape /metrics.",
            )),
            Part::Rbac | Part::Manager | Part::Webhook | Part::Other => None,
        }
    }
}

/// The manager's settings `values.yaml` holds, as the manifests had them.
struct Manager {
    replicas: Value,
    repository: String,
    tag: String,
    resources: Value,
}

/// Takes the manager's image, replicas and resources out of its Deployment into values,
/// leaving stand-ins.
fn take_manager(deployment: &mut Value, source: &str) -> anyhow::Result<Manager> {
    let replicas = std::mem::replace(&mut deployment["spec"]["replicas"], Value::from(REPLICAS));
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            user_error(
                format!("the Deployment in `{source}` has no containers"),
                "run `make build-installer` to write it again, then run this command again",
            )
        })?;
    let index = containers
        .iter()
        .position(|c| c["name"] == "manager")
        .unwrap_or(0);
    let container = &mut containers[index];
    let image = container["image"]
        .as_str()
        .unwrap_or("controller:latest")
        .to_string();
    // `registry:5000/name:tag`: the tag follows the last colon after the last slash.
    let (repository, tag) = match image.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => (repository.to_string(), tag.to_string()),
        _ => (image.clone(), "latest".to_string()),
    };
    container["image"] =
        Value::from("{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}");
    let resources = std::mem::replace(&mut container["resources"], Value::from(RESOURCES));
    Ok(Manager {
        replicas: if replicas.is_null() {
            Value::from(1)
        } else {
            replicas
        },
        repository,
        tag,
        resources: if resources.is_null() {
            Value::Object(Map::new())
        } else {
            resources
        },
    })
}

#[derive(Default)]
struct Values {
    manager: Option<Manager>,
    parts: std::collections::BTreeSet<Part>,
}

impl Values {
    /// `values.yaml`: each switch of a part the manifests have, and the manager's settings, as
    /// the manifests had them.
    fn yaml(&self) -> anyhow::Result<String> {
        let manager = self.manager.as_ref().context("no manager")?;
        let mut out = String::from(
            "# The chart's settings. As written, `helm template` renders what `make build-installer`\n# wrote to dist/install.yaml (but the Namespace: `helm install --create-namespace`).\n\n",
        );
        let image = serde_json::json!({
            "manager": {
                "replicas": manager.replicas,
                "image": {"repository": manager.repository, "tag": manager.tag},
                "resources": manager.resources,
            }
        });
        out.push_str("# The manager's Deployment.\n");
        out.push_str(&serde_saphyr::to_string(&image)?);
        // In the order `Part` declares them.
        for part in &self.parts {
            let Some((key, doc)) = part.switch() else {
                continue;
            };
            out.push_str(&format!("\n# {doc}\n{key}:\n  enable: true\n"));
            if *part == Part::Crd {
                out.push_str("  keep: true\n");
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFESTS: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop-system\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: guestbooks.webapp.mock.com\nspec:\n  description: Rendered with {{ .Values.name }}\n  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n          name: shop-webhook-service\n          namespace: shop-system\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels:\n    app.kubernetes.io/managed-by: kustomize\n  name: shop-controller-manager\n  namespace: shop-system\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - image: registry.example.com:5000/shop:v1.2.3\n        name: manager\n        resources:\n          limits:\n            cpu: 500m\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: shop-serving-cert\n  namespace: shop-system\nspec:\n  dnsNames:\n  - shop-webhook-service.shop-system.svc\n  - shop-system-other.example\n";

    #[test]
    fn the_manifests_become_templates_with_the_release_namespace_and_values() {
        let chart = chart("shop", MANIFESTS, "dist/install.yaml").unwrap();
        let files = &chart.files;
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "templates/cert-manager/serving-cert.yaml",
                "templates/crd/guestbooks.webapp.mock.com.yaml",
                "templates/manager/controller-manager.yaml",
                "values.yaml",
            ]
        );
        let deployment = &files["templates/manager/controller-manager.yaml"];
        for expected in [
            "namespace: \"{{ .Release.Namespace }}\"",
            "replicas: {{ .Values.manager.replicas }}\n",
            "image: \"{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}\"",
            "        resources:\n          {{- toYaml .Values.manager.resources | nindent 10 }}\n",
            "app.kubernetes.io/managed-by: \"{{ .Release.Service }}\"",
        ] {
            assert!(
                deployment.contains(expected),
                "no `{expected}` in:\n{deployment}"
            );
        }
        let certificate = &files["templates/cert-manager/serving-cert.yaml"];
        assert!(certificate.starts_with("{{- if .Values.certManager.enable }}\n"));
        assert!(certificate.contains("shop-webhook-service.{{ .Release.Namespace }}.svc"));
        // A name that only starts like the namespace is left alone.
        assert!(
            certificate.contains("- shop-system-other.example"),
            "{certificate}"
        );
        let crd = &files["templates/crd/guestbooks.webapp.mock.com.yaml"];
        assert!(
            crd.contains("description: Rendered with {{`{{`}} .Values.name }}"),
            "{crd}"
        );
        assert!(crd.contains("    {{- if .Values.crd.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n"), "{crd}");
        let values = &files["values.yaml"];
        for expected in [
            "replicas: 2",
            "repository: registry.example.com:5000/shop",
            "tag: v1.2.3",
            "cpu: 500m",
            "crd:\n  enable: true\n  keep: true\n",
            "certManager:\n  enable: true\n",
        ] {
            assert!(values.contains(expected), "no `{expected}` in:\n{values}");
        }
        assert!(!values.contains("metrics:"), "{values}");
        assert_eq!(chart.app_version, "v1.2.3");
    }

    #[test]
    fn manifests_without_a_manager_are_refused() {
        let err = chart(
            "shop",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n",
            "dist/install.yaml",
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("no Deployment of the manager"),
            "{err:#}"
        );
        let err = chart("shop", "a: [", "dist/install.yaml").unwrap_err();
        assert!(format!("{err:#}").contains("is not the YAML"), "{err:#}");
    }
}
