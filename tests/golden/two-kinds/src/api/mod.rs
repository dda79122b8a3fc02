//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

pub mod webapp;

// +kube-scaffold:scaffold:api-groups

/// Every CustomResourceDefinition of this project, as `make manifests` writes them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        <webapp::v1::Config as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ]
}
