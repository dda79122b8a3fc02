//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;
use kube_scaffold_runtime::manifests;

pub mod webapp;

// +kube-scaffold:scaffold:api-groups

/// The group, version, kind and plural of every kind: what the manager checks at start,
/// without building the CRDs' schemas.
pub fn resources() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<webapp::v1::Guestbook>(&()),
        ApiResource::erase::<webapp::v1::Config>(&()),
        // +kube-scaffold:scaffold:resources
    ]
}

/// The kinds of other projects that this project's controllers watch: their CRDs come with
/// those projects (cert-manager...), and the manager checks at start that they are installed.
pub fn external_resources() -> Vec<ApiResource> {
    vec![
        // +kube-scaffold:scaffold:external-resources
    ]
}

/// Every CustomResourceDefinition of this project, as `make manifests` writes them: the
/// versions of a kind (a type each) make one CRD (see `kube_scaffold_runtime::manifests::crds`).
pub fn crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    manifests::crds(vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Config as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ])
}
