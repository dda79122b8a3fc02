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

//! Prometheus metrics, under controller-runtime's names so that its dashboards and alerts work:
//! `controller_runtime_reconcile_total{controller, result}`,
//! `controller_runtime_reconcile_errors_total{controller, error}` and
//! `controller_runtime_reconcile_time_seconds{controller}`.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: String,
    error: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

type Durations = Family<ControllerLabels, Histogram, fn() -> Histogram>;

/// The manager's metrics; cheap to share behind an `Arc`.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    durations: Durations,
}

impl Default for Metrics {
    fn default() -> Self {
        let reconciles = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let durations: Durations =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 12)));
        let mut registry = Registry::with_prefix("controller_runtime");
        registry.register(
            "reconcile",
            "Reconciles per controller and result",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Failed reconciles per controller and error",
            errors.clone(),
        );
        registry.register(
            "reconcile_time_seconds",
            "How long reconciles take, per controller",
            durations.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            durations,
        }
    }
}

impl Metrics {
    /// Starts timing one reconcile of `controller`; the duration is recorded when the
    /// returned guard is dropped, the result by `Reconcile::succeeded`.
    pub fn reconcile(&self, controller: &str) -> Reconcile<'_> {
        Reconcile {
            metrics: self,
            controller: controller.to_string(),
            started: Instant::now(),
            succeeded: false,
        }
    }

    /// Counts a failed reconcile of `controller`, labelled with the kind of `error`.
    pub fn failure(&self, controller: &str, error: &str) {
        let labels = ErrorLabels {
            controller: controller.to_string(),
            error: error.to_string(),
        };
        self.errors.get_or_create(&labels).inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

/// One reconcile being timed.
pub struct Reconcile<'a> {
    metrics: &'a Metrics,
    controller: String,
    started: Instant,
    succeeded: bool,
}

impl Reconcile<'_> {
    /// Marks the reconcile as successful.
    pub fn succeeded(mut self) {
        self.succeeded = true;
    }
}

impl Drop for Reconcile<'_> {
    fn drop(&mut self) {
        let controller = ControllerLabels {
            controller: self.controller.clone(),
        };
        let seconds = self.started.elapsed().as_secs_f64();
        self.metrics
            .durations
            .get_or_create(&controller)
            .observe(seconds);
        let result = if self.succeeded { "success" } else { "error" };
        let labels = ResultLabels {
            controller: self.controller.clone(),
            result: result.to_string(),
        };
        self.metrics.reconciles.get_or_create(&labels).inc();
    }
}

/// `GET /metrics`.
pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(serve))
        .with_state(metrics)
}

async fn serve(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    ([(CONTENT_TYPE, content_type)], metrics.encode())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_times_reconciles_under_controller_runtimes_names() {
        let metrics = Metrics::default();
        metrics.reconcile("guestbook").succeeded();
        drop(metrics.reconcile("guestbook"));
        metrics.failure("guestbook", "kube");
        let text = metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"error\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"guestbook\",error=\"kube\"} 1",
            "controller_runtime_reconcile_time_seconds_count{controller=\"guestbook\"} 2",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }
}
