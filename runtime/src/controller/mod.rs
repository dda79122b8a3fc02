//! What every controller shares: the [`Context`] each reconcile gets, the [`Error`] type,
//! the [`Builder`] that runs a controller, [`observe`] (metrics and panic recovery around every
//! reconcile), the per-object [`Backoff`], the kinds a controller owns ([`Owned`]), `supervise`
//! (the manager's run of every controller) and the RBAC [`rule`]s they declare.
//!
//! A project's controllers are its own: one module per kind, with a `reconcile` and a `start`
//! that the manager runs (`src/controller/mod.rs` lists them).

mod builder;
pub mod events;
mod finalizer;
mod owned;

pub use builder::{Builder, CONCURRENCY, LAST_APPLIED, RESYNC, retry, slim};
pub use finalizer::finalizer;
pub use owned::{Applied, Applying, Owned, Owner};
pub(crate) use owned::{Cache, Caches, Write, Writes};

use std::any::Any;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::Client;
use kube::Resource;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::finalizer as kube_finalizer;
use kube::runtime::reflector::ObjectRef;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::health::Health;
use crate::metrics::{Metrics, Outcome};

/// What every reconciler gets: the API client, the manager's machinery, and the project's own
/// state `S` (`Manager::with_state`; none by default), a type the compiler checks.
pub struct Context<S = ()> {
    /// The Kubernetes API client.
    pub client: Client,
    /// Publishes Kubernetes Events about the objects being reconciled (see
    /// [`Context::publish`]).
    pub recorder: events::Events,
    /// Retry delays of the objects whose last reconcile failed.
    pub backoff: Backoff,
    /// Reconcile counts and durations, served on `/metrics`.
    pub metrics: Arc<Metrics>,
    /// What the probes report: caches synced, controllers alive.
    pub health: Health,
    /// Cancelled on SIGTERM or Ctrl-C: controllers stop taking work and finish what runs.
    pub shutdown: CancellationToken,
    /// The one namespace the controllers watch (`--watch-namespace`, `WATCH_NAMESPACE`), or
    /// `None` for all: see [`Context::api`].
    pub namespace: Option<String>,
    /// The project's own state: a client of an outside service, a cache, settings from its
    /// flags (`Manager::with_state`).
    pub state: S,
    /// The children's writes whose watch events are the manager's own.
    pub(crate) writes: Writes,
    /// The caches of the kinds owned many per owner, which `children::Children` reads.
    pub(crate) caches: Caches,
    /// The finalizers `finalizer` adds in the reconcile that applies.
    pub(crate) finalizers: finalizer::Finalizers,
    /// This replica's shard, when the manager runs with `--sharding`: the controllers watch
    /// only its objects.
    #[cfg(feature = "sharding")]
    pub shard: Option<Arc<crate::sharding::Shard>>,
}

impl Context {
    /// A context around `client`, for a test: [`Context::named`] `operator`.
    pub fn new(client: Client) -> Self {
        Self::named(client, "operator")
    }

    /// A context around `client` whose Events name the manager `manager` and, in a pod, the
    /// pod (`POD_NAME`, from the downward API).
    pub fn named(client: Client, manager: &str) -> Self {
        let reporter = Reporter {
            controller: manager.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: events::Events::new(client.clone(), reporter),
            client,
            backoff: Backoff::default(),
            metrics: Arc::new(Metrics::default()),
            health: Health::default(),
            shutdown: CancellationToken::new(),
            namespace: None,
            state: (),
            writes: Default::default(),
            caches: Default::default(),
            finalizers: Default::default(),
            #[cfg(feature = "sharding")]
            shard: None,
        }
    }
}

impl<S> Context<S> {
    /// This context with the project's own `state` in place of its state: what
    /// `Manager::with_state` does, for a context made by hand in a test.
    pub fn with_state<T>(self, state: T) -> Context<T> {
        Context {
            client: self.client,
            recorder: self.recorder,
            backoff: self.backoff,
            metrics: self.metrics,
            health: self.health,
            shutdown: self.shutdown,
            namespace: self.namespace,
            state,
            writes: self.writes,
            caches: self.caches,
            finalizers: self.finalizers,
            #[cfg(feature = "sharding")]
            shard: self.shard,
        }
    }

    /// The label selector of this replica's shard's objects, when the manager is sharded by
    /// labels.
    pub fn shard_selector(&self) -> Option<String> {
        #[cfg(feature = "sharding")]
        if let Some(shard) = &self.shard {
            return (shard.mode == crate::sharding::Mode::Labels).then(|| shard.selector());
        }
        None
    }

    /// The API of the objects of `K` the controllers see: a namespaced kind's in
    /// [`Context::namespace`] when it is set, else every object of the kind.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = ()>,
        K::Scope: Scoped,
    {
        <K::Scope as Scoped>::api(self.client.clone(), self.namespace.as_deref())
    }

    /// Publishes an Event about `obj`, e.g. `ctx.publish(&*obj, EventType::Normal,
    /// "Available", note).await`. A failure is logged, not returned: the reconcile has done its
    /// work (its status is written), and Events are best effort, as client-go's recorder.
    pub async fn publish<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        let regarding = obj.object_ref(&());
        if let Err(err) = self.recorder.publish(&event, &regarding).await {
            let name = regarding.name.unwrap_or_default();
            tracing::warn!(error = %err, reason, %name, "cannot publish an Event");
        }
    }
}

/// The errors a reconcile can end with; `error_policy` decides when to retry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the Kubernetes API failed.
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// Adding or removing the finalizer failed, or the step it wraps did.
    #[error("{0}")]
    Finalizer(#[source] Box<kube_finalizer::Error<Error>>),
    /// The object misses a field the controller needs. Terminal: retried only once the
    /// object changes.
    #[error("invalid object: {0}")]
    InvalidObject(String),
    /// A failure that no retry can mend until the object changes (controller-runtime's
    /// `reconcile.TerminalError`): logged, counted in `terminal_reconcile_errors_total`, and
    /// not retried.
    #[error("{0}")]
    Terminal(String),
    /// The reconcile panicked; it is retried like any failure.
    #[error("reconcile panicked: {0}")]
    Panic(String),
    /// The project's own error (`Error::other(err)`, or `?` on an `anyhow::Error`): retried
    /// like any failure. A failure no retry can mend is [`Error::Terminal`].
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl From<anyhow::Error> for Error {
    fn from(err: anyhow::Error) -> Self {
        Error::Other(err.into())
    }
}

impl Error {
    /// The project's own error `err`, retried like any failure.
    pub fn other(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Other(err.into())
    }

    /// What kind of failure this is, for logs and traces. A step that failed inside the
    /// finalizer is named by its own error, not by the finalizer's.
    pub fn kind(&self) -> &'static str {
        if let Some(step) = self.in_finalizer() {
            return step.kind();
        }
        match self {
            Error::Kube(_) => "kube",
            Error::Finalizer(_) => "finalizer",
            Error::InvalidObject(_) => "invalid_object",
            Error::Terminal(_) => "terminal",
            Error::Panic(_) => "panic",
            Error::Other(_) => "other",
        }
    }

    /// Whether retrying cannot help until the object changes: `InvalidObject` and `Terminal`,
    /// also inside the finalizer.
    pub fn is_terminal(&self) -> bool {
        if let Some(step) = self.in_finalizer() {
            return step.is_terminal();
        }
        match self {
            Error::InvalidObject(_) | Error::Terminal(_) => true,
            Error::Kube(_) | Error::Finalizer(_) | Error::Panic(_) | Error::Other(_) => false,
        }
    }

    /// The error of the step (`apply` or `cleanup`) that failed inside the finalizer, if that
    /// is what this is.
    fn in_finalizer(&self) -> Option<&Error> {
        match self {
            Error::Finalizer(err) => match err.as_ref() {
                kube_finalizer::Error::ApplyFailed(step)
                | kube_finalizer::Error::CleanupFailed(step) => Some(step),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The result of a reconcile step.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How the manager starts a controller: each module's `start`.
pub type Start<S = ()> = fn(Arc<Context<S>>) -> BoxFuture<'static, ()>;

/// How long the controllers may take to stop after a shutdown (finishing the reconciles that
/// run): less than the pod's `terminationGracePeriodSeconds` (10, config/manager), so that the
/// manager, not the kubelet's SIGKILL, ends them, and still releases its lease.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// Runs the controllers `starts` until they stop, or until `grace` after a shutdown: one that
/// has not stopped by then is stopped, with an error. A [`Builder`]'s controller stops at once
/// if its cache never synced (its CRD missing, its list forbidden); one of your own on kube's
/// `Controller` waits for it without end, even after a shutdown.
pub(crate) async fn supervise<S>(
    ctx: Arc<Context<S>>,
    starts: &[Start<S>],
    grace: Duration,
) -> anyhow::Result<()> {
    let mut controllers: JoinSet<()> = JoinSet::new();
    for start in starts {
        controllers.spawn(start(ctx.clone()));
    }
    ctx.health.expect(controllers.len());
    let shutdown = ctx.shutdown.clone();
    let grace_over = async move {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::pin!(grace_over);
    loop {
        let finished = tokio::select! {
            finished = controllers.join_next() => finished,
            () = &mut grace_over => anyhow::bail!(
                "{} controller(s) did not stop within {grace:?} of the shutdown (a cache that never synced, or a reconcile that does not end): stopped",
                controllers.len()
            ),
        };
        let problem = match finished {
            None => return Ok(()),
            Some(Ok(())) if ctx.shutdown.is_cancelled() => continue,
            Some(Ok(())) => "a controller stopped before shutdown".to_string(),
            Some(Err(err)) => format!("a controller failed: {err}"),
        };
        ctx.health.fail(problem.clone());
        ctx.shutdown.cancel();
        anyhow::bail!("{problem}");
    }
}

/// Runs one reconcile of `obj` by `controller`: counts it in the metrics, turns a panic into
/// `Error::Panic` (counted in `reconcile_panics_total`), and resets the object's backoff once it
/// succeeds. A panic is retried with backoff like any failure, as controller-runtime does,
/// instead of ending the controller.
pub async fn observe<K, S, F, Fut>(
    controller: &'static str,
    obj: Arc<K>,
    ctx: Arc<Context<S>>,
    reconcile: F,
) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
    F: FnOnce(Arc<K>, Arc<Context<S>>) -> Fut,
    Fut: Future<Output = Result<Action>>,
{
    let object = ObjectRef::from_obj(&*obj).erase();
    let _worker = ctx.metrics.active(controller);
    let started = Instant::now();
    // Where each reconcile starts and ends, for a test that merges replicas' logs.
    let (name, namespace) = (object.name.as_str(), object.namespace.as_deref());
    tracing::debug!(controller, name, namespace, "reconcile started");
    let result = match AssertUnwindSafe(reconcile(obj, ctx.clone()))
        .catch_unwind()
        .await
    {
        Ok(result) => result,
        Err(panic) => {
            ctx.metrics.panicked(controller);
            Err(Error::Panic(panic_message(panic.as_ref())))
        }
    };
    let outcome = match &result {
        Ok(action) if *action == Action::await_change() => Outcome::Success,
        Ok(action) if *action == Action::requeue(Duration::ZERO) => Outcome::Requeue,
        Ok(_) => Outcome::RequeueAfter,
        Err(_) => Outcome::Error,
    };
    tracing::debug!(controller, name, namespace, "reconcile ended");
    ctx.metrics
        .reconciled(controller, started.elapsed(), outcome);
    if let Err(err) = &result
        && err.is_terminal()
    {
        ctx.metrics.terminal(controller);
    }
    if result.is_ok() {
        ctx.backoff.reset(&object);
    }
    result
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The rules every manager needs besides its controllers': publishing Events.
pub fn manager_rules() -> Vec<PolicyRule> {
    vec![rule("events.k8s.io", "events", &["create", "patch"])]
}

/// A rule allowing `verbs` on `resource` (e.g. `deployments`, `guestbooks/status`) of the
/// API group `group` (`""` for core types such as pods).
pub fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..PolicyRule::default()
    }
}

/// Per-object retry delays for `error_policy`: 5 s, 10 s, 20 s, ... up to 5 minutes.
/// A successful reconcile resets the object's delay; the delays of objects that have not
/// failed for twice the longest delay (deleted while failing, say) are forgotten.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<ObjectRef<DynamicObject>, (u32, Instant)>>,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(5);
    const MAX: Duration = Duration::from_secs(300);

    /// Counts one more failure of `object` and returns how long to wait before retrying it.
    pub fn next_delay(&self, object: &ObjectRef<DynamicObject>) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        failures.retain(|_, (_, last)| now.duration_since(*last) < Self::MAX * 2);
        let (count, last) = failures.entry(object.clone()).or_insert((0, now));
        let delay = Self::FIRST.saturating_mul(2u32.saturating_pow(*count));
        *count = count.saturating_add(1);
        *last = now;
        delay.min(Self::MAX)
    }

    /// Forgets the failures of `object` after it reconciled.
    pub fn reset(&self, object: &ObjectRef<DynamicObject>) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(object);
    }

    /// How many objects' failures are remembered.
    pub fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Whether no object's failures are remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The scope of a kind, as [`Context::api`] reads it: a namespaced kind is watched in the
/// manager's namespace when it has one; a cluster-scoped kind always cluster-wide.
pub trait Scoped {
    /// The API of `K` for a manager watching `namespace` (`None`: all).
    fn api<K: Resource<DynamicType = (), Scope = Self>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K>;
}

impl Scoped for NamespaceResourceScope {
    fn api<K: Resource<DynamicType = (), Scope = Self>>(
        client: Client,
        namespace: Option<&str>,
    ) -> Api<K> {
        match namespace {
            Some(namespace) => Api::namespaced(client, namespace),
            None => Api::all(client),
        }
    }
}

impl Scoped for ClusterResourceScope {
    fn api<K: Resource<DynamicType = (), Scope = Self>>(client: Client, _: Option<&str>) -> Api<K> {
        Api::all(client)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// A client whose requests nobody answers.
    fn client() -> Client {
        let (service, _handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<kube::client::Body>,
        >();
        Client::new(service, "default")
    }

    fn context() -> Arc<Context> {
        Arc::new(Context::new(client()))
    }

    /// A manager watching one namespace reads a namespaced kind there and a cluster-scoped
    /// one cluster-wide; one watching all reads both cluster-wide.
    #[tokio::test]
    async fn a_namespaced_kind_is_read_in_the_watched_namespace() {
        use k8s_openapi::api::core::v1::Namespace;
        let ctx = context();
        assert_eq!(ctx.api::<ConfigMap>().resource_url(), "/api/v1/configmaps");
        let mut one = Context::new(ctx.client.clone());
        one.namespace = Some("shop-system".into());
        let url = one.api::<ConfigMap>().resource_url().to_string();
        assert_eq!(url, "/api/v1/namespaces/shop-system/configmaps");
        assert_eq!(one.api::<Namespace>().resource_url(), "/api/v1/namespaces");
    }

    fn config_map() -> Arc<ConfigMap> {
        let mut obj = ConfigMap::default();
        obj.metadata.name = Some("test".into());
        Arc::new(obj)
    }

    fn stops_at_shutdown(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
        async move { ctx.shutdown.cancelled().await }.boxed()
    }

    fn never_stops(_: Arc<Context>) -> BoxFuture<'static, ()> {
        std::future::pending().boxed()
    }

    fn stops_at_once(_: Arc<Context>) -> BoxFuture<'static, ()> {
        async {}.boxed()
    }

    #[tokio::test]
    async fn controllers_that_stop_at_shutdown_end_the_run() {
        let ctx = context();
        ctx.shutdown.cancel();
        let starts: &[Start] = &[stops_at_shutdown, stops_at_shutdown];
        supervise(ctx, starts, Duration::from_secs(60))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_controller_that_does_not_stop_is_stopped_after_the_grace() {
        let ctx = context();
        ctx.shutdown.cancel();
        let starts: &[Start] = &[stops_at_shutdown, never_stops];
        let err = supervise(ctx, starts, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("1 controller(s) did not stop within 50ms"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_controller_stopping_on_its_own_stops_the_others_and_fails_health() {
        let ctx = context();
        let starts: &[Start] = &[stops_at_shutdown, stops_at_once];
        let err = supervise(ctx.clone(), starts, Duration::from_secs(60))
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "a controller stopped before shutdown");
        assert!(ctx.shutdown.is_cancelled());
        assert_eq!(
            ctx.health.failure().as_deref(),
            Some(err.to_string().as_str())
        );
    }

    #[test]
    fn backoff_doubles_up_to_five_minutes_and_resets() {
        let backoff = Backoff::default();
        let object = ObjectRef::<ConfigMap>::new("test").erase();
        let delays: Vec<u64> = (0..8)
            .map(|_| backoff.next_delay(&object).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 300, 300]);
        backoff.reset(&object);
        assert_eq!(backoff.next_delay(&object), Backoff::FIRST);
    }

    /// An object deleted while failing is never reset: its entry goes once it has not failed
    /// for twice the longest delay.
    #[tokio::test(start_paused = true)]
    async fn the_failures_of_objects_gone_quiet_are_forgotten() {
        let backoff = Backoff::default();
        let deleted = ObjectRef::<ConfigMap>::new("deleted").erase();
        let other = ObjectRef::<ConfigMap>::new("other").erase();
        backoff.next_delay(&deleted);
        tokio::time::advance(Backoff::MAX).await;
        backoff.next_delay(&other);
        assert_eq!(backoff.len(), 2, "still within twice the longest delay");
        tokio::time::advance(Backoff::MAX + Duration::from_secs(1)).await;
        backoff.next_delay(&other);
        assert_eq!(
            backoff.len(),
            1,
            "the deleted object's failures are forgotten"
        );
    }

    #[tokio::test]
    async fn a_panicking_reconcile_is_an_error_counted_as_a_panic() {
        let ctx = context();
        let result = observe("test", config_map(), ctx.clone(), |_, _| async {
            if true {
                panic!("the user's bug");
            }
            Ok(Action::await_change())
        })
        .await;
        match result {
            Err(err @ Error::Panic(_)) => {
                assert_eq!(err.to_string(), "reconcile panicked: the user's bug");
                assert_eq!(err.kind(), "panic");
            }
            other => panic!("expected Error::Panic, got {other:?}"),
        }
        let text = ctx.metrics.encode();
        for line in [
            "controller_runtime_reconcile_panics_total{controller=\"test\"} 1",
            "controller_runtime_reconcile_errors_total{controller=\"test\"} 1",
            "controller_runtime_reconcile_total{controller=\"test\",result=\"error\"} 1",
            "controller_runtime_active_workers{controller=\"test\"} 0",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    #[tokio::test]
    async fn reconciles_are_counted_by_outcome_and_reset_the_backoff() {
        let ctx = context();
        let object = ObjectRef::from_obj(&*config_map()).erase();
        ctx.backoff.next_delay(&object);
        let resync = || Action::requeue(Duration::from_secs(300));
        let action = observe("test", config_map(), ctx.clone(), |_, _| async move {
            Ok(resync())
        });
        assert_eq!(action.await.unwrap(), resync());
        observe("test", config_map(), ctx.clone(), |_, _| async {
            Ok(Action::await_change())
        })
        .await
        .unwrap();
        assert_eq!(
            ctx.backoff.next_delay(&object),
            Backoff::FIRST,
            "backoff kept"
        );
        let text = ctx.metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"test\",result=\"requeue_after\"} 1",
            "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 1",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    /// Events are best effort: a refused one (no RBAC for events, an overloaded API server) is
    /// logged, and the reconcile that published it goes on.
    #[cfg(feature = "testing")]
    #[tokio::test]
    async fn an_event_is_published_about_the_object_and_a_refused_one_is_only_logged() {
        let (ctx, server) = crate::testing::mock::context();
        let note = "ready".to_string();
        ctx.publish(&*config_map(), EventType::Normal, "Available", note)
            .await;
        let events = server.writes();
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(events[0].path.ends_with("/events"), "{}", events[0].path);
        assert_eq!(events[0].body["reason"], "Available");
        assert_eq!(events[0].body["regarding"]["name"], "test");

        server.refuse("/events", http::StatusCode::FORBIDDEN);
        let note = "ready again".to_string();
        ctx.publish(&*config_map(), EventType::Warning, "Degraded", note)
            .await;
        assert_eq!(server.writes().len(), 2, "the refused Event was sent");
    }

    /// Finding 11 (in part): a terminal error (an invalid object, `Error::Terminal`, also
    /// inside the finalizer) is counted in `terminal_reconcile_errors_total` and not retried
    /// until the object changes; any other failure is retried with the object's backoff.
    #[tokio::test]
    async fn a_terminal_error_is_counted_and_waits_for_a_change() {
        let ctx = context();
        ctx.metrics.start_controller("test", 1);
        let invalid = || Error::InvalidObject("no spec".into());
        let in_finalizer =
            || Error::Finalizer(Box::new(kube_finalizer::Error::ApplyFailed(invalid())));
        for terminal in [invalid(), Error::Terminal("bad".into()), in_finalizer()] {
            assert!(terminal.is_terminal(), "{terminal:?}");
            let failed = observe("test", config_map(), ctx.clone(), |_, _| async {
                Err(terminal)
            });
            let err = failed.await.unwrap_err();
            let action = retry(config_map(), &err, ctx.clone());
            assert_eq!(action, Action::await_change(), "{err:?} was retried");
        }
        let object = ObjectRef::from_obj(&*config_map()).erase();
        assert_eq!(
            ctx.backoff.next_delay(&object),
            Backoff::FIRST,
            "no backoff kept"
        );

        let timeout = || kube::Error::Service("timed out".into());
        assert!(!Error::Kube(timeout()).is_terminal());
        let action = retry(config_map(), &Error::Kube(timeout()), ctx.clone());
        assert_eq!(action, Action::requeue(Backoff::FIRST * 2));
        let text = ctx.metrics.encode();
        for line in [
            "controller_runtime_terminal_reconcile_errors_total{controller=\"test\"} 3",
            "controller_runtime_reconcile_errors_total{controller=\"test\"} 3",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    /// The project's own state reaches each reconcile as its own type.
    #[tokio::test]
    async fn the_projects_state_reaches_the_reconcile_as_its_type() {
        struct Billing {
            endpoint: String,
        }
        let endpoint = "https://billing.example".to_string();
        let ctx = Arc::new(Context::new(client()).with_state(Billing { endpoint }));
        let action = observe("test", config_map(), ctx, |_, ctx| async move {
            let seconds = ctx.state.endpoint.len() as u64;
            Ok(Action::requeue(Duration::from_secs(seconds)))
        })
        .await
        .unwrap();
        assert_eq!(action, Action::requeue(Duration::from_secs(23)));
    }

    /// The project's own errors, `anyhow`'s or any `std::error::Error`, keep their message and
    /// source and are retried with backoff.
    #[tokio::test]
    async fn the_projects_own_error_is_retried_with_its_message() {
        let ctx = context();
        ctx.metrics.start_controller("test", 1);
        let io = std::io::Error::other("billing answered 503");
        let errors = [
            Error::from(anyhow::Error::new(io).context("cannot bill")),
            Error::other(std::io::Error::other("billing answered 503")),
        ];
        for (err, message) in errors
            .into_iter()
            .zip(["cannot bill", "billing answered 503"])
        {
            assert_eq!(err.to_string(), message);
            assert_eq!(err.kind(), "other");
            assert!(!err.is_terminal());
            let action = retry(config_map(), &err, ctx.clone());
            assert_ne!(action, Action::await_change(), "{err:?} was not retried");
        }
    }

    #[test]
    fn a_failure_inside_the_finalizer_is_named_by_its_own_kind() {
        let inner = Error::InvalidObject("no spec".into());
        let wrapped = Error::Finalizer(Box::new(kube_finalizer::Error::ApplyFailed(inner)));
        assert_eq!(wrapped.kind(), "invalid_object");
        assert_eq!(
            wrapped.to_string(),
            "failed to apply object: invalid object: no spec"
        );
        let own = Error::Finalizer(Box::new(kube_finalizer::Error::UnnamedObject));
        assert_eq!(own.kind(), "finalizer");
    }
}
