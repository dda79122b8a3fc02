// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! Health probes for the kubelet: `/healthz` answers while the process runs; `/readyz` once
//! every controller has started and its cache has synced with the API server. A replica
//! waiting for the leader lease is ready too: it could take over, and a rolling update
//! must not wait for it to lead (the old pod holds the lease until the new one is ready).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

/// Whether the manager is ready to serve; cheap to clone and share.
#[derive(Clone)]
pub struct Readiness(Arc<Counts>);

struct Counts {
    /// How many controllers must sync; `usize::MAX` until they have all started.
    expected: AtomicUsize,
    synced: AtomicUsize,
}

impl Default for Readiness {
    fn default() -> Self {
        Self(Arc::new(Counts {
            expected: AtomicUsize::new(usize::MAX),
            synced: AtomicUsize::new(0),
        }))
    }
}

impl Readiness {
    /// Marks a replica that waits for the leader lease as ready.
    pub fn standby(&self) {
        self.expect(0);
    }

    /// Sets how many controllers were started; each reports `synced` once.
    pub fn expect(&self, controllers: usize) {
        self.0.expected.store(controllers, Ordering::Release);
    }

    /// One controller's cache has synced.
    pub fn synced(&self) {
        self.0.synced.fetch_add(1, Ordering::AcqRel);
    }

    /// Every started controller has synced.
    pub fn is_ready(&self) -> bool {
        self.0.synced.load(Ordering::Acquire) >= self.0.expected.load(Ordering::Acquire)
    }
}

/// The probe endpoints.
pub fn router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(readiness)
}

async fn readyz(State(readiness): State<Readiness>) -> (StatusCode, &'static str) {
    if readiness.is_ready() {
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
        let readiness = Readiness::default();
        readiness.synced();
        assert!(
            !readiness.is_ready(),
            "ready before the controllers were counted"
        );
        readiness.expect(2);
        assert!(
            !readiness.is_ready(),
            "ready with one of two controllers synced"
        );
        readiness.synced();
        assert!(readiness.is_ready());
    }

    #[test]
    fn a_standby_replica_is_ready_until_it_leads_and_its_caches_sync() {
        let readiness = Readiness::default();
        readiness.standby();
        assert!(readiness.is_ready(), "a standby replica is not ready");
        readiness.expect(1);
        assert!(
            !readiness.is_ready(),
            "ready as leader before the cache synced"
        );
        readiness.synced();
        assert!(readiness.is_ready());
    }

    #[test]
    fn a_manager_without_controllers_is_ready_once_started() {
        let readiness = Readiness::default();
        assert!(!readiness.is_ready());
        readiness.expect(0);
        assert!(readiness.is_ready());
    }
}
