//! Kubernetes' built-in kinds, as the generated project's k8s-openapi names them: what a
//! controller can reconcile (`--resource=false`) or own (`--owns`) without a CRD of ours.
//! The table is `kinds.rs`, written by `scripts/core-types`.

mod kinds;

/// One built-in kind: its API group (`""` for the core group), version, kind and plural, and
/// the k8s-openapi module that defines its Rust type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub module: &'static str,
}

impl CoreKind {
    /// The kind's Rust type, e.g. `k8s_openapi::api::apps::v1::Deployment`.
    pub fn rust_path(&self) -> String {
        format!("k8s_openapi::{}::{}", self.module, self.kind)
    }

    /// `group/version/Kind` as kubebuilder spells it: `core/v1/Pod`, `apps/v1/Deployment`.
    pub fn flag(&self) -> String {
        format!(
            "{}/{}/{}",
            spelled_group(self.group),
            self.version,
            self.kind
        )
    }
}

/// The group as kubebuilder's flags spell it: `core` for the core group.
pub fn spelled_group(group: &str) -> &str {
    if group.is_empty() { "core" } else { group }
}

/// The built-in kind of `group` (`core` or empty for the core group), `version` and `kind`.
pub fn find(group: &str, version: &str, kind: &str) -> Option<&'static CoreKind> {
    let group = if group == "core" { "" } else { group };
    kinds::KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}

/// Whether `group` is one of Kubernetes' own API groups (`core`, `apps`, `*.k8s.io`...).
pub fn is_builtin_group(group: &str) -> bool {
    group == "core" || kinds::KINDS.iter().any(|k| k.group == group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_found_as_kubebuilder_spells_them() {
        let deployment = find("apps", "v1", "Deployment").expect("Deployment");
        assert_eq!(
            deployment.rust_path(),
            "k8s_openapi::api::apps::v1::Deployment"
        );
        assert_eq!(deployment.plural, "deployments");
        let pod = find("core", "v1", "Pod").expect("Pod");
        assert_eq!(find("", "v1", "Pod"), Some(pod));
        assert_eq!(pod.flag(), "core/v1/Pod");
        assert!(!find("", "v1", "Namespace").unwrap().namespaced);
        assert_eq!(find("apps", "v1beta1", "Deployment"), None);
        assert!(is_builtin_group("core") && is_builtin_group("networking.k8s.io"));
        assert!(!is_builtin_group("webapp"));
    }
}
