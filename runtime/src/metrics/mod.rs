//! Prometheus metrics under controller-runtime's names, labels and buckets, so that its
//! dashboards and alerts work unchanged:
//!
//! - `controller_runtime_reconcile_total{controller, result}`: `result` is `success`, `error`,
//!   `requeue` or `requeue_after`;
//! - `controller_runtime_reconcile_errors_total{controller}`, and of those
//!   `controller_runtime_terminal_reconcile_errors_total{controller}` (not retried);
//! - `controller_runtime_reconcile_panics_total{controller}`;
//! - `controller_runtime_reconcile_time_seconds{controller}`: buckets from 5 ms to 60 s;
//! - `controller_runtime_active_workers{controller}` and
//!   `controller_runtime_max_concurrent_reconciles{controller}`;
//! - `controller_runtime_webhook_requests_total{webhook, code}`,
//!   `controller_runtime_webhook_requests_in_flight{webhook}` and
//!   `controller_runtime_webhook_latency_seconds{webhook}` (Prometheus' default buckets), the
//!   `webhook` label being the hook's path;
//! - `leader_election_master_status{name}`, and the `process_*` metrics of the Prometheus
//!   client libraries (CPU, memory, file descriptors, start time, threads).
//!
//! Every series of a controller exists, at zero, from the moment it starts. kube-runtime does
//! not expose its work queue, so controller-runtime's `workqueue_*` metrics have no
//! counterpart here.
//!
//! The project's own metrics (controller-runtime's `metrics.Registry.MustRegister`) are
//! registered by a function handed to `Manager::metrics`, which gets the registry /metrics
//! encodes; `prometheus_client` is re-exported for them.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "secure-metrics")]
pub(crate) mod secure;

use axum::Router;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use prometheus_client;

/// Registers the project's own metrics in the registry /metrics encodes (`Manager::metrics`):
/// a function, or a closure holding the metrics it registers.
pub type Register = Box<dyn Fn(&mut Registry) + Send + Sync>;

/// controller-runtime's buckets for `reconcile_time_seconds`, in seconds.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// How a reconcile ended, as controller-runtime labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done; nothing scheduled until the object changes.
    Success,
    /// Failed (a panic counts as an error too).
    Error,
    /// Done, and asked to run again at once.
    Requeue,
    /// Done, and asked to run again after a delay.
    RequeueAfter,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: String,
    code: String,
}

/// Prometheus' default buckets (client_golang's `DefBuckets`), which controller-runtime's
/// webhook latency uses.
const WEBHOOK_LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AssignmentLabels {
    controller: String,
    reason: String,
}

type Durations = Family<ControllerLabels, Histogram, fn() -> Histogram>;
type Latencies = Family<WebhookLabels, Histogram, fn() -> Histogram>;

/// The manager's metrics; cheap to share behind an `Arc`.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    terminal: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    durations: Durations,
    active_workers: Family<ControllerLabels, Gauge>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    webhook_requests: Family<WebhookCodeLabels, Counter>,
    webhook_in_flight: Family<WebhookLabels, Gauge>,
    webhook_latency: Latencies,
    leading: Family<LeaseLabels, Gauge>,
    shard_objects: Family<ControllerLabels, Gauge>,
    shard_released: Family<ControllerLabels, Counter>,
    shard_assignments: Family<AssignmentLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let metrics = Self {
            registry: Registry::default(),
            reconciles: Family::default(),
            errors: Family::default(),
            terminal: Family::default(),
            panics: Family::default(),
            durations: Family::new_with_constructor(|| {
                Histogram::new(RECONCILE_TIME_BUCKETS.iter().copied())
            }),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            webhook_requests: Family::default(),
            webhook_in_flight: Family::default(),
            webhook_latency: Family::new_with_constructor(|| {
                Histogram::new(WEBHOOK_LATENCY_BUCKETS.iter().copied())
            }),
            leading: Family::default(),
            shard_objects: Family::default(),
            shard_released: Family::default(),
            shard_assignments: Family::default(),
        };
        metrics.registered()
    }
}

impl Metrics {
    /// The metrics, with the project's own that `register` adds.
    pub fn with(register: &[Register]) -> Self {
        let mut metrics = Self::default();
        for register in register {
            register(&mut metrics.registry);
        }
        metrics
    }

    fn registered(mut self) -> Self {
        let runtime = self.registry.sub_registry_with_prefix("controller_runtime");
        runtime.register(
            "reconcile",
            "Total number of reconciliations per controller",
            self.reconciles.clone(),
        );
        runtime.register(
            "reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.errors.clone(),
        );
        runtime.register(
            "terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            self.terminal.clone(),
        );
        runtime.register(
            "reconcile_panics",
            "Total number of reconciliation panics per controller",
            self.panics.clone(),
        );
        runtime.register(
            "reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.durations.clone(),
        );
        runtime.register(
            "active_workers",
            "Number of currently used workers per controller",
            self.active_workers.clone(),
        );
        runtime.register(
            "max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        runtime.register(
            "webhook_requests",
            "Total number of admission requests by HTTP status code.",
            self.webhook_requests.clone(),
        );
        runtime.register(
            "webhook_requests_in_flight",
            "Current number of admission requests being served.",
            self.webhook_in_flight.clone(),
        );
        runtime.register(
            "webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            self.webhook_latency.clone(),
        );
        self.registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            self.leading.clone(),
        );
        let sharding = self.registry.sub_registry_with_prefix("sharding");
        sharding.register(
            "objects",
            "Number of objects this replica holds (its shard's) per controller",
            self.shard_objects.clone(),
        );
        sharding.register(
            "released",
            "Total number of objects this replica gave up to another shard per controller",
            self.shard_released.clone(),
        );
        sharding.register(
            "assignments",
            "Total number of objects the sharder labelled per controller and reason: new (no shard, or released), drain (asked to leave a live shard), dead (moved off a dead shard)",
            self.shard_assignments.clone(),
        );
        self.registry.register_collector(Box::new(ProcessCollector));
        self
    }

    /// Creates every series of `controller` at zero, so that they exist before its first
    /// reconcile, and records how many reconciles it runs at once.
    pub fn start_controller(&self, controller: &str, max_concurrent_reconciles: u16) {
        let labels = controller_labels(controller);
        for outcome in [
            Outcome::Success,
            Outcome::Error,
            Outcome::Requeue,
            Outcome::RequeueAfter,
        ] {
            drop(
                self.reconciles
                    .get_or_create(&result_labels(controller, outcome)),
            );
        }
        drop(self.errors.get_or_create(&labels));
        drop(self.terminal.get_or_create(&labels));
        drop(self.panics.get_or_create(&labels));
        drop(self.durations.get_or_create(&labels));
        drop(self.active_workers.get_or_create(&labels));
        self.max_concurrent
            .get_or_create(&labels)
            .set(i64::from(max_concurrent_reconciles));
    }

    /// Counts one reconcile of `controller` that took `elapsed` and ended with `outcome`.
    pub fn reconciled(&self, controller: &str, elapsed: Duration, outcome: Outcome) {
        let labels = controller_labels(controller);
        self.durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.reconciles
            .get_or_create(&result_labels(controller, outcome))
            .inc();
        if outcome == Outcome::Error {
            self.errors.get_or_create(&labels).inc();
        }
    }

    /// Counts a reconcile of `controller` that failed with a terminal error.
    pub fn terminal(&self, controller: &str) {
        self.terminal
            .get_or_create(&controller_labels(controller))
            .inc();
    }

    /// Counts a reconcile of `controller` that panicked.
    pub fn panicked(&self, controller: &str) {
        self.panics
            .get_or_create(&controller_labels(controller))
            .inc();
    }

    /// Counts a reconcile of `controller` as running until the returned guard is dropped.
    pub fn active(&self, controller: &str) -> ActiveWorker {
        let gauge = self
            .active_workers
            .get_or_create(&controller_labels(controller))
            .clone();
        gauge.inc();
        ActiveWorker(gauge)
    }

    /// Counts a request to the hook at `webhook` as served until the returned guard is
    /// dropped.
    pub fn webhook_started(&self, webhook: &str) -> ActiveWorker {
        let labels = WebhookLabels {
            webhook: webhook.to_string(),
        };
        let gauge = self.webhook_in_flight.get_or_create(&labels).clone();
        gauge.inc();
        ActiveWorker(gauge)
    }

    /// Counts a request to the hook at `webhook` answered with `code` after `elapsed`.
    pub fn webhook_answered(&self, webhook: &str, code: u16, elapsed: Duration) {
        let labels = WebhookLabels {
            webhook: webhook.to_string(),
        };
        self.webhook_latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        let labels = WebhookCodeLabels {
            webhook: webhook.to_string(),
            code: code.to_string(),
        };
        self.webhook_requests.get_or_create(&labels).inc();
    }

    /// Records whether this process holds the leader lease `name`.
    pub fn set_leading(&self, name: &str, leading: bool) {
        let labels = LeaseLabels {
            name: name.to_string(),
        };
        self.leading.get_or_create(&labels).set(i64::from(leading));
    }

    /// Records how many objects this replica holds for `controller` (sharded).
    pub fn holding(&self, controller: &str, objects: usize) {
        let objects = i64::try_from(objects).unwrap_or(i64::MAX);
        self.shard_objects
            .get_or_create(&controller_labels(controller))
            .set(objects);
    }

    /// Counts `objects` this replica gave up to other shards.
    pub fn released(&self, controller: &str, objects: u64) {
        self.shard_released
            .get_or_create(&controller_labels(controller))
            .inc_by(objects);
    }

    /// Counts one object the sharder labelled, for `reason` (`new`, `drain`, `dead`).
    pub fn assigned(&self, controller: &str, reason: &str) {
        let labels = AssignmentLabels {
            controller: controller.to_string(),
            reason: reason.to_string(),
        };
        self.shard_assignments.get_or_create(&labels).inc();
    }

    /// The metrics in the OpenMetrics text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }
}

fn controller_labels(controller: &str) -> ControllerLabels {
    ControllerLabels {
        controller: controller.to_string(),
    }
}

fn result_labels(controller: &str, outcome: Outcome) -> ResultLabels {
    ResultLabels {
        controller: controller.to_string(),
        result: outcome.label(),
    }
}

/// A reconcile counted in `active_workers`, or a webhook request in
/// `webhook_requests_in_flight`, until dropped.
pub struct ActiveWorker(Gauge);

impl Drop for ActiveWorker {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The `process_*` metrics, read from the operating system at each scrape.
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let process = metrics_process::collector::collect();
        if let Some(seconds) = process.cpu_seconds_total {
            let counter = ConstCounter::new(seconds);
            // prometheus-client adds a counter's `_total`.
            counter.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                process.resident_memory_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                process.virtual_memory_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                process.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                process.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                process.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                process.threads,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value.and_then(|v| i64::try_from(v).ok()) {
                let gauge = ConstGauge::new(value);
                gauge.encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    gauge.metric_type(),
                )?)?;
            }
        }
        Ok(())
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
    fn the_projects_own_metrics_are_served_beside_controller_runtimes() {
        // Registered by a closure that holds a clone: the project keeps the other.
        let widgets = Counter::<u64>::default();
        let registered = widgets.clone();
        let register: Register = Box::new(move |registry| {
            registry.register("guestbook_widgets", "Widgets seen", registered.clone())
        });
        let metrics = Metrics::with(&[register]);
        metrics.start_controller("guestbook", 1);
        widgets.inc_by(2);
        let text = metrics.encode();
        assert!(text.contains("\nguestbook_widgets_total 2\n"), "{text}");
        assert!(
            text.contains("# HELP guestbook_widgets Widgets seen."),
            "{text}"
        );
        assert!(
            text.contains("controller_runtime_reconcile_total{"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn every_series_exists_from_the_start() {
        let metrics = Metrics::default();
        metrics.start_controller("guestbook", 1);
        let text = metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"success\"} 0",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"error\"} 0",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"requeue\"} 0",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"requeue_after\"} 0",
            "controller_runtime_reconcile_errors_total{controller=\"guestbook\"} 0",
            "controller_runtime_reconcile_panics_total{controller=\"guestbook\"} 0",
            "controller_runtime_reconcile_time_seconds_count{controller=\"guestbook\"} 0",
            "controller_runtime_active_workers{controller=\"guestbook\"} 0",
            "controller_runtime_max_concurrent_reconciles{controller=\"guestbook\"} 1",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    #[test]
    fn counts_outcomes_errors_and_durations_in_controller_runtimes_buckets() {
        let metrics = Metrics::default();
        metrics.reconciled("guestbook", Duration::from_millis(3), Outcome::Success);
        metrics.reconciled("guestbook", Duration::from_secs(45), Outcome::Error);
        metrics.reconciled("guestbook", Duration::from_millis(3), Outcome::RequeueAfter);
        metrics.panicked("guestbook");
        let text = metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"error\"} 1",
            "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"requeue_after\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"guestbook\"} 1",
            "controller_runtime_reconcile_panics_total{controller=\"guestbook\"} 1",
            "controller_runtime_reconcile_time_seconds_bucket{le=\"0.005\",controller=\"guestbook\"} 2",
            "controller_runtime_reconcile_time_seconds_bucket{le=\"40.0\",controller=\"guestbook\"} 2",
            "controller_runtime_reconcile_time_seconds_bucket{le=\"50.0\",controller=\"guestbook\"} 3",
            "controller_runtime_reconcile_time_seconds_bucket{le=\"60.0\",controller=\"guestbook\"} 3",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    #[test]
    fn active_workers_counts_reconciles_in_flight() {
        let metrics = Metrics::default();
        let first = metrics.active("guestbook");
        let second = metrics.active("guestbook");
        let running = "controller_runtime_active_workers{controller=\"guestbook\"}";
        assert!(metrics.encode().contains(&format!("{running} 2")));
        drop(first);
        drop(second);
        assert!(metrics.encode().contains(&format!("{running} 0")));
    }

    #[test]
    fn leadership_and_the_process_are_reported() {
        let metrics = Metrics::default();
        metrics.set_leading("guestbook-leader-election", true);
        let text = metrics.encode();
        assert!(
            text.contains("leader_election_master_status{name=\"guestbook-leader-election\"} 1"),
            "{text}"
        );
        // Prometheus' own names: `process_cpu_seconds_total` once, not `..._total_total`.
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes"] {
            let sample = text.lines().any(|l| l.starts_with(&format!("{name} ")));
            assert!(sample, "no sample {name} in:\n{text}");
        }
    }
}
