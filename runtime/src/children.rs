//! Objects a kind owns, its children (kubebuilder's `Owns` and `SetControllerReference`).
//!
//! A controller lists the kinds it owns in its `OWNED` (`create api --owns apps/v1/Deployment`),
//! each with a `Child` impl that builds the child from the owner. Then the controller watches
//! them, so a change to a child reconciles its owner; `apply` applies each child with
//! server-side apply under a controller owner reference (Kubernetes' garbage collector deletes
//! it with its owner), and never takes over an object of that name that another owner, or
//! nobody, controls; the owner's status says what the children report.
//!
//! The watch event of a child's own write does not reconcile its owner again (`Writes`).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt, future, stream};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::{Controller, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::controller::{Context, Error, Result, rule};

/// The label that names the manager of a child (`labels`): the owner's controller watches
/// only the children it labelled so.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// What a controller does with its children: watch them, apply them with server-side apply
/// (`create` for a child the apply creates). Kubernetes' garbage collector deletes them.
const VERBS: &[&str] = &["get", "list", "watch", "create", "patch"];

/// A kind whose objects own children: what kube's `Controller` needs of the kind it runs for.
pub trait Owner:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

impl<O> Owner for O where
    O: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

/// A kind that objects of kind `O` own: how `O`'s controller builds it, and when it is ready.
pub trait Child<O>:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The child `owner` asks for. Start from `meta(owner)`: the owner's name and namespace,
    /// labels, and the controller owner reference.
    fn build(owner: &O) -> Self;

    /// Why the child, as the API server returned it, is not ready yet; `None` when it is.
    fn not_ready(&self) -> Option<String>;
}

/// What `apply` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The child is applied and ready.
    Ready,
    /// The child is applied; it says why it is not ready yet.
    NotReady(String),
    /// An object of the child's name exists and another owner, or nobody, controls it: it was
    /// left alone.
    Foreign(String),
}

/// A future that applies one child.
pub type Applying<'a> = BoxFuture<'a, Result<Applied>>;

/// One kind a controller owns, as the controller uses it: `Owned::of::<Deployment>()`.
/// `S` is the project's state in the controller's [`Context`].
pub struct Owned<O: Owner, S = ()> {
    /// Adds the watch of the children to the owner's controller.
    pub watch: fn(Controller<O>, &Context<S>) -> Controller<O>,
    /// Builds the child of an owner and applies it with the given field manager.
    pub apply: for<'a> fn(&'a O, &'a Context<S>, &'static str) -> Applying<'a>,
    /// The RBAC rules the controller needs for the children.
    pub rules: fn() -> Vec<PolicyRule>,
}

impl<O: Owner, S: Send + Sync + 'static> Owned<O, S> {
    /// The kind `K`, owned by objects of kind `O`.
    pub const fn of<K: Child<O>>() -> Self {
        Self {
            watch: watch::<O, K, S>,
            apply: applying::<O, K, S>,
            rules: rules::<K>,
        }
    }
}

/// The metadata of the child of `owner`: the owner's name and namespace, `labels(owner)`, and
/// a controller owner reference (none when the owner has no UID yet; `apply` refuses it) that
/// blocks the owner's deletion, as controller-runtime's `SetControllerReference`: a foreground
/// deletion of the owner waits for its children. (Where the API server enforces owner
/// references, setting it needs `update` on `<owner's plural>/finalizers`.)
pub fn meta<O: Resource<DynamicType = ()>>(owner: &O) -> ObjectMeta {
    // A sharded owner's child follows it: the shard's owned watch selects by this label.
    let labels = labels(owner)
        .into_iter()
        .chain(shard_label(owner))
        .collect();
    ObjectMeta {
        name: owner.meta().name.clone(),
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
        let key = crate::sharding::label(crate::manager::name());
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
        (MANAGED_BY.to_string(), crate::manager::name().to_string()),
    ])
}

/// Watches the children of kind `K`: their metadata only (as kube's `owns`), and only those
/// this manager labelled (`labels`), not every object of the kind in the cluster. The event of
/// a child's write by `apply` is dropped ([`Writes`]); a child deleted while the watch was
/// away reconciles its owner too ([`Touched`]).
fn watch<O: Owner, K: Child<O>, S>(controller: Controller<O>, ctx: &Context<S>) -> Controller<O> {
    let children = ctx.api::<PartialObjectMeta<K>>();
    let selector = match ctx.shard_selector() {
        Some(shard) => format!("{},{shard}", selector()),
        None => selector(),
    };
    let config = watcher::Config::default().labels(&selector);
    let writes = ctx.writes.clone();
    #[cfg(feature = "sharding")]
    let shard = ctx.shard.clone();
    let mut touched = Touched::default();
    let changed = watcher(children, config)
        .map_ok(move |event| stream::iter(touched.admit(event).into_iter().map(Ok)))
        .try_flatten()
        .try_filter(move |child| {
            let echo = writes.is_echo::<O, _>(child);
            #[cfg(feature = "sharding")]
            let ours = (shard.as_ref())
                .is_none_or(|shard| crate::sharding::server::serves_owner_of(shard, child));
            #[cfg(not(feature = "sharding"))]
            let ours = true;
            future::ready(!echo && ours)
        });
    controller.owns_stream(changed)
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

/// The children `apply` wrote whose watch event has not come back yet: the resource version
/// each write returned, by owner kind and child. The owned watch drops an event at that
/// version, so that applying a child does not reconcile its owner a second time (on an owner
/// the cache may not yet show with the status that reconcile wrote); any other change to the
/// child has another version and reconciles the owner. Any event of a child forgets its write.
#[derive(Clone, Debug, Default)]
pub(crate) struct Writes(Arc<Mutex<HashMap<String, String>>>);

impl Writes {
    /// The key of `child`, of an owner of kind `O`.
    fn key<O, C>(child: &C) -> String
    where
        O: Resource<DynamicType = ()>,
        C: Resource<DynamicType = ()>,
    {
        let meta = child.meta();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let (owner, api_version, kind) = (O::kind(&()), C::api_version(&()), C::kind(&()));
        format!("{owner}/{api_version}/{kind}/{namespace}/{name}")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `apply` wrote `child`, which the API server returned.
    fn wrote<O: Resource<DynamicType = ()>, K: Resource<DynamicType = ()>>(&self, child: &K) {
        if let Some(version) = child.meta().resource_version.clone() {
            self.lock().insert(Self::key::<O, K>(child), version);
        }
    }

    /// Whether the event of `child` is that of a write of `apply`; forgets the write.
    fn is_echo<O, K>(&self, child: &PartialObjectMeta<K>) -> bool
    where
        O: Resource<DynamicType = ()>,
        K: Resource<DynamicType = ()>,
    {
        let written = self.lock().remove(&Self::key::<O, _>(child));
        written.is_some_and(|version| child.meta().resource_version.as_ref() == Some(&version))
    }
}

/// The label selector of this manager's children.
fn selector() -> String {
    format!("{MANAGED_BY}={}", crate::manager::name())
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
    let child = K::build(owner);
    let kind = K::kind(&());
    let invalid = |what: &str| Error::InvalidObject(format!("the {kind} of {what}"));
    let name = child.meta().name.clone();
    let name = name.ok_or_else(|| invalid("an object has no name"))?;
    let namespace = child.meta().namespace.clone();
    let namespace = namespace.ok_or_else(|| invalid("an object has no namespace"))?;
    let uid = owner.meta().uid.clone();
    let uid = uid.ok_or_else(|| invalid("an object without a UID cannot be owned"))?;
    let controlled = |meta: &ObjectMeta| {
        let mut refs = meta.owner_references.iter().flatten();
        refs.any(|r| r.controller == Some(true) && r.uid == uid)
    };
    if !controlled(child.meta()) {
        return Err(invalid("an object lacks its controller owner reference"));
    }
    let api = Api::<K>::namespaced(ctx.client.clone(), &namespace);
    let existing = api.get_opt(&name).await?;
    if let Some(existing) = &existing
        && !controlled(existing.meta())
    {
        let owner_kind = O::kind(&());
        return Ok(Applied::Foreign(format!(
            "{kind} {name} exists and is not controlled by this {owner_kind}"
        )));
    }
    let params = PatchParams::apply(manager).force();
    let applied = api.patch(&name, &params, &Patch::Apply(&child)).await?;
    // A new resource version: the apply changed the child, and its watch event is this write's.
    if existing.and_then(|e| e.meta().resource_version.clone()) != applied.meta().resource_version {
        ctx.writes.wrote::<O, K>(&applied);
    }
    Ok(match applied.not_ready() {
        None => Applied::Ready,
        Some(why) => Applied::NotReady(why),
    })
}

fn rules<K: Resource<DynamicType = ()>>() -> Vec<PolicyRule> {
    vec![rule(&K::group(&()), &K::plural(&()), VERBS)]
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

    #[test]
    fn the_event_of_a_write_is_dropped_and_any_other_reconciles() {
        use k8s_openapi::api::core::v1::{Pod, Service};
        let writes = Writes::default();
        writes.wrote::<Pod, _>(&written("10"));
        assert!(
            writes.is_echo::<Pod, _>(&event("10")),
            "the write's own event"
        );
        assert!(
            !writes.is_echo::<Pod, _>(&event("10")),
            "only once: forgotten"
        );
        writes.wrote::<Pod, _>(&written("11"));
        assert!(
            !writes.is_echo::<Pod, _>(&event("12")),
            "someone else's change"
        );
        assert!(
            !writes.is_echo::<Pod, _>(&event("11")),
            "forgotten at the first event"
        );
        writes.wrote::<Service, _>(&written("13"));
        assert!(
            !writes.is_echo::<Pod, _>(&event("13")),
            "another owner kind's write"
        );
        assert!(writes.is_echo::<Service, _>(&event("13")));
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
}
