//! Leader election (`--leader-elect`): of several replicas, only the holder of a Lease in the
//! pod's namespace runs the controllers.
//!
//! It follows client-go's algorithm, with controller-runtime's defaults: the leader renews the
//! lease every retry period (2 s); if no renewal succeeds within the renew deadline (10 s), it
//! stops leading, and the manager exits non-zero so that the pod restarts as a standby. A
//! standby takes the lease once its holder has not renewed it for the lease duration (15 s),
//! timed by this process's own clock, so clock skew between nodes does not matter. On shutdown
//! the leader releases the lease, so that a standby takes over at once. A leader renews with
//! one write of the lease as it last wrote it (client-go's fast path), and reads it only when
//! that write fails (another process took it, or the API server refused).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::{Instant, sleep, timeout, timeout_at};
use tracing::{debug, info, warn};

use crate::health::Health;

/// The timing of leader election; controller-runtime's defaults are 15 s, 10 s and 2 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long a standby waits after the last renewal it saw before it takes the lease.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading.
    pub renew_deadline: Duration,
    /// How long to wait between two attempts to take or renew the lease.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// Checks the order client-go requires: retry period < renew deadline < lease duration, so
    /// that a leader gives up before any standby may take over.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("the retry period must be more than zero".into());
        }
        if self.renew_deadline <= self.retry_period {
            return Err(format!(
                "the renew deadline ({:?}) must be longer than the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(format!(
                "the lease duration ({:?}) must be longer than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        Ok(())
    }
}

/// Why this process stopped leading.
#[derive(Debug, PartialEq, Eq)]
pub enum Lost {
    /// No renewal succeeded within the renew deadline.
    RenewDeadline(Duration),
    /// Another process holds the lease.
    TakenBy(String),
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lost::RenewDeadline(deadline) => {
                write!(f, "could not renew the leader lease within {deadline:?}")
            }
            Lost::TakenBy(holder) => write!(f, "the leader lease is now held by {holder}"),
        }
    }
}

/// Takes, keeps and releases the Lease `name` for the process `identity`.
pub struct Elector {
    leases: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    /// The lease's record as last read, and when this process saw it change.
    observed: Option<(LeaseSpec, Instant)>,
    /// The lease as this process last wrote it, while it holds it.
    held: Option<Lease>,
    /// The labels the lease is created with.
    labels: Option<BTreeMap<String, String>>,
}

impl Elector {
    /// An elector for the lease `namespace/name`; `identity` names this process (its pod).
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        timing: Timing,
    ) -> Self {
        Self {
            leases: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            timing,
            observed: None,
            held: None,
            labels: None,
        }
    }

    /// This elector, creating its lease with `labels` (how a shard's Lease is found).
    pub fn labelled(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = Some(labels);
        self
    }

    /// Waits until this process holds the lease, trying every retry period. Each answer of
    /// the API server keeps `health` ready as a standby. Each attempt is bounded by the renew
    /// deadline, as client-go's client is: a request that never returns (a connection lost
    /// without a reset) would otherwise keep a standby from ever taking over.
    pub async fn acquire(&mut self, health: &Health) {
        info!(lease = %self.name, identity = %self.identity, "waiting to lead");
        loop {
            let attempt = timeout(self.timing.renew_deadline, self.try_acquire_or_renew());
            match attempt.await {
                Ok(Ok(true)) => {
                    info!(identity = %self.identity, "became the leader");
                    return;
                }
                Ok(Ok(false)) => health.contacted(),
                Ok(Err(err)) => {
                    warn!(error = %err, "cannot read or take the leader lease; retrying")
                }
                Err(_) => warn!(
                    deadline = ?self.timing.renew_deadline,
                    "no answer about the leader lease within the renew deadline; retrying"
                ),
            }
            sleep(self.timing.retry_period).await;
        }
    }

    /// Renews the lease every retry period while this process leads, and returns when it no
    /// longer does: when no renewal succeeded within the renew deadline (each request is
    /// bounded by it too), or when another process took the lease.
    pub async fn keep(&mut self) -> Lost {
        loop {
            let deadline = Instant::now() + self.timing.renew_deadline;
            loop {
                if Instant::now() >= deadline {
                    return Lost::RenewDeadline(self.timing.renew_deadline);
                }
                match timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(Ok(true)) => break,
                    Ok(Ok(false)) => return Lost::TakenBy(self.holder().unwrap_or_default()),
                    Ok(Err(err)) => warn!(error = %err, "cannot renew the leader lease; retrying"),
                    Err(_) => return Lost::RenewDeadline(self.timing.renew_deadline),
                }
                sleep(self.timing.retry_period).await;
            }
            sleep(self.timing.retry_period).await;
        }
    }

    /// Gives the lease up, so that a standby takes over without waiting for it to expire.
    pub async fn release(&mut self) {
        self.held = None;
        if self.holder().as_deref() != Some(self.identity.as_str()) {
            return;
        }
        let result = async {
            let mut lease = self.leases.get(&self.name).await?;
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
                return Ok(());
            }
            let now = MicroTime(Timestamp::now());
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.acquire_time = Some(now.clone());
            spec.renew_time = Some(now);
            self.leases
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map(drop)
        };
        match result.await {
            Ok(()) => info!("released the leader lease"),
            Err(err) => warn!(error = %err, "could not release the leader lease"),
        }
    }

    /// One attempt, as client-go's `tryAcquireOrRenew`: whether this process holds the lease
    /// after it. A lease held by another process is taken only once this process has seen
    /// no change to it for the lease's duration.
    async fn try_acquire_or_renew(&mut self) -> kube::Result<bool> {
        // The leader writes the lease it last wrote, renewed: no read while nothing changed.
        // Its resource version makes the write fail if anyone else wrote the lease since.
        if let Some(held) = self.held.take() {
            let lease = Lease {
                spec: Some(self.record(held.spec.as_ref())),
                metadata: held.metadata,
            };
            match self
                .leases
                .replace(&self.name, &PostParams::default(), &lease)
                .await
            {
                Ok(renewed) => return Ok(self.hold(renewed)),
                Err(err) => debug!(error = %err, "cannot renew the lease directly; reading it"),
            }
        }
        let Some(current) = self.leases.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    labels: self.labels.clone(),
                    ..ObjectMeta::default()
                },
                spec: Some(self.record(None)),
            };
            let created = self.leases.create(&PostParams::default(), &lease).await?;
            return Ok(self.hold(created));
        };
        let spec = current.spec.clone().unwrap_or_default();
        self.observe(spec.clone());
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty());
        if let Some(holder) = holder
            && holder != self.identity
        {
            let duration = spec
                .lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .map_or(self.timing.lease_duration, Duration::from_secs);
            let seen = self
                .observed
                .as_ref()
                .map_or_else(Instant::now, |(_, at)| *at);
            if seen.elapsed() < duration {
                return Ok(false);
            }
        }
        let lease = Lease {
            metadata: current.metadata,
            spec: Some(self.record(Some(&spec))),
        };
        let replaced = self
            .leases
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        Ok(self.hold(replaced))
    }

    /// Remembers `lease`, just written with this process as its holder: held.
    fn hold(&mut self, lease: Lease) -> bool {
        self.observe(lease.spec.clone().unwrap_or_default());
        self.held = Some(lease);
        true
    }

    /// The record that says this process holds the lease, renewed now.
    fn record(&self, previous: Option<&LeaseSpec>) -> LeaseSpec {
        let now = MicroTime(Timestamp::now());
        let ours = previous
            .and_then(|p| p.holder_identity.as_deref())
            .is_some_and(|h| h == self.identity);
        let transitions = previous.and_then(|p| p.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.timing.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: match previous {
                Some(p) if ours => p.acquire_time.clone(),
                _ => Some(now.clone()),
            },
            renew_time: Some(now),
            lease_transitions: Some(match previous {
                Some(_) if !ours => transitions + 1,
                _ => transitions,
            }),
            ..LeaseSpec::default()
        }
    }

    /// Remembers the lease's record, and when it last changed by this process's clock.
    fn observe(&mut self, spec: LeaseSpec) {
        let unchanged = self
            .observed
            .as_ref()
            .is_some_and(|(seen, _)| *seen == spec);
        if !unchanged {
            self.observed = Some((spec, Instant::now()));
        }
    }

    fn holder(&self) -> Option<String> {
        self.observed
            .as_ref()
            .and_then(|(spec, _)| spec.holder_identity.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http::{Method, Request, Response, StatusCode};
    use kube::client::Body;
    use serde_json::{Value, json};

    use super::*;

    const ME: &str = "manager-a";

    /// What the stand-in API server was asked: method, body, and when (on the paused clock).
    type Log = Arc<Mutex<Vec<(Method, Value, Instant)>>>;

    /// What `answer` returns for a request the stand-in never answers (a lost connection).
    const NO_ANSWER: StatusCode = StatusCode::GATEWAY_TIMEOUT;

    /// An elector whose client talks to a stand-in API server that answers each request
    /// with `answer(method, body)`, or never, for `NO_ANSWER`.
    fn elector(
        answer: impl Fn(&Method, &Value) -> (StatusCode, Value) + Send + 'static,
    ) -> (Elector, Log) {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let log: Log = Arc::default();
        let seen = log.clone();
        tokio::spawn(async move {
            let mut unanswered = Vec::new();
            while let Some((request, send)) = handle.next_request().await {
                let method = request.method().clone();
                let bytes = request.into_body().collect_bytes().await.expect("a body");
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let (status, reply) = answer(&method, &body);
                seen.lock().unwrap().push((method, body, Instant::now()));
                if status == NO_ANSWER {
                    unanswered.push(send);
                    continue;
                }
                let reply = serde_json::to_vec(&reply).expect("JSON");
                send.send_response(
                    Response::builder()
                        .status(status)
                        .body(Body::from(reply))
                        .expect("a response"),
                );
            }
        });
        let client = Client::new(service, "default");
        (
            Elector::new(client, "default", "the-lease", ME, Timing::default()),
            log,
        )
    }

    fn lease(holder: &str) -> Value {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "the-lease", "namespace": "default", "resourceVersion": "1"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15},
        })
    }

    fn unavailable() -> (StatusCode, Value) {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "the API server is overloaded", "reason": "ServiceUnavailable", "code": 503,
        });
        (StatusCode::SERVICE_UNAVAILABLE, status)
    }

    fn writes(log: &Log) -> Vec<(Method, Value, Instant)> {
        let log = log.lock().unwrap();
        log.iter()
            .filter(|(m, _, _)| *m != Method::GET)
            .cloned()
            .collect()
    }

    #[test]
    fn timing_must_let_the_leader_give_up_before_a_standby_takes_over() {
        assert_eq!(Timing::default().validate(), Ok(()));
        let late = Timing {
            renew_deadline: Duration::from_secs(20),
            ..Timing::default()
        };
        assert!(late.validate().unwrap_err().contains("lease duration"));
        let busy = Timing {
            retry_period: Duration::from_secs(10),
            ..Timing::default()
        };
        assert!(busy.validate().unwrap_err().contains("retry period"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_lease_is_created_and_taken() {
        let (mut elector, log) = elector(|method, body| match *method {
            Method::GET => (
                StatusCode::NOT_FOUND,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
            ),
            _ => (StatusCode::CREATED, body.clone()),
        });
        elector.acquire(&Health::default()).await;
        let writes = writes(&log);
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].0, Method::POST);
        assert_eq!(writes[0].1["spec"]["holderIdentity"], ME);
        assert_eq!(writes[0].1["spec"]["leaseDurationSeconds"], 15);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_held_by_another_is_taken_only_after_its_duration() {
        let (mut elector, log) = elector(|method, body| match *method {
            Method::GET => (StatusCode::OK, lease("manager-b")),
            _ => (StatusCode::OK, body.clone()),
        });
        let started = Instant::now();
        elector.acquire(&Health::default()).await;
        let writes = writes(&log);
        assert_eq!(writes.len(), 1, "one write, the takeover");
        assert_eq!(writes[0].0, Method::PUT);
        assert_eq!(writes[0].1["spec"]["holderIdentity"], ME);
        assert_eq!(writes[0].1["spec"]["leaseTransitions"], 1);
        let waited = writes[0].2 - started;
        assert!(
            waited >= Duration::from_secs(15) && waited < Duration::from_secs(18),
            "took over after {waited:?}"
        );
    }

    /// Found on the real node: a standby's request that never returned kept it from taking
    /// over the lease its leader had released.
    #[tokio::test(start_paused = true)]
    async fn a_standby_whose_request_never_returns_tries_again() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let asked = AtomicUsize::new(0);
        let (mut elector, log) =
            elector(
                move |method, body| match (asked.fetch_add(1, Ordering::SeqCst), method) {
                    (0, _) => (NO_ANSWER, Value::Null),
                    (_, &Method::GET) => (StatusCode::OK, lease("")),
                    _ => (StatusCode::OK, body.clone()),
                },
            );
        let started = Instant::now();
        let health = Health::default();
        let acquired = timeout(Duration::from_secs(60), elector.acquire(&health));
        assert!(acquired.await.is_ok(), "still waiting on the first request");
        let after = started.elapsed();
        assert!(after >= Duration::from_secs(10), "gave up after {after:?}");
        let writes = writes(&log);
        assert_eq!(writes[0].1["spec"]["holderIdentity"], ME);
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_that_cannot_renew_stops_within_the_renew_deadline() {
        let (mut elector, log) = elector(|_, _| unavailable());
        elector.observe(LeaseSpec {
            holder_identity: Some(ME.into()),
            ..LeaseSpec::default()
        });
        let started = Instant::now();
        let lost = elector.keep().await;
        let after = started.elapsed();
        assert_eq!(lost, Lost::RenewDeadline(Duration::from_secs(10)));
        assert!(
            after <= Duration::from_secs(10),
            "stopped leading after {after:?}"
        );
        assert!(after >= Duration::from_secs(8), "gave up after {after:?}");
        assert!(log.lock().unwrap().len() >= 4, "retried every retry period");
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_lease_was_taken_stops_at_once() {
        let (mut elector, _log) = elector(|_, _| (StatusCode::OK, lease("manager-b")));
        elector.observe(LeaseSpec {
            holder_identity: Some(ME.into()),
            ..LeaseSpec::default()
        });
        assert_eq!(elector.keep().await, Lost::TakenBy("manager-b".into()));
    }

    /// client-go's fast path: while it leads, each renewal is one write, no read.
    #[tokio::test(start_paused = true)]
    async fn a_leader_renews_with_one_write_and_no_read() {
        let (mut elector, log) = elector(|method, body| match *method {
            Method::GET => (StatusCode::OK, lease(ME)),
            _ => (StatusCode::OK, body.clone()),
        });
        elector.acquire(&Health::default()).await;
        let leading = tokio::time::timeout(Duration::from_secs(9), elector.keep()).await;
        assert!(leading.is_err(), "stopped leading: {leading:?}");
        let log = log.lock().unwrap();
        let count = |method: Method| log.iter().filter(|(m, _, _)| *m == method).count();
        assert_eq!(count(Method::GET), 1, "only taking the lease read it");
        assert!(
            count(Method::PUT) >= 4,
            "renewed every retry period: {log:?}"
        );
    }

    /// A direct renewal that conflicts (someone else wrote the lease) reads the lease, and
    /// finds it taken.
    #[tokio::test(start_paused = true)]
    async fn a_leader_whose_renewal_conflicts_reads_the_lease_and_stops() {
        let taken = Arc::new(Mutex::new(false));
        let taken_here = taken.clone();
        let (mut elector, _log) = elector(move |method, body| {
            let taken = *taken_here.lock().unwrap();
            match (method.clone(), taken) {
                (Method::GET, false) => (StatusCode::OK, lease(ME)),
                (Method::GET, true) => (StatusCode::OK, lease("manager-b")),
                (_, false) => (StatusCode::OK, body.clone()),
                (_, true) => {
                    let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409});
                    (StatusCode::CONFLICT, conflict)
                }
            }
        });
        elector.acquire(&Health::default()).await;
        *taken.lock().unwrap() = true;
        assert_eq!(elector.keep().await, Lost::TakenBy("manager-b".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_standby_that_cannot_reach_the_api_server_stops_being_ready() {
        let (mut elector, _log) = elector(|_, _| unavailable());
        let health = Health::default();
        let bound = Timing::default().lease_duration;
        health.standby(bound);
        let waiting =
            tokio::time::timeout(bound + Duration::from_secs(1), elector.acquire(&health));
        assert!(waiting.await.is_err(), "took a lease it cannot reach");
        assert!(
            !health.is_ready(),
            "ready without reaching the API server for {bound:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_leader_releases_the_lease_on_shutdown() {
        let (mut elector, log) = elector(|method, body| match *method {
            Method::GET => (StatusCode::OK, lease(ME)),
            _ => (StatusCode::OK, body.clone()),
        });
        elector.acquire(&Health::default()).await;
        elector.release().await;
        let writes = writes(&log);
        let released = &writes.last().expect("a write").1;
        assert_eq!(released["spec"].get("holderIdentity"), None, "{released}");
        assert_eq!(released["spec"]["leaseDurationSeconds"], 1);
    }
}
