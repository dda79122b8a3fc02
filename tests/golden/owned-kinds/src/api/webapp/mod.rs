//! The API group `webapp.mock.com`.

pub mod v1;

pub mod v2;

// +kube-scaffold:scaffold:api-versions
