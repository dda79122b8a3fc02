//! The API group `cert-manager.io`.

pub mod v1;

// +kube-scaffold:scaffold:api-versions
