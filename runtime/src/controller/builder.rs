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

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::{self, BoxFuture};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt, stream};
use kube::Resource;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use tracing::{debug, info, warn};

use super::finalizer::Finalizers;
use super::{Context, Error, Owned, Owner, Result, Scoped, observe};

/// What makes a change to an object worth a reconcile: its spec (`metadata.generation`, or
/// any change for a kind without one, such as a ConfigMap), its labels, its annotations, and
/// (hashed beside, by [`Changed`]) its finalizers. A change of the status alone is not: the
/// controller's own status apply would otherwise reconcile every object a second time for
/// nothing (controller-runtime's `GenerationChangedPredicate`, with the metadata a user may
/// signal through). Deletion bumps the generation.
fn changes<K: Resource>(obj: &K) -> Option<u64> {
    predicates::generation
        .fallback(predicates::resource_version)
        .combine(predicates::labels)
        .combine(predicates::annotations)
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
        let config = sharded(config, &ctx);
        let (cache, writer) = reflector::store();
        let (events, listed) = events::<K, S>(&ctx, config);
        let mut changed = Changed {
            finalizers: ctx.finalizers.clone(),
            ..Changed::default()
        };
        let listed_cache = cache.clone();
        let selection = listed.as_ref().map(|(listed, _)| listed.clone());
        let mut selected = None;
        let metrics = ctx.metrics.clone();
        // Whether the first list ended, and with it the cache's wait.
        let whole = Arc::new(AtomicBool::new(false));
        let first = whole.clone();
        let health = ctx.health.clone();
        let objects = events
            .modify(slim)
            .reflect(writer)
            .inspect_ok(move |event| {
                if let watcher::Event::InitDone = event {
                    // The cache has taken the list (`reflect`, before this): it is whole.
                    // kube's `Store::wait_until_ready` would tell only one waiter, the runner.
                    if !first.swap(true, Ordering::AcqRel) {
                        info!(controller = name, "cache synced");
                        health.synced();
                    }
                    if let Some((listed, synced)) = &listed {
                        synced.store(listed.load(Ordering::Acquire), Ordering::Release);
                    }
                }
            })
            .map_ok(move |event| {
                let done = matches!(event, watcher::Event::InitDone);
                let (one, list) = changed.admit(event);
                // The server-side mode: the list of a new selection no longer has the objects
                // that moved to other shards.
                let generation = selection.as_ref().map(|g| g.load(Ordering::Acquire));
                if let (true, Some(generation)) = (done, generation) {
                    let before = selected.replace(generation);
                    if before.is_some_and(|b| b != generation) && changed.left > 0 {
                        metrics.released(name, changed.left as u64);
                        info!(
                            controller = name,
                            objects = changed.left,
                            "released to other shards"
                        );
                    }
                }
                // A list's objects, from the cache it has just filled, one at a time.
                let cache = listed_cache.clone();
                let list = stream::iter(list).filter_map(move |key| {
                    future::ready(cache.get(&key).map(|obj| Ok(K::clone(&obj))))
                });
                stream::iter(one.map(Ok)).chain(list)
            })
            .try_flatten();
        let settings = controller::Config::default().concurrency(concurrency);
        let mut controller = Controller::for_stream(objects, cache)
            .with_config(settings)
            .graceful_shutdown_on(ctx.shutdown.clone().cancelled_owned());
        for owned in owned {
            controller = (owned.watch)(controller, &ctx);
        }
        ctx.metrics.start_controller(name, concurrency);
        #[cfg(feature = "sharding")]
        let sharder = crate::sharding::sharder::run(
            ctx.shard.clone(),
            ctx.client.clone(),
            ctx.api::<kube::core::PartialObjectMeta<K>>(),
            ctx.metrics.clone(),
            name,
            controller.store(),
        );
        #[cfg(not(feature = "sharding"))]
        let sharder = std::future::pending::<()>();
        let reconcile = move |obj: Arc<K>, ctx: Arc<Context<S>>| {
            let reconcile = reconcile.clone();
            // Counted from the controller's read of its cache on (server-side sharding).
            #[cfg(feature = "sharding")]
            let reconciling = ctx
                .shard
                .as_ref()
                .and_then(|shard| crate::sharding::server::reconciling(shard, &*obj));
            async move {
                #[cfg(feature = "sharding")]
                let _reconciling = reconciling;
                // The sharder asked this replica to give the object up: that is this
                // reconcile, in the object's slot, after any reconcile of it that ran.
                #[cfg(feature = "sharding")]
                if let Some(shard) = ctx.shard.as_ref().filter(|shard| shard.draining(&*obj)) {
                    if shard.release(&ctx.client, &*obj).await? {
                        ctx.metrics.released(name, 1);
                        let object = obj.meta().name.as_deref().unwrap_or_default();
                        info!(controller = name, object, "released to another shard");
                    }
                    return Ok(Action::await_change());
                }
                let action = observe(name, obj, ctx, reconcile).await?;
                Ok::<_, Error>(resynced(action, resync))
            }
        };
        // kube's runner holds the reconciles until the cache is whole, and the shutdown stops
        // the reading of the list that would make it so: a shutdown before the first list
        // ended would leave the controller waiting for ever. Nothing ran yet: stop at once.
        let shutdown = ctx.shutdown.clone();
        let unsynced = async move {
            shutdown.cancelled().await;
            if whole.load(Ordering::Acquire) {
                std::future::pending::<()>().await;
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
            () = unsynced => info!(controller = name, "stopped before its first list ended"),
        }
        info!(controller = name, "controller stopped");
    }
}

/// The generation counters of a server-side sharded watch: the selection its last list used,
/// and the one the cache was last replaced with.
type Listed = Option<(Arc<AtomicU64>, Arc<AtomicU64>)>;

/// The watch events of the controller's objects under `config`: the API server's selection of
/// this shard's objects in the server-side mode (listed again at each change of it), else one
/// watch.
fn events<K, S>(
    ctx: &Context<S>,
    config: watcher::Config,
) -> (
    BoxStream<'static, watcher::Result<watcher::Event<K>>>,
    Listed,
)
where
    K: Owner,
    K::Scope: Scoped,
{
    #[cfg(feature = "sharding")]
    if let Some(shard) = ctx
        .shard
        .as_ref()
        .filter(|shard| shard.mode == crate::sharding::Mode::Server)
    {
        let namespace = ctx.namespace.clone();
        let api = move |client| <K::Scope as Scoped>::api(client, namespace.as_deref());
        let (events, listed, synced) =
            crate::sharding::server::watch(ctx.client.clone(), api, shard, config);
        return (events, Some((listed, synced)));
    }
    (
        watcher(ctx.api::<K>(), config).default_backoff().boxed(),
        None,
    )
}

/// Which objects of a controller's watch events are worth a reconcile: new to the cache, or
/// changed by [`changes`] since the cache last had them. kube's `predicate_filter` does this
/// too, but remembers an object for an hour after it left the cache: an object that left this
/// shard and came back unchanged would not be reconciled again. This one forgets what a new
/// list no longer has. And it names a list's objects only once the list is whole: the cache
/// takes them then, and a reconcile scheduled before would not find its object. Hand-written.
struct Changed<K: Resource> {
    /// Per object (`namespace/name`): the hash of its UID and of what [`changes`] reads.
    seen: HashMap<String, u64>,
    /// During a list: what it has shown so far.
    listing: Option<HashMap<String, u64>>,
    /// During a list: its objects worth a reconcile.
    pending: Vec<ObjectRef<K>>,
    /// How many objects the last list no longer had.
    left: usize,
    /// The finalizers the controllers add in the reconcile that applies (`finalizer`): their
    /// addition is no change worth a reconcile.
    finalizers: Finalizers,
    hasher: RandomState,
}

impl<K: Resource> Default for Changed<K> {
    fn default() -> Self {
        Self {
            seen: HashMap::new(),
            listing: None,
            pending: Vec::new(),
            left: 0,
            finalizers: Finalizers::default(),
            hasher: RandomState::new(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> Changed<K> {
    /// The object of `event` if a reconcile should see it, and at the end of a list, those of
    /// the list that it should.
    fn admit(&mut self, event: watcher::Event<K>) -> (Option<K>, Vec<ObjectRef<K>>) {
        let key = |obj: &K| {
            let meta = obj.meta();
            let namespace = meta.namespace.as_deref().unwrap_or_default();
            format!("{namespace}/{}", meta.name.as_deref().unwrap_or_default())
        };
        let hasher = &self.hasher;
        // The finalizers, but those the runtime's `finalizer` adds in the reconcile that
        // applies (kube's `finalizer` waits for the event of its addition: the others count).
        let finalizers = &self.finalizers;
        let hash = |obj: &K| {
            let uid = obj.meta().uid.as_deref().unwrap_or_default();
            hasher.hash_one((uid, changes(obj), finalizers.others(obj)))
        };
        match event {
            watcher::Event::Init => {
                self.listing = Some(HashMap::new());
                self.pending.clear();
                (None, Vec::new())
            }
            watcher::Event::InitApply(obj) => {
                let (key, hash) = (key(&obj), hash(&obj));
                let new = self.seen.get(&key) != Some(&hash);
                self.listing.get_or_insert_default().insert(key, hash);
                if new {
                    self.pending.push(ObjectRef::from_obj(&obj));
                }
                (None, Vec::new())
            }
            watcher::Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                self.left = self
                    .seen
                    .keys()
                    .filter(|k| !listed.contains_key(*k))
                    .count();
                self.seen = listed;
                (None, std::mem::take(&mut self.pending))
            }
            watcher::Event::Apply(obj) => {
                let hash = hash(&obj);
                let new = self.seen.insert(key(&obj), hash) != Some(hash);
                (new.then_some(obj), Vec::new())
            }
            watcher::Event::Delete(obj) => {
                self.seen.remove(&key(&obj));
                (None, Vec::new())
            }
        }
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
    fn a_lists_objects_are_named_once_it_is_whole_and_one_that_left_is_forgotten() {
        let map = |name: &str, data: &str| {
            let mut obj = ConfigMap::default();
            obj.metadata.name = Some(name.into());
            obj.metadata.namespace = Some("default".into());
            obj.metadata.uid = Some(format!("uid-{name}"));
            obj.data = Some(BTreeMap::from([("k".to_string(), data.to_string())]));
            obj
        };
        let names = |(one, listed): (Option<ConfigMap>, Vec<ObjectRef<ConfigMap>>)| {
            let one = one.into_iter().map(|o| o.metadata.name.unwrap());
            one.chain(listed.into_iter().map(|r| r.name))
                .collect::<Vec<_>>()
        };
        let mut changed = Changed::default();
        let admit = |changed: &mut Changed<ConfigMap>, event| names(changed.admit(event));
        let (a, b) = (map("a", "1"), map("b", "1"));
        assert!(admit(&mut changed, watcher::Event::Init).is_empty());
        assert!(admit(&mut changed, watcher::Event::InitApply(a.clone())).is_empty());
        assert!(admit(&mut changed, watcher::Event::InitApply(b.clone())).is_empty());
        assert_eq!(admit(&mut changed, watcher::Event::InitDone), ["a", "b"]);
        assert!(
            admit(&mut changed, watcher::Event::Apply(a.clone())).is_empty(),
            "unchanged"
        );
        // A resource version alone is a change for a kind without a generation.
        let mut a2 = a.clone();
        a2.metadata.resource_version = Some("2".into());
        assert_eq!(
            admit(&mut changed, watcher::Event::Apply(a2.clone())),
            ["a"]
        );
        // A list without b (it left this shard), then one with it again, unchanged.
        for event in [watcher::Event::Init, watcher::Event::InitApply(a2.clone())] {
            assert!(admit(&mut changed, event).is_empty());
        }
        assert!(
            admit(&mut changed, watcher::Event::InitDone).is_empty(),
            "a did not change"
        );
        assert_eq!(changed.left, 1, "b left");
        for event in [watcher::Event::Init, watcher::Event::InitApply(a2)] {
            assert!(admit(&mut changed, event).is_empty());
        }
        assert!(admit(&mut changed, watcher::Event::InitApply(b)).is_empty());
        assert_eq!(
            admit(&mut changed, watcher::Event::InitDone),
            ["b"],
            "b came back"
        );
        assert_eq!(changed.left, 0);
        // Deleted and made again under the same name: a new UID.
        assert!(admit(&mut changed, watcher::Event::Delete(a.clone())).is_empty());
        let mut again = a;
        again.metadata.uid = Some("uid-a-again".into());
        assert_eq!(admit(&mut changed, watcher::Event::Apply(again)), ["a"]);
    }

    #[test]
    fn the_addition_of_a_finalizer_the_reconcile_adds_itself_is_no_change() {
        let mut obj = ConfigMap::default();
        obj.metadata.name = Some("a".into());
        obj.metadata.namespace = Some("default".into());
        obj.metadata.uid = Some("uid-a".into());
        // A kind with a generation, as every kind of the project's is.
        obj.metadata.generation = Some(1);
        let finalizers = Finalizers::default();
        let mut changed = Changed {
            finalizers: finalizers.clone(),
            ..Changed::default()
        };
        let worth = |changed: &mut Changed<ConfigMap>, obj: &ConfigMap| {
            changed
                .admit(watcher::Event::Apply(obj.clone()))
                .0
                .is_some()
        };
        let with = |obj: &ConfigMap, names: &[&str]| {
            let mut obj = obj.clone();
            obj.metadata.finalizers = Some(names.iter().map(|n| n.to_string()).collect());
            obj
        };
        assert!(worth(&mut changed, &obj), "new");
        // kube's `finalizer` (a project made before): its addition is the change it waits for.
        assert!(worth(&mut changed, &with(&obj, &["example.com/kube"])));
        // The runtime's: the reconcile that added it applied the object too.
        finalizers.add("example.com/cleanup");
        let ours = with(&obj, &["example.com/kube", "example.com/cleanup"]);
        assert!(!worth(&mut changed, &ours), "our finalizer's addition");
        // Another's finalizer is a change.
        let theirs = with(
            &obj,
            &["example.com/kube", "example.com/cleanup", "other.io/x"],
        );
        assert!(worth(&mut changed, &theirs), "another's finalizer");
    }

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

    #[tokio::test]
    async fn a_shutdown_before_the_first_list_ended_stops_the_controller_at_once() {
        use kube::client::{Body, Client};
        let (service, mut handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let ctx = Arc::new(Context::new(Client::new(service, "default")));
        let reconcile = |_: Arc<ConfigMap>, _: Arc<Context>| async { Ok(Action::await_change()) };
        let run = tokio::spawn(Builder::new("configmap").run(ctx.clone(), reconcile));
        // The first list is sent, and left unanswered.
        let (list, _answer) = handle.next_request().await.expect("the controller lists");
        assert!(list.uri().path().ends_with("/configmaps"), "{}", list.uri());
        ctx.shutdown.cancel();
        let stopped = tokio::time::timeout(Duration::from_secs(5), run).await;
        stopped.expect("the controller stopped").unwrap();
    }
}
