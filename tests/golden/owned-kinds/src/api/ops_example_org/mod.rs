//! The API group `ops.example.org`.

pub mod v1alpha1;

pub mod v1;

// +kube-scaffold:scaffold:api-versions
