//! Health probes for the kubelet.
//!
//! - `/healthz` answers `ok` until a controller stops on its own; then it fails, and the
//!   manager exits non-zero, so that Kubernetes restarts the pod.
//! - `/readyz` answers `ok` once every controller has started and its cache has synced. A
//!   replica waiting for the leader lease is ready too, while it keeps reaching the API server:
//!   it could take over, and a rolling update must not wait for it to lead (the old pod holds
//!   the lease until the new one is ready). A standby that has not reached the API server for
//!   longer than its bound is not ready.
//! - A manager that serves conversion webhooks is ready once its webhook server listens, as
//!   controller-runtime's: its caches may need its own `/convert` to sync (a kind stored in
//!   another version than the one watched), and its Service sends traffic only to ready pods.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::time::Instant;

/// The manager's health; cheap to clone and share.
#[derive(Clone, Default)]
pub struct Health(Arc<Mutex<Status>>);

#[derive(Default)]
struct Status {
    /// How many controllers must sync; `None` until they have all started.
    expected: Option<usize>,
    synced: usize,
    /// While waiting for the lease: when the API server last answered, and for how long
    /// that keeps this replica ready.
    standby: Option<(Instant, Duration)>,
    /// Why the manager is no longer alive.
    failure: Option<String>,
    /// Whether the webhook server serves conversions: then it alone makes the manager ready.
    converting: bool,
}

impl Health {
    fn status(&self) -> MutexGuard<'_, Status> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks a replica that waits for the leader lease: ready while the API server answered
    /// within the last `bound`.
    pub fn standby(&self, bound: Duration) {
        self.status().standby = Some((Instant::now(), bound));
    }

    /// The standby replica reached the API server just now.
    pub fn contacted(&self) {
        if let Some((last, _)) = &mut self.status().standby {
            *last = Instant::now();
        }
    }

    /// Sets how many controllers were started; each reports `synced` once. Ends standby.
    pub fn expect(&self, controllers: usize) {
        let mut status = self.status();
        status.standby = None;
        status.expected = Some(controllers);
    }

    /// The webhook server serves conversions and listens: the manager is ready, whatever its
    /// caches, which may need those conversions to sync.
    pub fn serving_conversions(&self) {
        self.status().converting = true;
    }

    /// One controller's cache has synced.
    pub fn synced(&self) {
        self.status().synced += 1;
    }

    /// The manager can no longer do its work: `/healthz` fails from now on.
    pub fn fail(&self, reason: impl Into<String>) {
        self.status().failure = Some(reason.into());
    }

    /// Every started controller has synced, or this standby replica still reaches the API
    /// server.
    pub fn is_ready(&self) -> bool {
        let status = self.status();
        if status.failure.is_some() {
            return false;
        }
        if status.converting {
            return true;
        }
        match (status.standby, status.expected) {
            (Some((last, bound)), _) => last.elapsed() <= bound,
            (None, Some(expected)) => status.synced >= expected,
            (None, None) => false,
        }
    }

    /// Why the manager is not alive, if it is not.
    pub fn failure(&self) -> Option<String> {
        self.status().failure.clone()
    }
}

/// The probe endpoints.
pub fn router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn healthz(State(health): State<Health>) -> (StatusCode, String) {
    match health.failure() {
        None => (StatusCode::OK, "ok".into()),
        Some(reason) => (StatusCode::INTERNAL_SERVER_ERROR, reason),
    }
}

async fn readyz(State(health): State<Health>) -> (StatusCode, &'static str) {
    if health.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_every_started_controller_has_synced() {
        let health = Health::default();
        health.synced();
        assert!(
            !health.is_ready(),
            "ready before the controllers were counted"
        );
        health.expect(2);
        assert!(
            !health.is_ready(),
            "ready with one of two controllers synced"
        );
        health.synced();
        assert!(health.is_ready());
    }

    #[test]
    fn a_manager_serving_conversions_is_ready_before_its_caches_sync() {
        let health = Health::default();
        health.expect(1);
        assert!(!health.is_ready());
        health.serving_conversions();
        assert!(health.is_ready(), "caches wait for /convert");
        health.fail("stopped");
        assert!(!health.is_ready());
    }

    #[tokio::test(start_paused = true)]
    async fn a_standby_is_ready_only_while_it_reaches_the_api_server() {
        let health = Health::default();
        health.standby(Duration::from_secs(15));
        assert!(health.is_ready(), "a standby replica is not ready");
        tokio::time::advance(Duration::from_secs(10)).await;
        health.contacted();
        tokio::time::advance(Duration::from_secs(15)).await;
        assert!(
            health.is_ready(),
            "not ready within the bound of the last contact"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            !health.is_ready(),
            "ready 16 s after the API server last answered"
        );
        health.contacted();
        assert!(
            health.is_ready(),
            "not ready again after the API server answered"
        );
    }

    #[test]
    fn a_leader_is_ready_once_its_caches_sync() {
        let health = Health::default();
        health.standby(Duration::from_secs(15));
        health.expect(1);
        assert!(
            !health.is_ready(),
            "ready as leader before the cache synced"
        );
        health.synced();
        assert!(health.is_ready());
    }

    #[test]
    fn a_failure_makes_the_manager_unhealthy_and_unready() {
        let health = Health::default();
        health.expect(0);
        assert!(health.is_ready());
        assert_eq!(health.failure(), None);
        health.fail("the guestbook controller stopped");
        assert!(!health.is_ready());
        assert_eq!(
            health.failure().as_deref(),
            Some("the guestbook controller stopped")
        );
    }
}
