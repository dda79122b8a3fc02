//! The API group `example.com`.

pub mod v1alpha1;

// +kube-scaffold:scaffold:api-versions
