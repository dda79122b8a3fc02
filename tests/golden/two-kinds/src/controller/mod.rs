//! Controllers: one module per kind. Each has a `reconcile`, an `error_policy` and a `run`
//! that the manager starts; each declares the RBAC rules it needs in `rbac_rules`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use tokio::task::JoinSet;

use crate::health::Readiness;
use crate::metrics::Metrics;

pub mod conditions;

#[cfg(test)]
mod mock;

pub mod guestbook;

pub mod config;

// +kube-scaffold:scaffold:controller-modules

/// What every reconciler gets: the API client and anything else you want to share.
pub struct Context {
    /// The Kubernetes API client.
    pub client: Client,
    /// Publishes Kubernetes Events about the objects being reconciled.
    pub recorder: Recorder,
    /// Retry delays of the objects whose last reconcile failed.
    pub backoff: Backoff,
    /// Reconcile counts and durations, served on `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Tells the readiness probe when the controllers' caches have synced.
    pub readiness: Readiness,
}

impl Context {
    /// A context around `client`. Events name this manager and, in a pod, the pod
    /// (`POD_NAME`, from the downward API).
    pub fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: env!("CARGO_PKG_NAME").into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            backoff: Backoff::default(),
            metrics: Arc::new(Metrics::default()),
            readiness: Readiness::default(),
        }
    }
}

/// The errors a reconcile can end with; `error_policy` decides when to retry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the Kubernetes API failed.
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// Adding or removing the finalizer failed.
    #[error("finalizer failed: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    /// The object misses a field the controller needs.
    #[error("invalid object: {0}")]
    InvalidObject(String),
}

impl Error {
    /// A short label for the `error` of the failure metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Finalizer(_) => "finalizer",
            Error::InvalidObject(_) => "invalid_object",
        }
    }
}

/// The result of a reconcile step.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Starts every controller of this project and waits until all have stopped.
///
/// Each controller stops taking work on SIGTERM or Ctrl-C and finishes what it runs.
pub async fn run(ctx: Arc<Context>) {
    let mut controllers: JoinSet<()> = JoinSet::new();
    controllers.spawn(guestbook::run(ctx.clone()));
    controllers.spawn(config::run(ctx.clone()));
    // +kube-scaffold:scaffold:controllers
    ctx.readiness.expect(controllers.len());
    while let Some(finished) = controllers.join_next().await {
        if let Err(err) = finished {
            tracing::error!(error = %err, "a controller stopped unexpectedly");
        }
    }
}

/// The RBAC rules the manager needs: `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let events = PolicyRule {
        api_groups: Some(vec!["events.k8s.io".into()]),
        resources: Some(vec!["events".into()]),
        verbs: vec!["create".into(), "patch".into()],
        ..PolicyRule::default()
    };
    [
        vec![events],
        guestbook::rbac_rules(),
        config::rbac_rules(),
        // +kube-scaffold:scaffold:rbac-rules
    ]
    .concat()
}

/// Per-object retry delays for `error_policy`: 5 s, 10 s, 20 s, ... up to 5 minutes.
/// A successful reconcile resets the object's delay.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<ObjectRef<DynamicObject>, u32>>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(5);
    const MAX: Duration = Duration::from_secs(300);

    /// Counts one more failure of `object` and returns how long to wait before retrying it.
    pub fn next_delay(&self, object: &ObjectRef<DynamicObject>) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(object.clone()).or_insert(0);
        let delay = Self::FIRST.saturating_mul(2u32.saturating_pow(*count));
        *count = count.saturating_add(1);
        delay.min(Self::MAX)
    }

    /// Forgets the failures of `object` after it reconciled.
    pub fn reset(&self, object: &ObjectRef<DynamicObject>) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(object);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_five_minutes_and_resets() {
        let backoff = Backoff::default();
        let object = ObjectRef::<k8s_openapi::api::core::v1::ConfigMap>::new("test").erase();
        let delays: Vec<u64> = (0..8)
            .map(|_| backoff.next_delay(&object).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
        backoff.reset(&object);
        assert_eq!(backoff.next_delay(&object), Backoff::FIRST);
    }
}
