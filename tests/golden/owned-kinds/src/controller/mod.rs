//! Controllers: one module per kind. Each has a `reconcile` and a `start` that the manager
//! runs; each declares the RBAC rules it needs in `rbac_rules`.
//!
//! What they share comes from kube-scaffold-runtime, which each imports by name: the
//! `Error` of `controller`, its `Builder` that runs a controller (its cache, retries with
//! backoff, resync, metrics and panic recovery), `children` and `conditions`; and the
//! [`Context`] below.

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube_scaffold_runtime::controller::{Start, manager_rules};
#[cfg(test)]
use kube_scaffold_runtime::testing::mock;

/// What every reconcile gets: the API client, the event recorder, the metrics and this
/// project's own state (`crate::State`, as `ctx.state`).
pub type Context = kube_scaffold_runtime::controller::Context<crate::State>;

/// The context of the controllers' unit tests, whose client talks to a fake API server, and
/// that server: give it the state your tests use once `crate::State` is yours.
#[cfg(test)]
pub fn mocked() -> (std::sync::Arc<Context>, mock::ApiServer) {
    mock::context_with(|ctx| ctx.with_state(()))
}

pub mod webapp;

pub mod example_com;

pub mod core;

pub mod cert_manager_io;

pub mod ops_example_org;

// +kube-scaffold:scaffold:controller-modules

/// Every controller of this project, as the manager runs them.
pub const CONTROLLERS: &[Start<crate::State>] = &[
    webapp::guestbook::start,
    webapp::site::start,
    example_com::memcached::start,
    core::pod::start,
    cert_manager_io::certificate::start,
    ops_example_org::backup::start,
    // +kube-scaffold:scaffold:controllers
];

/// The RBAC rules the manager needs: `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    [
        manager_rules(),
        webapp::guestbook::rbac_rules(),
        webapp::site::rbac_rules(),
        example_com::memcached::rbac_rules(),
        core::pod::rbac_rules(),
        cert_manager_io::certificate::rbac_rules(),
        ops_example_org::backup::rbac_rules(),
        // +kube-scaffold:scaffold:rbac-rules
    ]
    .concat()
}
