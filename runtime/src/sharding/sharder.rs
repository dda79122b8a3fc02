//! The sharder: run by the holder of the leader lease, it keeps the ring of live shards from
//! their Leases ([`members`]) and places each object of a controller's kind on it ([`assign`]),
//! through the drain step when the object leaves a live shard ([`decide`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::core::{ApiResource, PartialObjectMeta};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::record;
use super::ring::Ring;
use super::{RING_LABEL, SHARD_LABEL, Shard, dynamic_api};
use crate::leader::Timing;
use crate::metrics::Metrics;

/// How many label patches the sharder has in flight at once.
const PATCHES: usize = 32;

/// How long a dead shard's Lease is kept before the sharder deletes it.
const FORGET_DEAD: Duration = Duration::from_secs(60);

/// The first wait before a label patch that failed (not for a conflict) is sent again; it
/// doubles up to [`RETRY_LAST`], after which the sharder lists the objects again.
const RETRY_FIRST: Duration = Duration::from_millis(250);
/// The last wait before a failed label patch is sent again.
const RETRY_LAST: Duration = Duration::from_secs(4);

/// What the sharder writes on an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Move {
    /// Names the object's shard: a new object, or one whose shard released it or died.
    Assign { shard: String, reason: Reason },
    /// Asks the object's live shard to give it up.
    Drain,
    /// Takes back a drain the ring no longer wants (the object's shard is its owner again).
    Keep,
}

/// Why an object is assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// It had no shard: new, or released by its old shard after a drain.
    New,
    /// Its shard died (its Lease expired or was released).
    Dead,
}

impl Reason {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::Dead => "dead",
        }
    }
}

/// What to write on an object whose shard label says `current` and drain label `draining`,
/// on `ring`; `None`: nothing. An object leaves a live shard only through the drain step.
pub(crate) fn decide(
    key: &str,
    current: Option<&str>,
    draining: bool,
    ring: &Ring,
) -> Option<Move> {
    let want = ring.owner(key)?;
    let live = |shard: &str| ring.shards().iter().any(|s| s == shard);
    let assign = |reason| {
        Some(Move::Assign {
            shard: want.to_string(),
            reason,
        })
    };
    match current {
        None => assign(Reason::New),
        Some(shard) if !live(shard) => assign(Reason::Dead),
        Some(shard) if shard == want => draining.then_some(Move::Keep),
        Some(_) if draining => None,
        Some(_) => Some(Move::Drain),
    }
}

/// Keeps `ring` to the live shards of `shard`'s ring, from their Leases in `namespace`, read
/// every retry period of `timing`: a Lease whose holder is set and that changed within its
/// duration, by this process's clock (client-go's rule: clock skew between nodes does not
/// matter). Deletes the Leases of shards dead for [`FORGET_DEAD`]. Each ring is made from the
/// last with the fewest moves, starting from the ring record's, so that a new sharder goes on
/// from its predecessor's table; in the label mode it writes each ring there (the server-side
/// mode publishes it through the handover instead).
pub(crate) async fn members(
    client: Client,
    shard: Arc<Shard>,
    namespace: String,
    timing: Timing,
    ring: &watch::Sender<Ring>,
) {
    let leases: Api<Lease> = Api::namespaced(client, &namespace);
    let params = ListParams::default().labels(&format!("{RING_LABEL}={}", shard.ring));
    // Per Lease: its record as last read and when it last changed; when it was first seen dead.
    let mut seen: HashMap<String, (LeaseSpec, Instant, Option<Instant>)> = HashMap::new();
    let mut current = loop {
        match record::read(&leases, &shard.ring).await {
            Ok(record) => break record.map(|r| r.members).unwrap_or_default(),
            Err(err) => warn!(error = %err, "cannot read the ring record; retrying"),
        }
        tokio::time::sleep(timing.retry_period).await;
    };
    let mut remembered = Some(current.clone());
    // The live shards of the last read, until two reads in a row agree; a sharder that takes
    // over a ring goes on at once.
    let mut first: Option<Vec<String>> = None;
    let mut started = !current.shards().is_empty();
    loop {
        match leases.list(&params).await {
            Ok(list) => {
                let now = Instant::now();
                let mut live = Vec::new();
                let mut listed = HashMap::new();
                for lease in list {
                    let (Some(name), Some(member)) = (
                        lease.metadata.name.clone(),
                        lease.labels().get(SHARD_LABEL).cloned(),
                    ) else {
                        continue;
                    };
                    let spec = lease.spec.clone().unwrap_or_default();
                    let (changed, dead_since) = match seen.remove(&name) {
                        Some((old, changed, dead_since)) if old == spec => (changed, dead_since),
                        _ => (now, None),
                    };
                    let duration = spec
                        .lease_duration_seconds
                        .and_then(|s| u64::try_from(s).ok())
                        .map_or(timing.lease_duration, Duration::from_secs);
                    let held = spec
                        .holder_identity
                        .as_deref()
                        .is_some_and(|h| !h.is_empty());
                    let alive = held && now.duration_since(changed) < duration;
                    let dead_since = match alive {
                        true => None,
                        false => dead_since.or(Some(now)),
                    };
                    if alive {
                        live.push(member);
                    } else if dead_since.is_some_and(|t| now.duration_since(t) >= FORGET_DEAD) {
                        forget(&leases, &lease).await;
                    }
                    listed.insert(name, (spec, changed, dead_since));
                }
                seen = listed;
                live.sort();
                // The first ring of a new ring record waits until two reads agree, so that
                // replicas started together are all in it: none is first given (and lists)
                // what another takes a moment later.
                if !started && first.as_ref() != Some(&live) {
                    first = Some(live);
                    tokio::time::sleep(timing.retry_period).await;
                    continue;
                }
                started = true;
                if !live.is_empty() {
                    current = current.with(live);
                }
                let next = current.clone();
                ring.send_if_modified(|ring| {
                    let changed = *ring != next;
                    if changed {
                        info!(shards = ?next.shards(), "the live shards changed");
                        *ring = next;
                    }
                    changed
                });
            }
            Err(err) => warn!(error = %err, "cannot list the shards' Leases; retrying"),
        }
        if shard.mode == super::Mode::Labels && remembered.as_ref() != Some(&current) {
            remembered = match record::remember(&leases, &shard.ring, &current).await {
                Ok(()) => Some(current.clone()),
                Err(err) => {
                    warn!(error = %err, "cannot write the ring record; retrying");
                    None
                }
            };
        }
        tokio::time::sleep(timing.retry_period).await;
    }
}

/// Deletes the Lease of a dead shard, unless it changed since it was read.
async fn forget(leases: &Api<Lease>, lease: &Lease) {
    let name = lease.name_any();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: lease.resource_version(),
            uid: lease.uid(),
        }),
        ..DeleteParams::default()
    };
    match leases.delete(&name, &params).await {
        Ok(_) => info!(lease = %name, "deleted the Lease of a dead shard"),
        Err(err) => debug!(error = %err, lease = %name, "cannot delete a dead shard's Lease"),
    }
}

/// What the sharder's patch of an object names: the object, and the version it decided from.
#[derive(Clone, Debug)]
struct Seen {
    name: String,
    namespace: Option<String>,
    version: Option<String>,
}

/// How often a replica counts the objects it holds, for the metrics.
const COUNT_EVERY: Duration = Duration::from_secs(5);

/// The sharding side of the controller `controller` of `K`, whose cache is `cache`: the
/// objects it holds counted in `metrics`, and, while this replica leads, the sharder of `K`
/// (which watches `objects` and labels them through `client`). Never ends; without a shard it
/// does nothing.
pub(crate) async fn run<K>(
    shard: Option<Arc<Shard>>,
    client: Client,
    objects: Api<PartialObjectMeta<K>>,
    metrics: Arc<Metrics>,
    controller: &'static str,
    cache: Store<K>,
) where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    let Some(shard) = shard else {
        return std::future::pending().await;
    };
    let counting = async {
        loop {
            metrics.holding(controller, cache.len());
            tokio::time::sleep(COUNT_EVERY).await;
        }
    };
    // In the server-side mode nothing is labelled: the API server selects.
    let assigning = async {
        match shard.mode {
            super::Mode::Labels => {
                let writer = Writer::new::<K>(client, metrics.clone(), &shard, controller);
                assign(objects, writer, shard, controller).await
            }
            super::Mode::Server => std::future::pending().await,
        }
    };
    tokio::join!(assigning, counting);
}

/// Places every object of `K` on the ring while this replica leads (for ever after it starts
/// leading: a replica that stops leading exits). Watches the objects' metadata only and keeps
/// nothing of them: each change of an object is decided at once, so a new object gets its
/// shard without waiting for a periodic pass, and each change of the ring starts the watch
/// again, whose list (paged, from the API server's storage) decides every object on the new
/// ring, a page at a time.
pub(crate) async fn assign<K>(
    objects: Api<PartialObjectMeta<K>>,
    writer: Writer,
    shard: Arc<Shard>,
    controller: &'static str,
) where
    K: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
{
    let mut leading = shard.leading.clone();
    if leading.wait_for(|leading| *leading).await.is_err() {
        return std::future::pending().await;
    }
    info!(controller, "placing objects on the shards");
    let writer = Arc::new(writer);
    let mut members = shard.members.clone();
    loop {
        let ring = members.borrow_and_update().clone();
        let events = watcher(objects.clone(), watcher::Config::default()).default_backoff();
        let mut events = std::pin::pin!(events);
        loop {
            tokio::select! {
                event = events.next() => match event {
                    None => return std::future::pending().await,
                    Some(Err(err)) => warn!(controller, error = %err, "the sharder's watch failed; retrying"),
                    Some(Ok(watcher::Event::InitApply(meta) | watcher::Event::Apply(meta))) => {
                        writer.clone().decide(&meta, &ring).await;
                    }
                    Some(Ok(_)) => {}
                },
                changed = members.changed() => match changed {
                    Ok(()) => break,
                    Err(_) => return std::future::pending().await,
                },
                // A patch that could not be written: a new list decides every object again.
                () = writer.failed.notified() => break,
            }
        }
    }
}

/// The key an object is placed by: `namespace/name` (`name` for a cluster-scoped kind).
fn key<K: Resource>(obj: &K) -> String {
    match obj.meta().namespace.as_deref() {
        Some(namespace) => format!("{namespace}/{}", obj.name_any()),
        None => obj.name_any(),
    }
}

/// Writes the sharder's labels on the objects of one kind, a bounded number at once.
pub(crate) struct Writer {
    client: Client,
    metrics: Arc<Metrics>,
    resource: ApiResource,
    label: String,
    drain: String,
    controller: &'static str,
    slots: Arc<Semaphore>,
    /// Told when a patch failed for good: its object would keep its labels until the next
    /// change of it or of the ring.
    failed: Notify,
}

impl Writer {
    /// The writer of `shard`'s labels on the objects of `K`, through `client`, counted in
    /// `metrics` as `controller`'s.
    fn new<K: Resource<DynamicType = ()>>(
        client: Client,
        metrics: Arc<Metrics>,
        shard: &Shard,
        controller: &'static str,
    ) -> Self {
        Self {
            client,
            metrics,
            resource: ApiResource::erase::<K>(&()),
            label: shard.label().to_string(),
            drain: shard.drain_label().to_string(),
            controller,
            slots: Arc::new(Semaphore::new(PATCHES)),
            failed: Notify::new(),
        }
    }

    /// Writes what `decide` says of `meta`, in a task of its own once a slot is free. Each
    /// patch carries the resource version the decision read: if the object changed since, the
    /// patch fails (409) and the change's own event is decided again.
    async fn decide<K: Resource>(self: Arc<Self>, meta: &PartialObjectMeta<K>, ring: &Ring) {
        let labels = meta.labels();
        let shard = labels.get(&self.label).map(String::as_str);
        let draining = labels.get(&self.drain).is_some_and(|v| v == "true");
        let Some(next) = decide(&key(meta), shard, draining, ring) else {
            return;
        };
        let Ok(slot) = self.slots.clone().acquire_owned().await else {
            return;
        };
        let object = Seen {
            name: meta.name_any(),
            namespace: meta.namespace(),
            version: meta.resource_version(),
        };
        tokio::spawn(async move {
            self.write(&object, &next).await;
            drop(slot);
        });
    }

    async fn write(&self, object: &Seen, next: &Move) {
        let labels: BTreeMap<&str, Option<&str>> = match next {
            Move::Assign { shard, .. } => BTreeMap::from([
                (self.label.as_str(), Some(shard.as_str())),
                (&self.drain, None),
            ]),
            Move::Drain => BTreeMap::from([(self.drain.as_str(), Some("true"))]),
            Move::Keep => BTreeMap::from([(self.drain.as_str(), None)]),
        };
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": object.version, "labels": labels }
        });
        let api = dynamic_api(&self.client, &self.resource, object.namespace.as_deref());
        let params = PatchParams::default();
        let mut wait = RETRY_FIRST;
        loop {
            let err = match api
                .patch_metadata(&object.name, &params, &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return self.written(object, next),
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {
                    return debug!(object = %object.name, "changed or deleted since it was read");
                }
                Err(err) => err,
            };
            // The same patch again is safe: it carries the version it was decided from.
            if wait > RETRY_LAST {
                warn!(error = %err, object = %object.name, "cannot label an object for its shard; listing the objects again");
                return self.failed.notify_one();
            }
            warn!(error = %err, object = %object.name, "cannot label an object for its shard; retrying");
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }

    /// Logs and counts the patch `next` written on `object`.
    fn written(&self, object: &Seen, next: &Move) {
        debug!(controller = self.controller, object = %object.name, ?next, "sharded");
        let metrics = &self.metrics;
        match next {
            Move::Assign { reason, .. } => metrics.assigned(self.controller, reason.label()),
            Move::Drain => metrics.assigned(self.controller, "drain"),
            Move::Keep => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assign(shard: &str, reason: Reason) -> Option<Move> {
        Some(Move::Assign {
            shard: shard.into(),
            reason,
        })
    }

    #[test]
    fn an_object_leaves_a_live_shard_only_through_the_drain() {
        let ring = Ring::new(["a", "b"]);
        let key = (0..100)
            .map(|i| format!("default/object-{i}"))
            .find(|key| ring.owner(key) == Some("b"))
            .unwrap();
        assert_eq!(decide(&key, None, false, &ring), assign("b", Reason::New));
        assert_eq!(decide(&key, Some("b"), false, &ring), None);
        assert_eq!(decide(&key, Some("a"), false, &ring), Some(Move::Drain));
        assert_eq!(
            decide(&key, Some("a"), true, &ring),
            None,
            "waits for a to release it"
        );
        assert_eq!(decide(&key, Some("b"), true, &ring), Some(Move::Keep));
        assert_eq!(
            decide(&key, Some("gone"), false, &ring),
            assign("b", Reason::Dead)
        );
        assert_eq!(
            decide(&key, Some("gone"), true, &ring),
            assign("b", Reason::Dead),
            "a dead shard cannot release it"
        );
        assert_eq!(decide(&key, None, false, &Ring::default()), None);
    }

    /// A writer of labels for `ring`'s project over a stand-in API server that answers each
    /// label patch with the next of `codes` (200 once they run out); and the codes answered.
    fn answering(codes: Vec<u16>) -> (Arc<Writer>, Arc<std::sync::Mutex<Vec<u16>>>) {
        use kube::client::Body;
        let (service, mut handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let answered = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = answered.clone();
        tokio::spawn(async move {
            let mut codes = codes.into_iter();
            while let Some((request, send)) = handle.next_request().await {
                assert_eq!(request.method(), http::Method::PATCH);
                let code = codes.next().unwrap_or(200);
                seen.lock().unwrap().push(code);
                let body = match code {
                    200 => {
                        serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "object", "namespace": "default" } })
                    }
                    _ => {
                        serde_json::json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "etcd timed out", "reason": "InternalError", "code": code })
                    }
                };
                let response = http::Response::builder()
                    .status(code)
                    .body(Body::from(serde_json::to_vec(&body).unwrap()))
                    .unwrap();
                send.send_response(response);
            }
        });
        let writer = Writer {
            client: kube::Client::new(service, "default"),
            metrics: Arc::new(crate::metrics::Metrics::default()),
            resource: ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
            label: "shard.kube-scaffold.io/ring".into(),
            drain: "drain.kube-scaffold.io/ring".into(),
            controller: "configmap",
            slots: Arc::new(Semaphore::new(PATCHES)),
            failed: Notify::new(),
        };
        (Arc::new(writer), answered)
    }

    fn object() -> Seen {
        Seen {
            name: "object".into(),
            namespace: Some("default".into()),
            version: Some("7".into()),
        }
    }

    /// A label patch the API server fails (a 500) is sent again until it is written; one that
    /// keeps failing makes the sharder list the objects again, and one that finds the object
    /// changed (409) is left to the change's own event.
    #[tokio::test(start_paused = true)]
    async fn a_failed_label_patch_is_sent_again_then_handed_to_a_new_list() {
        let next = assign("a", Reason::New).unwrap();
        let (writer, answered) = answering(vec![500, 503]);
        let failed = writer.failed.notified();
        writer.write(&object(), &next).await;
        assert_eq!(*answered.lock().unwrap(), [500, 503, 200]);
        assert!(
            writer
                .metrics
                .encode()
                .contains(r#"sharding_assignments_total{controller="configmap",reason="new"} 1"#)
        );
        assert!(
            tokio::time::timeout(Duration::from_secs(1), failed)
                .await
                .is_err(),
            "written: no new list"
        );

        let (writer, answered) = writer_failing_for_ever();
        let failed = writer.failed.notified();
        writer.write(&object(), &next).await;
        tokio::time::timeout(Duration::from_secs(1), failed)
            .await
            .expect("a new list asked for");
        // 250 ms, 500 ms, 1 s, 2 s, 4 s apart: six tries.
        assert_eq!(answered.lock().unwrap().len(), 6);

        let (writer, answered) = answering(vec![409]);
        let failed = writer.failed.notified();
        writer.write(&object(), &next).await;
        assert_eq!(*answered.lock().unwrap(), [409]);
        assert!(
            tokio::time::timeout(Duration::from_secs(1), failed)
                .await
                .is_err()
        );
    }

    fn writer_failing_for_ever() -> (Arc<Writer>, Arc<std::sync::Mutex<Vec<u16>>>) {
        answering(vec![500; 100])
    }
}
