//! Objects a kind owns, its children (kubebuilder's `Owns` and `SetControllerReference`).
//!
//! A controller lists the kinds it owns in its `OWNED`, in one of two ways:
//!
//! - `Owned::of::<Deployment>()` (`create api --owns apps/v1/Deployment`): one child of the
//!   kind per owner, named after it, built by the kind's `Child` impl from the owner alone;
//!   `apply` applies it and the owner's status says what it reports.
//! - `Owned::many::<Job>()`: any number of children of the kind per owner, each named, built
//!   and deleted by the reconcile itself, with its context and state, as kubebuilder's CronJob
//!   makes a Job per scheduled time: [`Children`] lists an owner's children from the cache of
//!   the owned watch, applies and deletes them.
//!
//! Either way the controller watches the children, so a change to one reconciles its owner;
//! a child is applied with server-side apply under a controller owner reference (Kubernetes'
//! garbage collector deletes it with its owner), and an object of its name that another owner,
//! or nobody, controls is never taken over. The watch event of a child's own write does not
//! reconcile its owner again (`Writes`).

use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use futures::{FutureExt, Stream, TryStreamExt, future, stream};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, Preconditions};
use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::controller::{Applied, Applying, Owned, Owner};
use crate::controller::{Cache, Caches, Context, Error, Result, Write, Writes, rule};

/// The label that names the manager of a child (`labels`): the owner's controller watches
/// only the children it labelled so.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// The value of [`MANAGED_BY`] on this process's children.
static MANAGER: OnceLock<String> = OnceLock::new();

/// The value of [`MANAGED_BY`] on this process's children: the name the first `Manager::new`
/// gave (its package's), `operator` before that. Process-wide because the user's
/// [`Child::build`], which calls [`labels`], has no context; and the value must not change:
/// a Deployment's selector holds it.
pub(crate) fn managed_by() -> &'static str {
    MANAGER.get().map_or("operator", String::as_str)
}

/// Sets [`managed_by`] to `manager`, unless it is already set.
pub(crate) fn set_managed_by(manager: &str) {
    let _ = MANAGER.set(manager.to_string());
}

/// What a controller does with its children: watch them, apply them with server-side apply
/// (`create` for a child the apply creates). Kubernetes' garbage collector deletes them.
const VERBS: &[&str] = &["get", "list", "watch", "create", "patch"];

/// A kind whose objects can be children: namespaced, applied with server-side apply and
/// cached.
pub trait ChildKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> ChildKind for K where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// A kind that objects of kind `O` own one of each: how `O`'s controller builds it, and when
/// it is ready.
pub trait Child<O>: ChildKind {
    /// The child `owner` asks for. Start from `meta(owner)`: the owner's name and namespace,
    /// labels, and the controller owner reference.
    fn build(owner: &O) -> Self;

    /// Why the child, as the API server returned it, is not ready yet; `None` when it is.
    fn not_ready(&self) -> Option<String>;
}

impl<O: Owner, S: Send + Sync + 'static> Owned<O, S> {
    /// The kind `K`, one child per object of kind `O`, built by `K`'s [`Child`] impl.
    pub const fn of<K: Child<O>>() -> Self {
        Self {
            watch: watch::<O, K, S>,
            apply: applying::<O, K, S>,
            rules: rules::<O, K>,
        }
    }

    /// The kind `K`, any number of children per object of kind `O`, which the reconcile
    /// names, builds, applies and deletes through [`Children`]. They are watched whole and
    /// cached (the metadata alone would not say a Job finished).
    pub const fn many<K: ChildKind>() -> Self {
        Self {
            watch: watch_many::<O, K, S>,
            apply: applied_by_the_reconcile::<O, S>,
            rules: rules_many::<O, K>,
        }
    }
}

/// The metadata of the child of `owner`: the owner's name and namespace, `labels(owner)`, and
/// a controller owner reference (none when the owner has no UID yet; `apply` refuses it) that
/// blocks the owner's deletion, as controller-runtime's `SetControllerReference`: a foreground
/// deletion of the owner waits for its children. (Where the API server enforces owner
/// references, setting it needs `update` on `<owner's plural>/finalizers`.)
pub fn meta<O: Resource<DynamicType = ()>>(owner: &O) -> ObjectMeta {
    ObjectMeta {
        name: owner.meta().name.clone(),
        ..named(owner, "")
    }
}

/// [`meta`] for a child called `name`: one of an owner's many children (`Owned::many`).
pub fn named<O: Resource<DynamicType = ()>>(owner: &O, name: &str) -> ObjectMeta {
    // A sharded owner's child follows it: the shard's owned watch selects by this label.
    let labels = labels(owner)
        .into_iter()
        .chain(shard_label(owner))
        .collect();
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: owner.meta().namespace.clone(),
        labels: Some(labels),
        owner_references: owner.controller_owner_ref(&()).map(|mut r| {
            r.block_owner_deletion = Some(true);
            vec![r]
        }),
        ..ObjectMeta::default()
    }
}

/// The label that names the shard of `owner`, if it has one: its children carry it too.
fn shard_label<O: Resource>(owner: &O) -> Option<(String, String)> {
    #[cfg(feature = "sharding")]
    {
        let key = crate::sharding::label(managed_by());
        let shard = owner.meta().labels.as_ref()?.get(&key)?;
        Some((key, shard.clone()))
    }
    #[cfg(not(feature = "sharding"))]
    {
        let _ = owner;
        None
    }
}

/// The labels of the children of `owner`, as kubebuilder's deploy-image sets them; also a
/// selector for the pods of a workload child.
pub fn labels<O: Resource<DynamicType = ()>>(owner: &O) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            O::kind(&()).to_lowercase(),
        ),
        ("app.kubernetes.io/instance".to_string(), owner.name_any()),
        (MANAGED_BY.to_string(), managed_by().to_string()),
    ])
}

/// Watches the children of kind `K`: their metadata only (as kube's `owns`), and only those
/// this manager labelled (`labels`), not every object of the kind in the cluster.
fn watch<O: Owner, K: ChildKind, S>(controller: Controller<O>, ctx: &Context<S>) -> Controller<O> {
    let events = watcher(ctx.api::<PartialObjectMeta<K>>(), config(ctx));
    controller.owns_stream(owners_of::<O, _, S>(events, ctx))
}

/// Watches the children of kind `K` whole, as `watch` selects them, into the cache that
/// [`Children`] reads; the cache has each change before the owner's reconcile runs for it.
fn watch_many<O: Owner, K: ChildKind, S>(
    controller: Controller<O>,
    ctx: &Context<S>,
) -> Controller<O> {
    let (cache, writer) = reflector::store();
    // Whether the cache has had its first list. Not the store's `wait_until_ready`: it wakes
    // only the last of the reconciles waiting at once (a oneshot receiver keeps one waker).
    let (listed, whole) = tokio::sync::watch::channel(false);
    ctx.caches.insert::<O, K>(Cached { cache, whole });
    let events = watcher(ctx.api::<K>(), config(ctx))
        .modify(crate::controller::slim)
        .reflect(writer)
        .inspect_ok(move |event| {
            if let watcher::Event::InitDone = event {
                listed.send_replace(true);
            }
        })
        .map_ok(metadata);
    controller.owns_stream(owners_of::<O, _, S>(events, ctx))
}

/// The watch of this manager's children, of this replica's shard when sharded by labels.
fn config<S>(ctx: &Context<S>) -> watcher::Config {
    let selector = match ctx.shard_selector() {
        Some(shard) => format!("{},{shard}", selector()),
        None => selector(),
    };
    watcher::Config::default().labels(&selector)
}

/// The children whose owners a watch's `events` reconcile: the event of a child's write by
/// `apply` is dropped ([`Writes`]); a child deleted while the watch was away counts too
/// ([`Touched`]).
fn owners_of<O: Owner, C, S>(
    events: impl Stream<Item = watcher::Result<watcher::Event<C>>> + Send + 'static,
    ctx: &Context<S>,
) -> impl Stream<Item = watcher::Result<C>> + Send + 'static
where
    C: Resource<DynamicType = ()> + Clone + Send + 'static,
{
    let writes = ctx.writes.clone();
    let owner_kind = O::kind(&()).to_string();
    #[cfg(feature = "sharding")]
    let shard = ctx.shard.clone();
    let mut touched = Touched::default();
    events
        .map_ok(move |event| stream::iter(touched.admit(event).into_iter().map(Ok)))
        .try_flatten()
        .try_filter(move |child| {
            #[cfg(feature = "sharding")]
            let ours = (shard.as_ref())
                .is_none_or(|shard| crate::sharding::server::serves_owner_of(shard, child));
            #[cfg(not(feature = "sharding"))]
            let ours = true;
            let echo = writes.is_echo(&owner_kind, child);
            async move { ours && !echo.await }
        })
}

/// `event` with its objects' metadata only: what the owner's reconcile is triggered by.
fn metadata<K: Resource<DynamicType = ()>>(
    event: watcher::Event<K>,
) -> watcher::Event<PartialObjectMeta<K>> {
    let partial = |child: K| child.meta().clone().into_response_partial::<K>();
    match event {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(child) => watcher::Event::InitApply(partial(child)),
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::Apply(child) => watcher::Event::Apply(partial(child)),
        watcher::Event::Delete(child) => watcher::Event::Delete(partial(child)),
    }
}

/// The children a watch event names for their owners' reconcile: the child of a change or a
/// deletion, every child of a list and, at a list's end, those it no longer has. kube's
/// `touched_objects` names all but the last: a child deleted while the watch was away (a
/// relist after 410 Gone, a restarted API server) would not reconcile its owner, which would
/// not make it again until its resync. Hand-written.
struct Touched<K> {
    /// The children as last seen, by `namespace/name`: their names and owner references.
    known: HashMap<String, K>,
    /// During a list: the children it has shown so far.
    listing: Option<HashMap<String, K>>,
}

impl<K> Default for Touched<K> {
    fn default() -> Self {
        Self {
            known: HashMap::new(),
            listing: None,
        }
    }
}

impl<K: Resource + Clone> Touched<K> {
    /// The children `event` names.
    fn admit(&mut self, event: watcher::Event<K>) -> Vec<K> {
        let key = |child: &K| {
            let meta = child.meta();
            let namespace = meta.namespace.as_deref().unwrap_or_default();
            format!("{namespace}/{}", meta.name.as_deref().unwrap_or_default())
        };
        // What names the owner, and nothing that could be taken for the echo of a write.
        let kept = |child: &K| {
            let mut kept = child.clone();
            let meta = kept.meta_mut();
            *meta = ObjectMeta {
                name: meta.name.take(),
                namespace: meta.namespace.take(),
                owner_references: meta.owner_references.take(),
                ..ObjectMeta::default()
            };
            kept
        };
        match event {
            watcher::Event::Init => {
                self.listing = Some(HashMap::new());
                Vec::new()
            }
            watcher::Event::InitApply(child) => {
                let listing = self.listing.get_or_insert_default();
                listing.insert(key(&child), kept(&child));
                vec![child]
            }
            watcher::Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                let known = std::mem::replace(&mut self.known, listed);
                let gone = known
                    .into_iter()
                    .filter(|(key, _)| !self.known.contains_key(key));
                gone.map(|(_, child)| child).collect()
            }
            watcher::Event::Apply(child) => {
                self.known.insert(key(&child), kept(&child));
                vec![child]
            }
            watcher::Event::Delete(child) => {
                self.known.remove(&key(&child));
                vec![child]
            }
        }
    }
}

/// How long the owned watch holds the event of a child whose write is not answered yet:
/// beyond, the event reconciles the owner (one reconcile more, nothing lost).
const ECHO_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Writes {
    /// The key of `child`, of an owner of kind `owner`.
    fn key<C: Resource<DynamicType = ()>>(owner: &str, child: &C) -> String {
        let meta = child.meta();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let (api_version, kind) = (C::api_version(&()), C::kind(&()));
        format!("{owner}/{api_version}/{kind}/{namespace}/{name}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Write>> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `apply` sends `child`, of an owner of kind `owner`: until the returned
    /// [`Sending`] is answered or dropped, an event of the child waits.
    fn send<K: Resource<DynamicType = ()>>(&self, owner: &str, child: &K) -> Sending<'_> {
        let key = Self::key(owner, child);
        self.lock().insert(key.clone(), Write::Sent);
        Sending { writes: self, key }
    }

    /// Whether the event of `child`, of an owner of kind `owner`, is that of a write of
    /// `apply`, once that write is answered; forgets the write.
    fn is_echo<C: Resource<DynamicType = ()>>(
        &self,
        owner: &str,
        child: &C,
    ) -> impl Future<Output = bool> + Send + use<C> {
        let (writes, key) = (self.clone(), Self::key(owner, child));
        let version = child.meta().resource_version.clone();
        let mut answered = self.answered.subscribe();
        async move {
            let answer = async {
                loop {
                    if let Some(written) = writes.answer(&key) {
                        return written;
                    }
                    if answered.changed().await.is_err() {
                        return None;
                    }
                }
            };
            let written = tokio::time::timeout(ECHO_WAIT, answer).await;
            written
                .ok()
                .flatten()
                .is_some_and(|written| Some(written) == version)
        }
    }

    /// The answer to the write of `key`, forgotten: `None` while it is sent, `Some(None)`
    /// without a write.
    fn answer(&self, key: &str) -> Option<Option<String>> {
        let mut writes = self.lock();
        if matches!(writes.get(key), Some(Write::Sent)) {
            return None;
        }
        match writes.remove(key) {
            Some(Write::Answered(written)) => Some(Some(written)),
            _ => Some(None),
        }
    }
}

/// A child's write sent and not answered yet ([`Writes::send`]); dropped unanswered (an
/// error, a reconcile cancelled), the write is forgotten.
struct Sending<'a> {
    writes: &'a Writes,
    key: String,
}

impl Sending<'_> {
    /// The write was answered with `child`: its event is to be dropped, if `changed` (an
    /// apply that changed nothing has no event).
    fn answered<K: Resource>(self, child: &K, changed: bool) {
        let version = child.meta().resource_version.clone();
        if let Some(version) = version.filter(|_| changed) {
            self.writes
                .lock()
                .insert(self.key.clone(), Write::Answered(version));
        }
        // `drop` forgets a write still `Sent` and tells the waiting events.
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        let mut writes = self.writes.lock();
        if matches!(writes.get(&self.key), Some(Write::Sent)) {
            writes.remove(&self.key);
        }
        drop(writes);
        self.writes.answered.send_replace(());
    }
}

/// The label selector of this manager's children.
fn selector() -> String {
    format!("{MANAGED_BY}={}", managed_by())
}

fn applying<'a, O, K, S>(owner: &'a O, ctx: &'a Context<S>, manager: &'static str) -> Applying<'a>
where
    O: Resource<DynamicType = ()> + Send + Sync,
    K: Child<O>,
    S: Send + Sync,
{
    apply::<O, K, S>(owner, ctx, manager).boxed()
}

/// Applies the child `owner` asks for with server-side apply, as field manager `manager`,
/// unless an object of its name exists that `owner` does not control.
pub async fn apply<O, K, S>(owner: &O, ctx: &Context<S>, manager: &str) -> Result<Applied>
where
    O: Resource<DynamicType = ()>,
    K: Child<O>,
{
    let owner_kind = O::kind(&());
    let uid = owner.meta().uid.clone();
    let uid = uid.ok_or_else(|| unowned::<K>(&owner_kind))?;
    let child = K::build(owner);
    let put = put(&ctx.client, &ctx.writes, &owner_kind, &uid, &child, manager);
    Ok(match put.await? {
        Put::Foreign(why) => Applied::Foreign(why),
        Put::Applied(child) => match child.not_ready() {
            None => Applied::Ready,
            Some(why) => Applied::NotReady(why),
        },
    })
}

/// What `put` did.
enum Put<K> {
    /// The child as the API server returned it.
    Applied(K),
    /// Why it was left alone: an object of its name exists that the owner does not control.
    Foreign(String),
}

/// Applies `child`, of the object of kind `owner_kind` and UID `uid`, with server-side apply
/// as field manager `manager`, unless an object of its name exists that the owner does not
/// control; records the write so that its watch event does not reconcile the owner again.
async fn put<K: ChildKind>(
    client: &Client,
    writes: &Writes,
    owner_kind: &str,
    uid: &str,
    child: &K,
    manager: &str,
) -> Result<Put<K>> {
    let kind = K::kind(&());
    let invalid = |what: &str| Error::InvalidObject(format!("the {kind} of {what}"));
    let name = child.meta().name.clone().filter(|name| !name.is_empty());
    let name = name.ok_or_else(|| invalid("an object has no name"))?;
    let namespace = child.meta().namespace.clone();
    let namespace = namespace.ok_or_else(|| invalid("an object has no namespace"))?;
    if !controlled_by(child.meta(), uid) {
        return Err(invalid("an object lacks its controller owner reference"));
    }
    let api = Api::<K>::namespaced(client.clone(), &namespace);
    let existing = api.get_opt(&name).await?;
    if let Some(existing) = &existing
        && !controlled_by(existing.meta(), uid)
    {
        return Ok(Put::Foreign(format!(
            "{kind} {name} exists and is not controlled by this {owner_kind}"
        )));
    }
    let params = PatchParams::apply(manager).force();
    let sending = writes.send(owner_kind, child);
    let applied = api.patch(&name, &params, &Patch::Apply(child)).await?;
    // A new resource version: the apply changed the child, and its watch event is this write's.
    let existing = existing.and_then(|e| e.meta().resource_version.clone());
    sending.answered(&applied, existing != applied.meta().resource_version);
    Ok(Put::Applied(applied))
}

/// Whether the object of `meta` is controlled by the object of UID `uid`.
fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    let mut refs = meta.owner_references.iter().flatten();
    refs.any(|r| r.controller == Some(true) && r.uid == uid)
}

/// The error of an owner of kind `owner_kind` that has no UID yet.
fn unowned<K: Resource<DynamicType = ()>>(owner_kind: &str) -> Error {
    let kind = K::kind(&());
    Error::InvalidObject(format!(
        "the {kind} of a {owner_kind} without a UID cannot be owned"
    ))
}

/// The children of kind `K` of one owner, as its reconcile sees them (`Owned::many::<K>()`):
/// listed from the cache of the owned watch, applied and deleted by the reconcile, e.g.
///
/// ```no_run
/// # use k8s_openapi::api::batch::v1::{CronJob, Job};
/// # use kube_scaffold_runtime::children::{self, Children};
/// # use kube_scaffold_runtime::controller::{Context, Result};
/// # async fn reconcile(ctx: &Context, cronjob: &CronJob) -> Result<()> {
/// let jobs: Children<Job> = Children::of(ctx, cronjob).await?;
/// let running = |job: &Job| job.status.as_ref().and_then(|s| s.active).unwrap_or(0) > 0;
/// let active = jobs.list().iter().filter(|job| running(job)).count();
/// if active == 0 {
///     let job = Job {
///         metadata: children::named(cronjob, "backup-1764374400"),
///         ..Job::default()
///     };
///     jobs.apply(&job, "my-operator").await?;
/// }
/// # Ok(())
/// # }
/// ```
pub struct Children<K> {
    /// The owner's children, by namespace and name.
    listed: Vec<Arc<K>>,
    client: Client,
    writes: Writes,
    owner_kind: String,
    /// The owner's UID; `None` before the API server gave it one (a unit test's object), when
    /// the owner has no children.
    uid: Option<String>,
}

impl<K: ChildKind> Children<K> {
    /// The children of kind `K` that `owner` controls: from the cache of the owned watch once
    /// its first list is in (kubebuilder's `List` with a `MatchingFields` on the owner), or,
    /// where the controller has no such watch (a context made by hand in a unit test), listed
    /// from the API server.
    pub async fn of<O: Owner, S>(ctx: &Context<S>, owner: &O) -> Result<Self> {
        let owner_kind = O::kind(&()).to_string();
        let uid = owner.meta().uid.clone();
        let mut listed: Vec<Arc<K>> = match ctx.caches.get::<O, K>() {
            Some(Cached { cache, mut whole }) => {
                let stopped =
                    |_| Error::other(format!("the watch of the {} stopped", K::plural(&())));
                whole.wait_for(|whole| *whole).await.map_err(stopped)?;
                cache.state()
            }
            None => {
                let api = match owner.meta().namespace.as_deref() {
                    Some(namespace) => Api::<K>::namespaced(ctx.client.clone(), namespace),
                    None => ctx.api::<K>(),
                };
                let listing = ListParams::default().labels(&selector());
                let items = api.list(&listing).await?.items;
                items.into_iter().map(Arc::new).collect()
            }
        };
        let mut children = Self {
            listed: Vec::new(),
            client: ctx.client.clone(),
            writes: ctx.writes.clone(),
            owner_kind,
            uid,
        };
        listed.retain(|child| children.controls(child));
        listed.sort_by(|a, b| {
            let key = |child: &K| (child.meta().namespace.clone(), child.meta().name.clone());
            key(a).cmp(&key(b))
        });
        children.listed = listed;
        Ok(children)
    }

    /// Whether the owner controls `child`.
    fn controls(&self, child: &K) -> bool {
        (self.uid.as_ref()).is_some_and(|uid| controlled_by(child.meta(), uid))
    }

    /// The owner's children, by namespace and name, as the reconcile began.
    pub fn list(&self) -> &[Arc<K>] {
        &self.listed
    }

    /// The child called `name`, in the owner's namespace, if the owner has one.
    pub fn get(&self, name: &str) -> Option<&Arc<K>> {
        let mut listed = self.listed.iter();
        listed.find(|child| child.meta().name.as_deref() == Some(name))
    }

    /// Applies `child` with server-side apply as field manager `manager`, and returns it as
    /// the API server did. Build its metadata with [`named`]. An object of its name that the
    /// owner does not control is left alone, and the reconcile fails, to be retried.
    pub async fn apply(&self, child: &K, manager: &str) -> Result<K> {
        let uid = self.uid.as_deref();
        let uid = uid.ok_or_else(|| unowned::<K>(&self.owner_kind))?;
        let put = put(
            &self.client,
            &self.writes,
            &self.owner_kind,
            uid,
            child,
            manager,
        );
        match put.await? {
            Put::Applied(child) => Ok(child),
            Put::Foreign(why) => Err(Error::other(why)),
        }
    }

    /// Deletes `child`, one of [`Children::list`], as kubebuilder's CronJob deletes its old
    /// Jobs: in the background (its own children, a Job's pods, go after it), and only the
    /// object listed (a UID precondition), not another made since under its name. One already
    /// gone is not an error.
    pub async fn delete(&self, child: &K) -> Result<()> {
        let kind = K::kind(&());
        let meta = child.meta();
        let name = meta.name.as_deref().unwrap_or_default();
        if !self.controls(child) {
            let owner_kind = &self.owner_kind;
            let why = format!("{kind} {name} is not controlled by this {owner_kind}");
            return Err(Error::InvalidObject(why));
        }
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let api = Api::<K>::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: meta.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(err) => Err(err.into()),
        }
    }
}

/// The cache of one owned kind, and whether it has had its first list.
#[derive(Clone)]
struct Cached<K: ChildKind> {
    cache: Store<K>,
    whole: tokio::sync::watch::Receiver<bool>,
}

impl Caches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(TypeId, TypeId), Cache>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `cache`, the children of kind `K` of the owners of kind `O`.
    fn insert<O: 'static, K: ChildKind>(&self, cache: Cached<K>) {
        let key = (TypeId::of::<O>(), TypeId::of::<K>());
        self.lock().insert(key, Box::new(cache));
    }

    /// The cache of the children of kind `K` of the owners of kind `O`, if watched.
    fn get<O: 'static, K: ChildKind>(&self) -> Option<Cached<K>> {
        let key = (TypeId::of::<O>(), TypeId::of::<K>());
        let lock = self.lock();
        lock.get(&key)?.downcast_ref::<Cached<K>>().cloned()
    }
}

/// The `apply` of `Owned::many`: nothing, the reconcile applies those children itself.
fn applied_by_the_reconcile<'a, O, S>(
    _: &'a O,
    _: &'a Context<S>,
    _: &'static str,
) -> Applying<'a> {
    future::ready(Ok(Applied::Ready)).boxed()
}

/// The rules of `Owned::many`: those of `Owned::of`, and `delete`.
fn rules_many<O: Resource<DynamicType = ()>, K: Resource<DynamicType = ()>>() -> Vec<PolicyRule> {
    rules_with::<O, K>(&[VERBS, &["delete"]].concat())
}

fn rules<O: Resource<DynamicType = ()>, K: Resource<DynamicType = ()>>() -> Vec<PolicyRule> {
    rules_with::<O, K>(VERBS)
}

/// `verbs` on the children, and `update` on the owners' finalizers: setting an owner
/// reference that blocks the owner's deletion needs it where the API server enforces owner
/// references.
fn rules_with<O, K>(verbs: &[&str]) -> Vec<PolicyRule>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    let finalizers = format!("{}/finalizers", O::plural(&()));
    vec![
        rule(&K::group(&()), &K::plural(&()), verbs),
        rule(&O::group(&()), &finalizers, &["update"]),
    ]
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn a_child_is_controlled_by_its_owner_and_blocks_its_deletion() {
        let mut owner = ConfigMap::default();
        owner.metadata.name = Some("owner".into());
        owner.metadata.namespace = Some("default".into());
        owner.metadata.uid = Some("9c8f3a52-0000-4000-8000-000000000001".into());
        let meta = meta(&owner);
        let refs = meta.owner_references.expect("an owner reference");
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].uid, "9c8f3a52-0000-4000-8000-000000000001");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].block_owner_deletion, Some(true));
        assert_eq!(meta.namespace.as_deref(), Some("default"));
    }

    #[test]
    fn a_child_deleted_while_the_watch_was_away_is_named_at_the_relist_end() {
        let child = |name: &str| {
            let mut child = ConfigMap::default();
            child.metadata.name = Some(name.into());
            child.metadata.namespace = Some("default".into());
            child.metadata.resource_version = Some("7".into());
            let mut owner = ConfigMap::default();
            owner.metadata.name = Some("owner".into());
            owner.metadata.uid = Some("9c8f3a52-0000-4000-8000-000000000002".into());
            child.metadata.owner_references = meta(&owner).owner_references;
            child
        };
        let names = |children: Vec<ConfigMap>| {
            let mut names: Vec<String> = children.into_iter().map(|c| c.name_any()).collect();
            names.sort();
            names
        };
        let mut touched = Touched::default();
        let (a, b, c) = (child("a"), child("b"), child("c"));
        assert!(touched.admit(watcher::Event::Init).is_empty());
        for one in [&a, &b] {
            let named = touched.admit(watcher::Event::InitApply(one.clone()));
            assert_eq!(names(named), [one.name_any()]);
        }
        assert!(touched.admit(watcher::Event::InitDone).is_empty());
        assert_eq!(
            names(touched.admit(watcher::Event::Apply(c.clone()))),
            ["c"]
        );
        // Listed again without b and c: both were deleted while the watch was away.
        touched.admit(watcher::Event::Init);
        touched.admit(watcher::Event::InitApply(a.clone()));
        let gone = touched.admit(watcher::Event::InitDone);
        assert_eq!(names(gone.clone()), ["b", "c"]);
        assert!(gone[0].meta().owner_references.is_some(), "names its owner");
        assert_eq!(gone[0].meta().resource_version, None, "not an echo");
        // A deletion seen as such is named once.
        assert_eq!(names(touched.admit(watcher::Event::Delete(a))), ["a"]);
        touched.admit(watcher::Event::Init);
        assert!(touched.admit(watcher::Event::InitDone).is_empty());
    }

    /// The metadata of ConfigMap `default/c` at resource version `version`, as the owned
    /// watch sees it.
    fn event(version: &str) -> PartialObjectMeta<ConfigMap> {
        use kube::core::PartialObjectMetaExt;
        let meta = ObjectMeta {
            name: Some("c".into()),
            namespace: Some("default".into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        };
        meta.into_response_partial()
    }

    /// That ConfigMap as an apply returns it.
    fn written(version: &str) -> ConfigMap {
        ConfigMap {
            metadata: event(version).metadata,
            ..ConfigMap::default()
        }
    }

    /// Writes `child` of an owner of kind `owner` as `put` does, answered with `version`.
    fn wrote(writes: &Writes, owner: &str, version: &str) {
        writes
            .send(owner, &written(version))
            .answered(&written(version), true);
    }

    #[tokio::test]
    async fn the_event_of_a_write_is_dropped_and_any_other_reconciles() {
        let writes = Writes::default();
        wrote(&writes, "Pod", "10");
        assert!(
            writes.is_echo("Pod", &event("10")).await,
            "the write's own event"
        );
        assert!(
            !writes.is_echo("Pod", &event("10")).await,
            "only once: forgotten"
        );
        wrote(&writes, "Pod", "11");
        assert!(
            !writes.is_echo("Pod", &event("12")).await,
            "someone else's change"
        );
        assert!(
            !writes.is_echo("Pod", &event("11")).await,
            "forgotten at the first event"
        );
        wrote(&writes, "Service", "13");
        assert!(
            !writes.is_echo("Pod", &event("13")).await,
            "another owner kind's write"
        );
        assert!(writes.is_echo("Service", &event("13")).await);
    }

    /// The watch event of a write can come before the write's answer (seen on the real
    /// control plane): it waits for the answer.
    #[tokio::test]
    async fn the_event_of_a_write_before_its_answer_waits_for_it() {
        let writes = Writes::default();
        let sending = writes.send("Pod", &written("20"));
        let echo = writes.is_echo("Pod", &event("20"));
        let (echo, ()) = tokio::join!(echo, async move {
            tokio::task::yield_now().await;
            sending.answered(&written("20"), true);
        });
        assert!(echo, "the write's own event, come before its answer");

        // A write that fails (or is cancelled) is forgotten: its event reconciles.
        let sending = writes.send("Pod", &written("21"));
        let echo = writes.is_echo("Pod", &event("21"));
        let (echo, ()) = tokio::join!(echo, async move {
            tokio::task::yield_now().await;
            drop(sending);
        });
        assert!(!echo, "no answer: not an echo");

        // A write that changed nothing has no event: any event reconciles.
        writes
            .send("Pod", &written("22"))
            .answered(&written("22"), false);
        assert!(!writes.is_echo("Pod", &event("22")).await);
    }

    /// The owned watch selects by `labels`: a child built from `meta` is one it sees.
    #[test]
    fn a_child_carries_the_label_its_owners_watch_selects() {
        let mut owner = ConfigMap::default();
        owner.metadata.name = Some("owner".into());
        let labels = meta(&owner).labels.expect("labels");
        let (key, value) = selector()
            .split_once('=')
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .unwrap();
        assert_eq!(labels.get(&key), Some(&value));
    }

    /// An owner's many children, against the mock API server.
    #[cfg(feature = "testing")]
    mod many {
        use http::Method;
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::runtime::reflector;

        use super::*;
        use crate::testing::mock;

        const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

        fn owner() -> ConfigMap {
            let mut owner = ConfigMap::default();
            owner.metadata.name = Some("owner".into());
            owner.metadata.namespace = Some("default".into());
            owner.metadata.uid = Some("9c8f3a52-0000-4000-8000-000000000003".into());
            owner
        }

        /// A child of `owner()` called `name`, as it would build one.
        fn child(name: &str) -> ConfigMap {
            ConfigMap {
                metadata: named(&owner(), name),
                ..ConfigMap::default()
            }
        }

        fn names(children: &Children<ConfigMap>) -> Vec<String> {
            children.list().iter().map(|c| c.name_any()).collect()
        }

        #[tokio::test]
        async fn without_a_watch_an_owners_children_are_listed_from_the_api_server() {
            let (ctx, server) = mock::context();
            for name in ["b", "a"] {
                server.insert(&format!("{CONFIGMAPS}/{name}"), &child(name));
            }
            // Labelled, another owner's; and one of the owner's name without the label.
            let mut other = child("c");
            other.metadata.owner_references.as_mut().unwrap()[0].uid = "another".into();
            server.insert(&format!("{CONFIGMAPS}/c"), &other);
            let mut unlabelled = child("d");
            unlabelled.metadata.labels = None;
            server.insert(&format!("{CONFIGMAPS}/d"), &unlabelled);

            let children = Children::<ConfigMap>::of(&*ctx, &owner()).await.unwrap();
            assert_eq!(names(&children), ["a", "b"]);
            assert!(children.get("b").is_some() && children.get("c").is_none());
        }

        #[tokio::test]
        async fn with_the_owned_watch_they_come_from_its_cache_once_listed() {
            let (ctx, server) = mock::context();
            server.insert(
                &format!("{CONFIGMAPS}/on-the-server"),
                &child("on-the-server"),
            );
            let (cache, mut writer) = reflector::store();
            let (listed, whole) = tokio::sync::watch::channel(false);
            ctx.caches
                .insert::<ConfigMap, ConfigMap>(Cached { cache, whole });
            writer.apply_watcher_event(&watcher::Event::Init);
            writer.apply_watcher_event(&watcher::Event::InitApply(child("cached")));
            writer.apply_watcher_event(&watcher::Event::InitDone);
            // Reconciles waiting for the first list at once: every one goes on once it is in.
            let waiting: Vec<_> = (0..3)
                .map(|_| {
                    let ctx = ctx.clone();
                    tokio::spawn(async move {
                        Children::<ConfigMap>::of(&*ctx, &owner())
                            .await
                            .map(|c| names(&c))
                    })
                })
                .collect();
            tokio::task::yield_now().await;
            listed.send_replace(true);
            for waiting in waiting {
                let listed = tokio::time::timeout(std::time::Duration::from_secs(5), waiting);
                let names = listed.await.expect("woken").unwrap().unwrap();
                assert_eq!(names, ["cached"]);
            }
            assert!(server.sent().is_empty(), "{:?}", server.sent());
        }

        #[tokio::test]
        async fn a_child_is_applied_unless_another_controls_its_name() {
            let (ctx, server) = mock::context();
            let children = Children::<ConfigMap>::of(&*ctx, &owner()).await.unwrap();
            let applied = children.apply(&child("a"), "manager").await.unwrap();
            assert_eq!(applied.name_any(), "a");
            let stored = server.get(&format!("{CONFIGMAPS}/a")).expect("applied");
            assert_eq!(stored["metadata"]["ownerReferences"][0]["controller"], true);

            let mut foreign = ConfigMap::default();
            foreign.metadata.name = Some("b".into());
            server.insert(&format!("{CONFIGMAPS}/b"), &foreign);
            let writes = server.writes().len();
            let err = children.apply(&child("b"), "manager").await.unwrap_err();
            let said = err.to_string();
            assert_eq!(
                said,
                "ConfigMap b exists and is not controlled by this ConfigMap"
            );
            assert_eq!(
                server.writes().len(),
                writes,
                "the foreign object was written"
            );
        }

        #[tokio::test]
        async fn a_child_is_deleted_in_the_background_and_only_the_one_listed() {
            let (ctx, server) = mock::context();
            let mut listed = child("a");
            listed.metadata.uid = Some("uid-of-a".into());
            server.insert(&format!("{CONFIGMAPS}/a"), &listed);
            let children = Children::<ConfigMap>::of(&*ctx, &owner()).await.unwrap();
            children.delete(&children.list()[0]).await.unwrap();
            let deletes: Vec<_> = (server.sent().into_iter())
                .filter(|sent| sent.method == Method::DELETE)
                .collect();
            assert_eq!(deletes.len(), 1, "{deletes:?}");
            assert_eq!(deletes[0].path, format!("{CONFIGMAPS}/a"));
            assert_eq!(deletes[0].body["propagationPolicy"], "Background");
            assert_eq!(deletes[0].body["preconditions"]["uid"], "uid-of-a");
            // Gone already: done.
            children.delete(&listed).await.unwrap();

            let mut foreign = child("b");
            foreign.metadata.owner_references = None;
            let err = children.delete(&foreign).await.unwrap_err();
            assert!(matches!(err, Error::InvalidObject(_)), "{err}");
            assert_eq!(server.sent().len(), 3, "no DELETE of another's object");
        }
    }
}
