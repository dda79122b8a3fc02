//! The server-side mode (`--sharding-mode=server`): the API server filters each replica's list
//! and watch by the hash of the objects' UIDs (KEP-5866's `shardSelector`, Kubernetes 1.36+
//! with the feature gate `ShardedListAndWatch`), and no label is written.
//!
//! - **Placement.** An object sits at the FNV-1a hash of its UID ([`ring::uid_position`]), on
//!   the same ring of live shards as the label mode; a shard's arcs become its selector.
//! - **The ring record.** The sharder (the holder of the leader lease) publishes the ring in
//!   the Lease `<project>-ring` ([`Record`]): the members, and the members of the last ring
//!   every replica settled on. Every replica watches it and serves the arcs it owns under both
//!   ([`Record::target`]).
//! - **Handover.** When a replica would lose arcs, the sharder first publishes the new members
//!   beside the settled ones: each replica narrows its watches to what it keeps, waits for its
//!   reconciles outside it to end, and acknowledges on the record; only when all have does the
//!   sharder settle the new ring, and the new owners widen. When nobody loses anything (a
//!   replica died or left), the new ring is settled at once.

use std::collections::{BTreeMap, HashMap};
use std::future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::Shard;
use super::record::{ACK, Record, annotations, record_name};
use super::ring::{Ranges, Ring, uid_position};

/// How often a replica that narrowed looks whether its reconciles outside its arcs ended.
const DRAIN_POLL: Duration = Duration::from_millis(50);

/// What a replica serves: the positions, numbered by their changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) generation: u64,
    pub(crate) ranges: Ranges,
}

/// A shard's side of the server-side mode: what it serves, which of its controllers' caches
/// hold only that, and the objects it is reconciling.
#[derive(Debug, Default)]
pub(crate) struct Serving {
    selection: watch::Sender<Selection>,
    /// Per controller: the generation of the selection its cache was last listed with.
    synced: Mutex<Vec<Arc<AtomicU64>>>,
    /// The positions of the objects being reconciled, with how many reconciles of each.
    reconciling: Mutex<HashMap<u64, usize>>,
}

/// An object's reconcile, counted in [`Serving`] until it is dropped.
pub(crate) struct Reconciling {
    shard: Arc<Shard>,
    at: u64,
}

impl Drop for Reconciling {
    fn drop(&mut self) {
        let mut reconciling = lock(&self.shard.serving.reconciling);
        if let Some(count) = reconciling.get_mut(&self.at) {
            *count -= 1;
            if *count == 0 {
                reconciling.remove(&self.at);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Serving {
    /// Serves `ranges` from now on; whether that changed anything.
    fn select(&self, ranges: Ranges) -> bool {
        self.selection.send_if_modified(|selection| {
            let changed = selection.ranges != ranges;
            if changed {
                selection.generation += 1;
                selection.ranges = ranges;
            }
            changed
        })
    }

    /// Whether every controller's cache was listed with the current selection and no object
    /// outside it is being reconciled.
    fn drained(&self) -> bool {
        let selection = self.selection.borrow();
        let synced = lock(&self.synced)
            .iter()
            .all(|synced| synced.load(Ordering::Acquire) >= selection.generation);
        synced
            && lock(&self.reconciling)
                .keys()
                .all(|&at| selection.ranges.contains(at))
    }
}

/// Counts the reconcile of `obj` on `shard` until the returned guard is dropped; `None`
/// without the server-side mode. Called before the reconcile's future is made, in the same
/// step as the controller's read of the object from its cache, so that a replica that waits
/// for its reconciles to end sees every one its old cache started.
pub(crate) fn reconciling<K: Resource>(shard: &Arc<Shard>, obj: &K) -> Option<Reconciling> {
    if shard.mode != super::Mode::Server {
        return None;
    }
    let at = uid_position(obj.meta().uid.as_deref().unwrap_or_default());
    *lock(&shard.serving.reconciling).entry(at).or_default() += 1;
    Some(Reconciling {
        shard: shard.clone(),
        at,
    })
}

/// The watch events of the objects of `K` this shard serves, under `config`: a watch, through
/// `client`, of the API `api` makes of a client (the controller's namespace or all), with the
/// shard's selector, started again, and so listed again, each time the
/// selection changes; and two generation counters. The stream sets the first (`listed`) to
/// its selection's generation as it yields a list's `InitDone`; the caller copies it into the
/// second (`synced`, which [`Serving`] reads) once its reflector has applied that `InitDone`,
/// so that `synced` never runs ahead of the cache.
pub(crate) fn watch<K>(
    client: Client,
    api: impl Fn(Client) -> Api<K> + Send + Sync + 'static,
    shard: &Arc<Shard>,
    config: watcher::Config,
) -> (
    BoxStream<'static, watcher::Result<watcher::Event<K>>>,
    Arc<AtomicU64>,
    Arc<AtomicU64>,
)
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    let api = Arc::new(api);
    let synced = Arc::new(AtomicU64::new(0));
    lock(&shard.serving.synced).push(synced.clone());
    let listed = Arc::new(AtomicU64::new(0));
    let tag = listed.clone();
    let selections = shard.serving.selection.subscribe();
    let generations = stream::unfold(selections, move |mut selections| {
        let (client, api, config, tag) = (client.clone(), api.clone(), config.clone(), tag.clone());
        async move {
            let selection = selections.borrow_and_update().clone();
            let mut next = selections.clone();
            let changed = async move {
                if next.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let generation = selection.generation;
            let events = match selection.ranges.uid_selector() {
                // No arc: an empty list, which empties the cache.
                None => stream::iter([Ok(watcher::Event::Init), Ok(watcher::Event::InitDone)])
                    .chain(stream::pending())
                    .boxed(),
                Some(selector) => {
                    let api = api(selecting(&client, &selector));
                    watcher(api, config).default_backoff().boxed()
                }
            };
            let ranges = selection.ranges.clone();
            let mut warned = false;
            let events = events
                .try_filter(move |event| {
                    let on = on_arcs(&ranges, event);
                    if !on && !std::mem::replace(&mut warned, true) {
                        warn!(
                            "the API server sent an object outside this shard's arcs, which it \
                             drops: does every API server run with the feature gate \
                             ShardedListAndWatch? Without it, run with --sharding-mode=labels"
                        );
                    }
                    future::ready(on)
                })
                .inspect_ok(move |event| {
                    if matches!(event, watcher::Event::InitDone) {
                        tag.store(generation, Ordering::Release);
                    }
                });
            Some((events.take_until(Box::pin(changed)), selections))
        }
    });
    (generations.flatten().boxed(), listed, synced)
}

/// Whether to keep `event`: not when it brings an object outside `ranges`. The API server
/// sends none, unless it ignores `shardSelector` (an API server without the feature gate, as
/// while a control plane is rolled out); kept, each replica would reconcile every object.
fn on_arcs<K: Resource>(ranges: &Ranges, event: &watcher::Event<K>) -> bool {
    match event {
        watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
            ranges.contains(uid_position(obj.meta().uid.as_deref().unwrap_or_default()))
        }
        _ => true,
    }
}

/// Whether this shard serves the owner of `child` (by its controller owner reference's UID):
/// the owned watches see every child of the manager, and drop the others' in the server-side
/// mode. Always true in the label mode, where the watch selects by the owner's shard label.
pub(crate) fn serves_owner_of<K: Resource>(shard: &Shard, child: &K) -> bool {
    if shard.mode != super::Mode::Server {
        return true;
    }
    let owners = child.meta().owner_references.iter().flatten();
    let owner = owners.into_iter().find(|r| r.controller == Some(true));
    owner.is_none_or(|owner| {
        let selection = shard.serving.selection.borrow();
        selection.ranges.contains(uid_position(&owner.uid))
    })
}

/// `client`, adding the query parameter `shardSelector=<selector>` to each request (kube's
/// list and watch parameters have no field for it). Hand-written: a `tower` service around
/// `Client::send`.
pub(crate) fn selecting(client: &Client, selector: &str) -> Client {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("shardSelector", selector)
        .finish();
    let inner = client.clone();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let uri = request.uri().to_string();
        let separator = if uri.contains('?') { '&' } else { '?' };
        let result = format!("{uri}{separator}{query}")
            .parse()
            .map(|uri| *request.uri_mut() = uri);
        async move {
            result.map_err(|e| kube::Error::Service(Box::new(e)))?;
            inner.send(request).await
        }
    });
    Client::new(service, client.default_namespace())
}

/// Fails unless the API server filters lists by `shardSelector`: it echoes the selector in
/// the list's `metadata.shardInfo` only when the feature gate `ShardedListAndWatch` is on.
/// Without it, every replica would list every object.
pub(crate) async fn check_server(client: &Client, namespace: &str) -> anyhow::Result<()> {
    let selector = Ranges::from(vec![(0, 1)]).uid_selector().expect("a range");
    let request = http::Request::get(format!(
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases?limit=1"
    ))
    .body(Vec::new())?;
    let list: serde_json::Value = selecting(client, &selector).request(request).await?;
    anyhow::ensure!(
        list["metadata"]["shardInfo"].is_object(),
        "--sharding-mode=server: the API server does not filter by shardSelector (it needs Kubernetes 1.36 or newer with the feature gate ShardedListAndWatch): run with --sharding-mode=labels"
    );
    Ok(())
}

/// Follows the ring record of `shard` in `namespace` for ever: serves the arcs it gives this
/// shard, and, when this shard is a member of a generation it has not acknowledged, waits
/// until its caches hold only those arcs and its reconciles outside them ended, then
/// acknowledges. Sends each record read to `records`, for the sharder.
pub(crate) async fn follow(
    client: Client,
    shard: Arc<Shard>,
    namespace: String,
    records: watch::Sender<Option<Record>>,
) {
    let leases: Api<Lease> = Api::namespaced(client, &namespace);
    let name = record_name(&shard.ring);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(leases.clone(), config).default_backoff();
    let mut events = std::pin::pin!(events);
    loop {
        let record = match events.next().await {
            Some(Ok(watcher::Event::Apply(lease) | watcher::Event::InitApply(lease))) => {
                Record::read(&lease)
            }
            // Deleted: the sharder makes it again, from nothing settled.
            Some(Ok(watcher::Event::Delete(_))) => {
                records.send_replace(None);
                continue;
            }
            Some(Ok(_)) => continue,
            Some(Err(err)) => {
                warn!(error = %err, "the ring record's watch failed; retrying");
                continue;
            }
            None => return std::future::pending().await,
        };
        records.send_replace(Some(record.clone()));
        let target = record.target(&shard.name);
        if shard.serving.select(target) {
            let selection = shard.serving.selection.borrow().clone();
            info!(
                generation = record.generation,
                ranges = selection.ranges.ranges().len(),
                "serving the shard's arcs of the ring"
            );
        }
        let member = record.members.shards().contains(&shard.name);
        if !member || record.acks.get(&shard.name) == Some(&record.generation) {
            continue;
        }
        while !shard.serving.drained() {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        let patch = serde_json::json!({
            "metadata": { "annotations": { format!("{ACK}{}", shard.name): record.generation.to_string() } }
        });
        match leases
            .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => debug!(generation = record.generation, "acknowledged the ring"),
            Err(err) => {
                warn!(error = %err, "cannot acknowledge the ring; retried on its next change")
            }
        }
    }
}

/// What the sharder writes on the ring record `record` (`None`: none yet) when the live
/// shards are `live`; `None`: nothing.
fn next(record: Option<&Record>, live: &Ring) -> Option<BTreeMap<String, String>> {
    match record {
        // Before the members are known, nothing is published.
        _ if live.shards().is_empty() => None,
        // From nothing settled: whoever may still serve a ring of an earlier record narrows.
        None => Some(annotations(1, live, &Ring::default())),
        Some(record) if record.members != *live => {
            let settled = match record.only_gains(live) {
                true => live,
                false => &record.settled,
            };
            Some(annotations(record.generation + 1, live, settled))
        }
        Some(record) if record.settled != record.members && record.acknowledged() => Some(
            annotations(record.generation, &record.members, &record.members),
        ),
        Some(_) => None,
    }
}

/// The sharder's side, while this replica leads: keeps the ring record in `namespace` to the
/// live shards `live`, from the records `records` reads. A change that takes arcs from a live
/// shard is published beside the settled ring and settled once every member acknowledged it;
/// one that takes none (a shard died or left) is settled at once.
pub(crate) async fn publish(
    client: Client,
    shard: Arc<Shard>,
    namespace: String,
    mut live: watch::Receiver<Ring>,
    mut records: watch::Receiver<Option<Record>>,
) {
    let leases: Api<Lease> = Api::namespaced(client, &namespace);
    let name = record_name(&shard.ring);
    loop {
        let ring = live.borrow_and_update().clone();
        let record = records.borrow_and_update().clone();
        if let Some(next) = next(record.as_ref(), &ring) {
            let outcome = match &record {
                None => {
                    let lease = Lease {
                        metadata: kube::api::ObjectMeta {
                            name: Some(name.clone()),
                            annotations: Some(next),
                            ..Default::default()
                        },
                        spec: None,
                    };
                    leases
                        .create(&PostParams::default(), &lease)
                        .await
                        .map(drop)
                }
                Some(record) => {
                    // Acknowledgements of shards no longer members go.
                    let gone = record.acks.keys().filter(|s| !ring.shards().contains(s));
                    let mut patch: BTreeMap<String, Option<String>> =
                        next.into_iter().map(|(k, v)| (k, Some(v))).collect();
                    patch.extend(gone.map(|s| (format!("{ACK}{s}"), None)));
                    let patch = serde_json::json!({
                        "metadata": { "resourceVersion": record.version, "annotations": patch }
                    });
                    leases
                        .patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map(drop)
                }
            };
            match outcome {
                Ok(()) => info!(members = ?ring.shards(), "published the ring"),
                // Changed since it was read (an acknowledgement): its next event decides.
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(err) => warn!(error = %err, "cannot publish the ring; retrying"),
            }
        }
        tokio::select! {
            changed = live.changed() => if changed.is_err() { return std::future::pending().await },
            changed = records.changed() => if changed.is_err() { return std::future::pending().await },
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;

    use super::super::record::{GENERATION, MEMBERS, SETTLED};
    use super::*;

    fn record(generation: u64, members: &[&str], settled: &[&str]) -> Record {
        Record {
            generation,
            members: Ring::new(members),
            settled: Ring::new(settled),
            ..Record::default()
        }
    }

    /// Every position is served by at most one shard at each step of a change: while one
    /// replica still serves the settled ring and another already the narrowed or new one.
    #[test]
    fn no_position_is_served_twice_through_a_join() {
        let old = record(1, &["a", "b"], &["a", "b"]);
        let narrowing = record(2, &["a", "b", "c"], &["a", "b"]);
        let new = record(2, &["a", "b", "c"], &["a", "b", "c"]);
        assert!(!old.only_gains(&new.members), "a join takes arcs");
        for (i, x) in ["a", "b", "c"].iter().enumerate() {
            for y in ["a", "b", "c"].iter().skip(i + 1) {
                // x and y each at any step, but never one in `new` while the other is in `old`
                // (the sharder settles only after every member narrowed).
                for (rx, ry) in [(&old, &old), (&old, &narrowing), (&narrowing, &narrowing)]
                    .into_iter()
                    .chain([(&narrowing, &new), (&new, &new)])
                {
                    let both = rx.target(x).intersect(&ry.target(y));
                    assert!(both.is_empty(), "{x} and {y}: {both:?}");
                    let both = ry.target(x).intersect(&rx.target(y));
                    assert!(both.is_empty(), "{x} and {y}: {both:?}");
                }
            }
        }
        assert!(narrowing.target("c").is_empty(), "the new shard waits");
    }

    #[test]
    fn a_join_settles_once_acknowledged_and_a_death_or_a_leave_at_once() {
        /// What the sharder writes on `record` when `live` are the live shards, and the live
        /// ring it computed.
        fn said(record: Option<&Record>, live: &[&str]) -> ((String, String, String), Ring) {
            let ring = record.map_or_else(|| Ring::new(live), |r| r.members.with(live));
            let next = next(record, &ring).expect("a write");
            let get = |key: &str| next[key].clone();
            ((get(GENERATION), get(MEMBERS), get(SETTLED)), ring)
        }
        let text = |g: &str, m: &Ring, s: &Ring| (g.to_string(), m.to_string(), s.to_string());
        let mut old = record(3, &["a", "b", "c"], &["a", "b", "c"]);
        let (written, left) = said(Some(&old), &["a", "c"]);
        assert_eq!(written, text("4", &left, &left), "a leave settles at once");
        let (written, joined) = said(Some(&old), &["a", "b", "c", "d"]);
        assert_eq!(written, text("4", &joined, &old.members), "narrow first");
        assert_eq!(next(Some(&old), &old.members.with(["a", "b", "c"])), None);
        let mut join = Record {
            generation: 4,
            members: joined.clone(),
            settled: old.members.clone(),
            ..Record::default()
        };
        for shard in ["a", "b", "c"] {
            join.acks.insert(shard.into(), 4);
        }
        assert_eq!(next(Some(&join), &join.members.clone()), None, "d has not");
        join.acks.insert("d".into(), 3);
        assert_eq!(next(Some(&join), &join.members.clone()), None, "d has not");
        join.acks.insert("d".into(), 4);
        let (written, _) = said(Some(&join), &["a", "b", "c", "d"]);
        assert_eq!(written, text("4", &joined, &joined));
        let (written, first) = said(None, &["a"]);
        assert_eq!(written, text("1", &first, &Ring::default()));
        assert_eq!(next(None, &Ring::default()), None);
        old.settled = Ring::default();
        let (written, two) = said(Some(&old), &["a", "b"]);
        assert_eq!(written, text("4", &two, &two), "nothing to lose");
    }

    /// The shard `a` of the ring `ring` in `mode`, serving nothing yet.
    fn shard(mode: super::super::Mode) -> Shard {
        let (_, leading) = watch::channel(false);
        let (_, members) = watch::channel(Ring::default());
        Shard::new("a", "ring", leading, members, mode)
    }

    /// An API server that ignores `shardSelector` sends every object: the watch keeps those
    /// on the shard's arcs only.
    #[tokio::test]
    async fn the_watch_drops_what_an_api_server_sends_off_the_shards_arcs() {
        use k8s_openapi::api::core::v1::ConfigMap;

        let item = |uid: &str| {
            let metadata = serde_json::json!({ "name": uid, "namespace": "default", "uid": uid, "resourceVersion": "1" });
            serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata })
        };
        let items = [item("uid-1"), item("uid-2"), item("uid-3")];
        let list = serde_json::json!({ "kind": "ConfigMapList", "apiVersion": "v1", "metadata": { "resourceVersion": "1" }, "items": items });
        let (client, _) = answering(list);
        let shard = Arc::new(shard(super::super::Mode::Server));
        let at = uid_position("uid-2");
        shard
            .serving
            .select(Ranges::from(vec![(at.into(), u128::from(at) + 1)]));
        let (events, _, _) =
            watch::<ConfigMap>(client.clone(), Api::all, &shard, watcher::Config::default());
        let listed: Vec<String> = events
            .try_take_while(|e| future::ready(Ok(!matches!(e, watcher::Event::InitDone))))
            .try_filter_map(|e| {
                future::ready(Ok(match e {
                    watcher::Event::InitApply(object) => Some(object.name_any()),
                    _ => None,
                }))
            })
            .try_collect()
            .await
            .unwrap();
        assert_eq!(listed, ["uid-2"]);
    }

    #[test]
    fn the_owned_watch_keeps_the_children_of_the_owners_this_shard_serves() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

        let child = |uid: &str| {
            let mut child = ConfigMap::default();
            child.metadata.owner_references = Some(vec![OwnerReference {
                controller: Some(true),
                uid: uid.into(),
                ..OwnerReference::default()
            }]);
            child
        };
        let server = shard(super::super::Mode::Server);
        let (ours, theirs) = (child("uid-1"), child("uid-2"));
        let at = uid_position("uid-1");
        server
            .serving
            .select(Ranges::from(vec![(at.into(), u128::from(at) + 1)]));
        assert!(serves_owner_of(&server, &ours));
        assert!(!serves_owner_of(&server, &theirs));
        assert!(
            serves_owner_of(&server, &ConfigMap::default()),
            "no owner: not filtered"
        );
        assert!(serves_owner_of(&shard(super::super::Mode::Labels), &theirs));
    }

    /// A client around a stand-in API server that answers every list with `list` and keeps
    /// every watch open, unanswered; and the queries it was sent.
    fn answering(list: serde_json::Value) -> (Client, Arc<Mutex<Vec<String>>>) {
        use kube::client::Body;
        let (service, mut handle) =
            tower_test::mock::pair::<http::Request<Body>, http::Response<Body>>();
        let queries = Arc::new(Mutex::new(Vec::new()));
        let seen = queries.clone();
        tokio::spawn(async move {
            let mut watches = Vec::new();
            while let Some((request, send)) = handle.next_request().await {
                let query = request.uri().query().unwrap_or_default().to_string();
                if query.contains("watch=true") {
                    watches.push(send);
                    continue;
                }
                lock(&seen).push(query);
                let body = Body::from(serde_json::to_vec(&list).unwrap());
                send.send_response(http::Response::builder().body(body).unwrap());
            }
        });
        (Client::new(service, "default"), queries)
    }

    /// A Lease list whose list metadata is `metadata`.
    fn leases(metadata: serde_json::Value) -> serde_json::Value {
        serde_json::json!({ "kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1", "metadata": metadata, "items": [] })
    }

    #[tokio::test]
    async fn the_mode_is_refused_where_the_api_server_does_not_filter() {
        let (client, queries) = answering(leases(serde_json::json!({ "resourceVersion": "1" })));
        let err = check_server(&client, "system").await.unwrap_err();
        assert!(err.to_string().contains("--sharding-mode=labels"), "{err}");
        let sent = lock(&queries).clone();
        assert_eq!(
            sent,
            [
                "limit=1&shardSelector=shardRange%28object.metadata.uid%2C+%270x0000000000000000%27%2C+%270x0000000000000001%27%29"
            ]
        );
        let echoed = serde_json::json!({ "shardInfo": { "selector": "shardRange(..)" } });
        let (client, _) = answering(leases(echoed));
        check_server(&client, "system").await.unwrap();
    }
}
