//! The runtime of the operators kube-scaffold generates: what controller-runtime is to a
//! kubebuilder project. A generated project owns its `main.rs`, API types, controllers and
//! webhooks; this crate owns the rest:
//!
//! - [`manager`]: the manager's flags (kubebuilder's names) and its run: the cluster checks,
//!   probes, metrics, webhooks, leader election, the controllers, a graceful shutdown;
//! - [`controller`]: what every reconciler shares: [`controller::Context`], the error type,
//!   `observe` (metrics and panic recovery), the per-object backoff, RBAC rules;
//! - [`children`]: objects a kind owns, one built from each owner or many that its reconcile
//!   names, makes and deletes ([`children::Children`]), applied with server-side apply;
//! - [`manifests`]: what `make manifests` writes: the CRDs, the manager's role, the webhook
//!   configurations;
//! - [`conditions`]: `status.conditions` as `metav1.Condition`;
//! - [`health`], [`metrics`], [`server`]: the probes, controller-runtime's metrics, and the
//!   dual-stack HTTP servers that serve them;
//! - [`leader`] (feature `leader-election`): client-go's leader election over a Lease;
//! - [`sharding`] (feature `sharding`): each replica reconciles its share of the objects;
//! - [`webhook`]: defaulting, validating and conversion webhooks and their configurations;
//!   with feature `webhooks`, their HTTPS server, certificates and registration under
//!   `make run` (without it, a manager with webhooks refuses to start);
//! - [`testing`] (feature `testing`) and [`envtest`] (feature `envtest`): for the project's
//!   unit tests (a mocked API server) and integration tests (a real control plane).
//!
//! Everything else (the webhook server and its certificates, the TLS of the servers, the
//! sharder, the supervision of controllers) is the manager's own and not public. Of
//! `sharding`, only [`sharding::ring`] is, for tools and tests that compute where an object
//! goes. Where a project plugs its own code in, a closure may hold what it needs:
//! `Manager::metrics`, `webhook::Hook::defaulting`, and any `webhook::Validate` of the
//! project's own for `Hook::validating`.
//!
//! The modules form layers, from `health`, `metrics`, `server` and `leader` through
//! `sharding`, `controller` and `children` up to `manager`: none imports a module that
//! imports it, and the manager hands its name down rather than lower modules reading it.
//!
//! # Example
//!
//! An operator whose one controller reconciles ConfigMaps, as a generated project's `lib.rs`
//! and `main.rs` hold it:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use clap::Parser;
//! use futures::future::BoxFuture;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::runtime::controller::Action;
//! use kube_scaffold_runtime::controller::{Builder, Context, Result, Start, rule};
//! use kube_scaffold_runtime::manager::{Manager, Options};
//!
//! async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action> {
//!     let name = obj.metadata.name.as_deref().unwrap_or_default();
//!     tracing::info!(name, watching = ?ctx.namespace, "reconciled");
//!     Ok(Action::await_change())
//! }
//!
//! fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
//!     Builder::<ConfigMap>::new("configmap").start(ctx, reconcile)
//! }
//!
//! /// What `make manifests` writes into the manager's role.
//! fn rules() -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
//!     vec![rule("", "configmaps", &["get", "list", "watch"])]
//! }
//!
//! #[derive(Parser)]
//! struct Args {
//!     #[command(flatten)]
//!     manager: Options,
//! }
//!
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let controllers: &[Start] = &[start];
//!     let _ = rules();
//!     Manager::new("configmap-operator", Args::parse().manager)
//!         .controllers(controllers)
//!         .run()
//!         .await
//! }
//! ```
//!
//! A generated project names this crate by version. Until it is on crates.io, the project's
//! `[patch.crates-io]` takes it from a copy without its tests in `kube-scaffold-runtime/`,
//! which `kube-scaffold upgrade` replaces whole: do not edit it there.

pub mod children;
pub mod conditions;
pub mod controller;
#[cfg(feature = "envtest")]
pub mod envtest;
pub mod health;
#[cfg(feature = "leader-election")]
pub mod leader;
pub mod manager;
pub mod manifests;
pub mod metrics;
pub mod server;
#[cfg(feature = "sharding")]
pub mod sharding;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhook;

#[cfg(test)]
mod tests {
    /// The modules form layers: no module uses, through others, a module that uses it
    /// (scripts/module-cycles reads the `crate::` paths of every file outside its tests).
    #[test]
    fn no_module_imports_a_module_that_imports_it() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/module-cycles");
        let out = std::process::Command::new(script)
            .arg("-v")
            .output()
            .expect("scripts/module-cycles runs");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{printed}");
        assert!(printed.contains("no cycle among"), "{printed}");
    }
}
