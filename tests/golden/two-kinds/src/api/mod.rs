//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;

pub mod conditions;

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

/// Every CustomResourceDefinition of this project, as `make manifests` writes them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Config as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ]
}
