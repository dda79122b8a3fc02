//! API types: one module per group and version, one file per kind.

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;
use kube::core::crd::merge_crds;

pub use kube_scaffold_runtime::conditions;

pub mod webapp;

pub mod example_com;

pub mod cert_manager_io;

pub mod ops_example_org;

// +kube-scaffold:scaffold:api-groups

/// The group, version, kind and plural of every kind: what the manager checks at start,
/// without building the CRDs' schemas.
pub fn resources() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<webapp::v1::Guestbook>(&()),
        ApiResource::erase::<webapp::v1::Site>(&()),
        ApiResource::erase::<example_com::v1alpha1::Memcached>(&()),
        ApiResource::erase::<ops_example_org::v1alpha1::Backup>(&()),
        ApiResource::erase::<ops_example_org::v1::Backup>(&()),
        ApiResource::erase::<webapp::v2::Guestbook>(&()),
        // +kube-scaffold:scaffold:resources
    ]
}

/// The kinds of other projects that this project's controllers watch: their CRDs come with
/// those projects (cert-manager...), and the manager checks at start that they are installed.
pub fn external_resources() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<cert_manager_io::v1::Certificate>(&()),
        // +kube-scaffold:scaffold:external-resources
    ]
}

/// The annotation the API server wants on a CRD of Kubernetes' own groups (under `k8s.io` and
/// `kubernetes.io`), with sample-controller's value. A kind whose API review was approved
/// names it instead: `#[kube(annotation("api-approved.kubernetes.io", "<its address>"))]`.
const API_APPROVAL: (&str, &str) = (
    "api-approved.kubernetes.io",
    "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups",
);

/// Every CustomResourceDefinition of this project, as `make manifests` writes them: the
/// versions of a kind (a type each) make one CRD.
pub fn crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut crds = merge_versions(vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Site as kube::CustomResourceExt>::crd(),
        <example_com::v1alpha1::Memcached as kube::CustomResourceExt>::crd(),
        <ops_example_org::v1alpha1::Backup as kube::CustomResourceExt>::crd(),
        <ops_example_org::v1::Backup as kube::CustomResourceExt>::crd(),
        <webapp::v2::Guestbook as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ])?;
    for crd in &mut crds {
        let group = &crd.spec.group;
        if ["k8s.io", "kubernetes.io"]
            .iter()
            .any(|root| group == root || group.ends_with(&format!(".{root}")))
        {
            let (key, value) = API_APPROVAL;
            crd.metadata
                .annotations
                .get_or_insert_default()
                .entry(key.to_string())
                .or_insert_with(|| value.to_string());
        }
    }
    Ok(crds)
}

/// Merges the CRDs of each kind's versions into one, which stores the version whose type does
/// not say `#[kube(storage = false)]` and lists the versions in the order of `crds`.
fn merge_versions(
    crds: Vec<CustomResourceDefinition>,
) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut kinds: Vec<Vec<CustomResourceDefinition>> = Vec::new();
    for crd in crds {
        match kinds
            .iter_mut()
            .find(|versions| versions[0].metadata.name == crd.metadata.name)
        {
            Some(versions) => versions.push(crd),
            None => kinds.push(vec![crd]),
        }
    }
    let mut merged = Vec::new();
    for versions in kinds {
        let stored: Vec<String> = versions
            .iter()
            .flat_map(|crd| &crd.spec.versions)
            .filter(|v| v.storage)
            .map(|v| v.name.clone())
            .collect();
        let kind = versions[0].spec.names.kind.clone();
        let order: Vec<String> = versions
            .iter()
            .flat_map(|crd| &crd.spec.versions)
            .map(|v| v.name.clone())
            .collect();
        let [storage] = &stored[..] else {
            anyhow::bail!(
                "{kind} has {} storage versions ({}): mark all but one `#[kube(storage = false)]`",
                stored.len(),
                stored.join(", ")
            );
        };
        let mut crd = merge_crds(versions, storage)
            .with_context(|| format!("cannot merge the versions of {kind}"))?;
        // In the order of the types above (`merge_crds` puts the stored one first).
        crd.spec
            .versions
            .sort_by_key(|v| order.iter().position(|name| *name == v.name));
        merged.push(crd);
    }
    Ok(merged)
}
