//! The guestbook operator: API types, their controllers and webhooks, and the manager
//! that runs them.

use kube_scaffold_runtime::manager::{Manager, Options};

pub mod api;
pub mod controller;
#[cfg(test)]
pub use kube_scaffold_runtime::testing;
pub mod webhook;

/// The manager of this operator, as kubebuilder's `main.go` sets it up: every kind, webhook
/// and controller of the project. `main.rs` runs it; the integration tests too.
pub fn manager(options: Options) -> Manager {
    Manager::new(env!("CARGO_PKG_NAME"), options)
        .resources(api::resources(), api::external_resources())
        .webhooks(webhook::hooks(), webhook::conversion::conversions())
        .controllers(controller::CONTROLLERS)
}
