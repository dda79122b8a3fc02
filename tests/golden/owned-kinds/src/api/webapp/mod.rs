//! The API group `webapp.mock.com`.

pub mod v1;

// +kube-scaffold:scaffold:api-versions
