//! How a controller runs, controller-runtime's builder: the kind it reconciles, the kinds it
//! owns, how many objects at once and how often a healthy object is reconciled again. A
//! project's controller module says what differs from the defaults and hands its `reconcile`
//! over:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use futures::future::BoxFuture;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # use kube::runtime::controller::Action;
//! # use kube_scaffold_runtime::children::Owned;
//! # use kube_scaffold_runtime::controller::{Builder, Context, Result};
//! # const CONTROLLER: &str = "deployment";
//! # const OWNED: &[Owned<Deployment>] = &[];
//! # async fn reconcile(_: Arc<Deployment>, _: Arc<Context>) -> Result<Action> {
//! #     Ok(Action::await_change())
//! # }
//! pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
//!     Builder::new(CONTROLLER).owns(OWNED).start(ctx, reconcile)
//! }
//! ```
//!
//! The controller's cache keeps every object of the kind: [`slim`] drops from each what no
//! reconcile reads and what is often most of its size (the field managers' records, kubectl's
//! last-applied copy). Owned kinds are watched by metadata only, and only the objects this
//! manager labelled (`children::meta`).

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Predicate, PredicateConfig, WatchStreamExt, predicates, watcher};
use tracing::{debug, info, warn};

use super::{Context, Error, Result, Scoped, observe, report_synced};
use crate::children::{Owned, Owner};

/// What makes a change to an object worth a reconcile: its spec (`metadata.generation`, or
/// any change for a kind without one, such as a ConfigMap), its labels, its annotations or its
/// finalizers. A change of the status alone is not: the controller's own status apply would
/// otherwise reconcile every object a second time for nothing (controller-runtime's
/// `GenerationChangedPredicate`, with the metadata a user may signal through). Deletion bumps
/// the generation; the finalizer's addition is what `kube::runtime::finalizer` waits for.
fn changes<K: Resource>(obj: &K) -> Option<u64> {
    predicates::generation
        .fallback(predicates::resource_version)
        .combine(predicates::labels)
        .combine(predicates::annotations)
        .combine(predicates::finalizers)
        .hash_property(obj)
}

/// The annotation `kubectl apply` (client-side) keeps a copy of the whole object in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// How long a controller waits before reconciling a healthy object again, by default: the
/// reconcile that finds the world drifted from the spec without a watch event to say so.
pub const RESYNC: Duration = Duration::from_secs(300);

/// How many objects a controller reconciles at once, by default. Chosen by measurement
/// (`scripts/measure-reconcile` on 2 cores, where the API server's CPU bounds it): at 2,000
/// objects 1 takes 30 s and 4 to 64 13-14 s; at 10,000, 8 took 63-81 s and 32 55-66 s.
/// controller-runtime's default is 1, kube-runtime's no limit.
pub const CONCURRENCY: u16 = 32;

/// A controller of kind `K`, before it runs; `S` is the project's state in its [`Context`].
pub struct Builder<K: Owner, S: 'static = ()> {
    name: &'static str,
    watcher: watcher::Config,
    owned: &'static [Owned<K, S>],
    concurrency: u16,
    resync: Option<Duration>,
}

impl<K: Owner, S: Send + Sync + 'static> Builder<K, S>
where
    K::Scope: Scoped,
{
    /// The controller called `name` in metrics and logs: every object of `K` in the cluster
    /// (in the manager's namespace, if it watches one: [`Context::api`]),
    /// nothing owned, up to [`CONCURRENCY`] reconciles at once, a resync every [`RESYNC`].
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            watcher: watcher::Config::default().any_semantic(),
            owned: &[],
            concurrency: CONCURRENCY,
            resync: Some(RESYNC),
        }
    }

    /// Also watches the kinds in `owned`: a change to a child reconciles its owner.
    pub fn owns(mut self, owned: &'static [Owned<K, S>]) -> Self {
        self.owned = owned;
        self
    }

    /// Watches only the objects `config` selects (by label or field), e.g.
    /// `watcher::Config::default().labels("tier=web")`.
    pub fn watcher(mut self, config: watcher::Config) -> Self {
        self.watcher = config;
        self
    }

    /// Reconciles up to `count` objects at once (0: no limit); one object is never reconciled
    /// twice at the same time. The default is [`CONCURRENCY`].
    pub fn concurrency(mut self, count: u16) -> Self {
        self.concurrency = count;
        self
    }

    /// Reconciles an object again `period` (give or take 10%, so that objects created together
    /// spread out) after a reconcile that asked for nothing else (`Action::await_change()`);
    /// `None`: only when it changes.
    pub fn resync(mut self, period: Option<Duration>) -> Self {
        self.resync = period;
        self
    }

    /// [`Builder::run`], boxed: what a controller module's `start` returns to the manager.
    pub fn start<F, Fut>(self, ctx: Arc<Context<S>>, reconcile: F) -> BoxFuture<'static, ()>
    where
        F: Fn(Arc<K>, Arc<Context<S>>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Action>> + Send + 'static,
    {
        self.run(ctx, reconcile).boxed()
    }

    /// Watches the objects and reconciles each with `reconcile` until the shutdown: each
    /// reconcile is observed (metrics, panics: [`observe`]), a failure retried with the
    /// object's backoff ([`retry`]).
    pub async fn run<F, Fut>(self, ctx: Arc<Context<S>>, reconcile: F)
    where
        F: Fn(Arc<K>, Arc<Context<S>>) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Action>> + Send + 'static,
    {
        let Self {
            name,
            watcher: config,
            owned,
            concurrency,
            resync,
        } = self;
        let api = ctx.api::<K>();
        let config = sharded(config, &ctx);
        let (cache, writer) = reflector::store();
        let objects = watcher(api, config)
            .default_backoff()
            .modify(slim)
            .reflect(writer)
            .applied_objects()
            .predicate_filter(changes, PredicateConfig::default());
        let settings = controller::Config::default().concurrency(concurrency);
        let mut controller = Controller::for_stream(objects, cache)
            .with_config(settings)
            .graceful_shutdown_on(ctx.shutdown.clone().cancelled_owned());
        for owned in owned {
            controller = (owned.watch)(controller, &ctx);
        }
        report_synced(name, controller.store(), ctx.health.clone());
        ctx.metrics.start_controller(name, concurrency);
        #[cfg(feature = "sharding")]
        let sharder = crate::sharding::sharder::run::<K, S>(ctx.clone(), name, controller.store());
        #[cfg(not(feature = "sharding"))]
        let sharder = std::future::pending::<()>();
        let reconcile = move |obj: Arc<K>, ctx: Arc<Context<S>>| {
            let reconcile = reconcile.clone();
            async move {
                // The sharder asked this replica to give the object up: that is this
                // reconcile, in the object's slot, after any reconcile of it that ran.
                #[cfg(feature = "sharding")]
                if let Some(shard) = ctx.shard.as_ref().filter(|shard| shard.draining(&*obj)) {
                    if shard.release(&ctx, &*obj).await? {
                        ctx.metrics.released(name);
                        let object = obj.meta().name.as_deref().unwrap_or_default();
                        info!(controller = name, object, "released to another shard");
                    }
                    return Ok(Action::await_change());
                }
                let action = observe(name, obj, ctx, reconcile).await?;
                Ok::<_, Error>(resynced(action, resync))
            }
        };
        let controller = controller
            .run(reconcile, retry, ctx)
            .for_each(|result| async move {
                match result {
                    Ok((obj, _)) => info!(object = %obj, "reconciled"),
                    // `retry` has logged it, with its kind.
                    Err(controller::Error::ReconcilerFailed(..)) => {}
                    // A resync due after the object left this replica's watch (deleted, or
                    // moved to another shard).
                    Err(controller::Error::ObjectNotFound(obj)) => {
                        debug!(object = %obj, "no longer watched")
                    }
                    Err(err) => warn!(error = %err, "controller error"),
                }
            });
        // The sharder never ends: the controller's end ends it.
        tokio::select! {
            () = controller => {}
            () = sharder => {}
        }
        info!(controller = name, "controller stopped");
    }
}

/// `config`, selecting only this replica's shard's objects when the manager is sharded.
fn sharded<S>(mut config: watcher::Config, ctx: &Context<S>) -> watcher::Config {
    if let Some(ours) = ctx.shard_selector() {
        config.label_selector = Some(match config.label_selector.take() {
            Some(selector) => format!("{selector},{ours}"),
            None => ours,
        });
    }
    config
}

/// Drops from `obj`, as a controller's cache keeps it, what no reconcile reads: its
/// `managedFields` (server-side apply writes with its own field manager, from the object it
/// builds) and the last-applied annotation of `kubectl apply` (a copy of the object).
/// controller-runtime's `TransformStripManagedFields` does the first.
pub fn slim<K: Resource>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            meta.annotations = None;
        }
    }
}

/// When to retry after a reconcile of `obj` failed with `err`: the object's next backoff
/// delay (5 s, doubling up to 5 minutes); after a terminal error, not until the object
/// changes. Logs the failure with its kind.
pub fn retry<K: Resource<DynamicType = ()>, S>(
    obj: Arc<K>,
    err: &Error,
    ctx: Arc<Context<S>>,
) -> Action {
    let name = obj.meta().name.as_deref().unwrap_or_default();
    if err.is_terminal() {
        warn!(error = %err, kind = err.kind(), name, "reconcile failed; retried once the object changes");
        return Action::await_change();
    }
    let delay = ctx.backoff.next_delay(&ObjectRef::from_obj(&*obj).erase());
    warn!(error = %err, kind = err.kind(), name, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// `action`, or after a reconcile that asked for nothing, the resync `period` jittered.
fn resynced(action: Action, period: Option<Duration>) -> Action {
    match period {
        Some(period) if action == Action::await_change() => Action::requeue(jittered(period)),
        _ => action,
    }
}

/// `period` give or take 10%, at random.
fn jittered(period: Duration) -> Duration {
    let random = RandomState::new().hash_one(std::time::Instant::now());
    let fraction = random as f64 / u64::MAX as f64;
    period.mul_f64(0.9 + 0.2 * fraction)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    #[test]
    fn a_cached_object_keeps_neither_field_managers_nor_the_last_applied_copy() {
        let mut obj = ConfigMap::default();
        obj.metadata.name = Some("big".into());
        obj.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            ..ManagedFieldsEntry::default()
        }]);
        let annotations = [(LAST_APPLIED, "{\"a copy\": true}"), ("team", "web")];
        let annotations = annotations.map(|(k, v)| (k.to_string(), v.to_string()));
        obj.metadata.annotations = Some(BTreeMap::from(annotations));
        obj.data = Some(BTreeMap::from([("key".into(), "value".into())]));
        slim(&mut obj);
        assert_eq!(obj.metadata.managed_fields, None);
        let kept = BTreeMap::from([("team".to_string(), "web".to_string())]);
        assert_eq!(obj.metadata.annotations, Some(kept));
        assert_eq!(obj.metadata.name.as_deref(), Some("big"));
        assert!(obj.data.is_some(), "the object's own fields are kept");

        obj.metadata.annotations = Some(BTreeMap::from([(LAST_APPLIED.into(), "{}".into())]));
        slim(&mut obj);
        assert_eq!(obj.metadata.annotations, None, "no empty map left behind");
    }

    #[test]
    fn a_reconcile_that_asks_for_nothing_is_resynced_within_ten_percent() {
        let period = Duration::from_secs(300);
        let delays: Vec<Duration> = (0..200).map(|_| jittered(period)).collect();
        let low = Duration::from_secs(270);
        let high = Duration::from_secs(330);
        assert!(
            delays.iter().all(|d| (low..=high).contains(d)),
            "{delays:?}"
        );
        let first = delays[0];
        assert!(delays.iter().any(|d| *d != first), "no jitter: {first:?}");

        let resync = resynced(Action::await_change(), Some(period));
        assert_ne!(resync, Action::await_change());
        let asked = Action::requeue(Duration::from_secs(7));
        assert_eq!(resynced(asked.clone(), Some(period)), asked);
        let off = resynced(Action::await_change(), None);
        assert_eq!(off, Action::await_change());
    }
}
