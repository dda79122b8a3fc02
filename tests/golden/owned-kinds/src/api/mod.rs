//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;

pub mod conditions;

pub mod webapp;

pub mod example_com;

pub mod cert_manager_io;

// +kube-scaffold:scaffold:api-groups

/// The group, version, kind and plural of every kind: what the manager checks at start,
/// without building the CRDs' schemas.
pub fn resources() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<webapp::v1::Guestbook>(&()),
        ApiResource::erase::<webapp::v1::Site>(&()),
        ApiResource::erase::<example_com::v1alpha1::Memcached>(&()),
        // +kube-scaffold:scaffold:resources
    ]
}

/// Every CustomResourceDefinition of this project, as `make manifests` writes them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Site as kube::CustomResourceExt>::crd(),
        <example_com::v1alpha1::Memcached as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ]
}
