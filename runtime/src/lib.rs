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
