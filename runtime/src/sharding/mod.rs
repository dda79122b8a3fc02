//! Sharding (`--sharding`): every replica reconciles its own share of each controller's
//! objects, instead of one leader reconciling them all.
//!
//! - **Membership.** Each replica (a shard, named after its pod) holds a Lease of its own,
//!   `<project>-shard-<pod>`, renewed as the leader lease is; a replica that cannot renew it
//!   stops, as a leader does.
//! - **Assignment.** The holder of the leader lease (the sharder) places each
//!   object on a consistent-hash [`ring::Ring`] of the live shards and writes the placement
//!   in a label, `shard.kube-scaffold.io/<project>=<shard>`. Each shard's controllers watch
//!   with that label as their selector, so each caches only its own objects; a child carries
//!   its owner's label, so the owned watches divide too.
//! - **Handover.** An object moves from a live shard in two steps: the sharder labels it
//!   `drain.kube-scaffold.io/<project>=true`; the old shard, in the object's own reconcile slot
//!   (after any reconcile of it that runs), removes both labels ([`Shard::release`]); only
//!   then does the sharder name the new shard. An object on a dead shard (its Lease expired or
//!   released) moves at once. No object is ever reconciled by two replicas at once.

pub(crate) mod record;
pub mod ring;
pub(crate) mod server;
pub(crate) mod sharder;

use std::collections::BTreeMap;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::watch;

/// The label of a shard's Lease that names the ring (the project) it belongs to.
pub const RING_LABEL: &str = "sharding.kube-scaffold.io/ring";
/// The label of a shard's Lease that names the shard.
pub const SHARD_LABEL: &str = "sharding.kube-scaffold.io/shard";

/// How the replicas divide the objects (`--sharding-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// The sharder labels each object with its shard, and each replica watches its label:
    /// works on every Kubernetes version.
    #[default]
    Labels,
    /// The API server filters each replica's watch by the hash of the objects' UIDs
    /// (`shardSelector`, Kubernetes 1.36+ with the feature gate `ShardedListAndWatch`): no
    /// label is written.
    Server,
}

/// This replica as a shard of the project's ring.
#[derive(Debug)]
pub struct Shard {
    /// The shard's name, the pod's: the value of the objects' shard label.
    pub name: String,
    /// The ring's name: the project's.
    pub ring: String,
    /// The label that names an object's shard, and the one that asks it to leave.
    keys: (String, String),
    /// Whether this replica holds the leader lease, and so runs the sharder.
    pub(crate) leading: watch::Receiver<bool>,
    /// The live shards, as the sharder last saw their Leases (while it leads).
    pub(crate) members: watch::Receiver<ring::Ring>,
    /// How the replicas divide the objects.
    pub mode: Mode,
    /// In the server-side mode: what this shard serves.
    pub(crate) serving: server::Serving,
}

impl Shard {
    /// The shard `name` of the ring `ring`, told whether it leads and who the members are.
    pub(crate) fn new(
        name: &str,
        ring: &str,
        leading: watch::Receiver<bool>,
        members: watch::Receiver<ring::Ring>,
        mode: Mode,
    ) -> Self {
        Self {
            name: name.to_string(),
            ring: ring.to_string(),
            keys: (label(ring), format!("drain.kube-scaffold.io/{ring}")),
            leading,
            members,
            mode,
            serving: server::Serving::default(),
        }
    }

    /// The label that names an object's shard: `shard.kube-scaffold.io/<ring>`.
    pub fn label(&self) -> &str {
        &self.keys.0
    }

    /// The label the sharder sets on an object that must leave its shard:
    /// `drain.kube-scaffold.io/<ring>`.
    pub fn drain_label(&self) -> &str {
        &self.keys.1
    }

    /// The label selector of this shard's objects.
    pub fn selector(&self) -> String {
        format!("{}={}", self.label(), self.name)
    }

    /// The Lease this shard holds: `<ring>-shard-<name>`.
    pub fn lease(&self) -> String {
        format!("{}-shard-{}", self.ring, self.name)
    }

    /// The labels of this shard's Lease.
    pub fn lease_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (RING_LABEL.to_string(), self.ring.clone()),
            (SHARD_LABEL.to_string(), self.name.clone()),
        ])
    }

    /// Whether the sharder asked this shard to give `obj` up.
    pub fn draining<K: Resource>(&self, obj: &K) -> bool {
        obj.labels().get(self.drain_label()).map(String::as_str) == Some("true")
    }

    /// Gives `obj` up: removes its shard and drain labels, in one patch that applies only while
    /// they still say this shard and drain (a JSON patch's `test`s). The object then leaves
    /// this shard's watch, and the sharder names its new shard. Whether it was given up now
    /// (`false`: it had already moved).
    pub async fn release<K>(&self, client: &Client, obj: &K) -> kube::Result<bool>
    where
        K: Resource<DynamicType = ()>,
    {
        let (label, drain) = (pointer(self.label()), pointer(self.drain_label()));
        let patch = serde_json::json!([
            { "op": "test", "path": label, "value": self.name },
            { "op": "test", "path": drain, "value": "true" },
            { "op": "remove", "path": label },
            { "op": "remove", "path": drain },
        ]);
        let patch: json_patch::Patch = serde_json::from_value(patch).expect("a valid JSON patch");
        let api = dynamic_api(
            client,
            &ApiResource::erase::<K>(&()),
            obj.meta().namespace.as_deref(),
        );
        match api
            .patch_metadata(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::<()>::Json(patch),
            )
            .await
        {
            Ok(_) => Ok(true),
            // A failed `test` (422) or a deleted object: it is no longer this shard's.
            Err(kube::Error::Api(status)) if status.code == 422 || status.code == 404 => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// The label that names an object's shard in the ring `ring`.
pub fn label(ring: &str) -> String {
    format!("shard.kube-scaffold.io/{ring}")
}

/// The JSON pointer of the label `key` in an object.
fn pointer(key: &str) -> String {
    format!(
        "/metadata/labels/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

/// The API of the objects of `resource` in `namespace` (all namespaces, or a cluster-scoped
/// kind's, for `None`).
fn dynamic_api(
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// Why `name` cannot name a shard: a shard's name is a label value and part of its Lease's
/// name, so at most 63 lowercase letters, digits, `-` and `.`, starting and ending with a
/// letter or digit (a pod's name, as a Deployment makes it).
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    let edges_ok =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && edges_ok(name.chars().next())
        && edges_ok(name.chars().last());
    match ok {
        true => Ok(()),
        false => Err(format!(
            "`{name}` cannot name a shard: use at most 63 lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_key_is_escaped_in_a_json_pointer() {
        assert_eq!(
            pointer("shard.kube-scaffold.io/memcached-operator"),
            "/metadata/labels/shard.kube-scaffold.io~1memcached-operator"
        );
    }

    #[test]
    fn a_shard_is_named_as_a_pod() {
        assert_eq!(check_name("memcached-operator-7d9f8b6c5d-x2k9p"), Ok(()));
        for bad in ["", "Pod", "pod_1", "-pod", "pod-", &"p".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
