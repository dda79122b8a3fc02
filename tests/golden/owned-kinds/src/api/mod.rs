//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;
use kube_scaffold_runtime::manifests;

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

/// Every CustomResourceDefinition of this project, as `make manifests` writes them: the
/// versions of a kind (a type each) make one CRD (see `kube_scaffold_runtime::manifests::crds`).
pub fn crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    manifests::crds(vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Site as kube::CustomResourceExt>::crd(),
        <example_com::v1alpha1::Memcached as kube::CustomResourceExt>::crd(),
        <ops_example_org::v1alpha1::Backup as kube::CustomResourceExt>::crd(),
        <ops_example_org::v1::Backup as kube::CustomResourceExt>::crd(),
        <webapp::v2::Guestbook as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ])
}
