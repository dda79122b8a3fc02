//! The ring record: the Lease `<project>-ring`, whose annotations hold the ring the sharder
//! last computed (its slot table), so that a new sharder goes on from it; in the server-side
//! mode also the ring every replica settled on and each replica's acknowledgement.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};

use super::ring::{Ranges, Ring};

/// The annotation of the ring record that counts its changes.
pub(crate) const GENERATION: &str = "sharding.kube-scaffold.io/generation";
/// The annotation of the ring record that names the members of the ring.
pub(crate) const MEMBERS: &str = "sharding.kube-scaffold.io/members";
/// The annotation of the ring record that names the members of the last settled ring.
pub(crate) const SETTLED: &str = "sharding.kube-scaffold.io/settled";
/// The prefix of a shard's acknowledgement on the ring record: `<prefix><shard>: <generation>`.
pub(crate) const ACK: &str = "ack.sharding.kube-scaffold.io/";

/// The ring as the sharder published it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) generation: u64,
    /// The live shards, as the sharder last saw them.
    pub(crate) members: Ring,
    /// The last ring every replica settled on: while it differs from `members`, a replica
    /// serves only the arcs it owns under both.
    pub(crate) settled: Ring,
    /// The generation each shard last acknowledged.
    pub(crate) acks: BTreeMap<String, u64>,
    /// The Lease's resource version, which the sharder's writes are conditioned on.
    pub(crate) version: Option<String>,
}

impl Record {
    /// The record `lease` holds.
    pub(crate) fn read(lease: &Lease) -> Self {
        let annotations = lease.annotations();
        // A ring that does not parse is none: the sharder publishes the live one anew.
        let ring = |key: &str| {
            annotations
                .get(key)
                .and_then(|text| Ring::parse(text))
                .unwrap_or_default()
        };
        Self {
            generation: annotations
                .get(GENERATION)
                .and_then(|g| g.parse().ok())
                .unwrap_or(0),
            members: ring(MEMBERS),
            settled: ring(SETTLED),
            acks: annotations
                .iter()
                .filter_map(|(key, value)| {
                    Some((key.strip_prefix(ACK)?.to_string(), value.parse().ok()?))
                })
                .collect(),
            version: lease.resource_version(),
        }
    }

    /// The positions `shard` serves under this record: those it owns under the members and
    /// under the settled ring.
    pub(crate) fn target(&self, shard: &str) -> Ranges {
        self.members
            .arcs(shard)
            .intersect(&self.settled.arcs(shard))
    }

    /// Whether every member acknowledged this generation.
    pub(crate) fn acknowledged(&self) -> bool {
        self.members
            .shards()
            .iter()
            .all(|shard| self.acks.get(shard) == Some(&self.generation))
    }

    /// Whether going from the settled ring to `live` takes nothing from a live shard: then no
    /// shard has anything to drain, and the new ring settles at once.
    pub(crate) fn only_gains(&self, live: &Ring) -> bool {
        live.shards().iter().all(|shard| {
            let before = self.settled.arcs(shard);
            before.intersect(&live.arcs(shard)) == before
        })
    }
}

/// The name of the ring record of the ring `ring`.
pub(crate) fn record_name(ring: &str) -> String {
    format!("{ring}-ring")
}

/// The annotations of a record of `generation`, `members` and `settled`.
pub(crate) fn annotations(
    generation: u64,
    members: &Ring,
    settled: &Ring,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (GENERATION.to_string(), generation.to_string()),
        (MEMBERS.to_string(), members.to_string()),
        (SETTLED.to_string(), settled.to_string()),
    ])
}

/// The record of the ring `ring` in `leases`' namespace; `None` if there is none.
pub(crate) async fn read(leases: &Api<Lease>, ring: &str) -> kube::Result<Option<Record>> {
    Ok(leases
        .get_opt(&record_name(ring))
        .await?
        .as_ref()
        .map(Record::read))
}

/// Writes `members` on the record of the ring `ring` as its members and its settled ring (the
/// label mode: the drain step hands objects over, so nothing waits to settle), creating it.
pub(crate) async fn remember(leases: &Api<Lease>, ring: &str, members: &Ring) -> kube::Result<()> {
    let lease = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": record_name(ring),
            "annotations": {
                MEMBERS: members.to_string(),
                SETTLED: members.to_string(),
            },
        },
    });
    let params = PatchParams::apply("kube-scaffold-sharder").force();
    leases
        .patch(&record_name(ring), &params, &Patch::Apply(&lease))
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_from_its_annotations() {
        let mut lease = Lease::default();
        let mut annotations = annotations(4, &Ring::new(["b", "a"]), &Ring::new(["a"]));
        annotations.insert(format!("{ACK}a"), "4".into());
        annotations.insert(format!("{ACK}b"), "3".into());
        lease.metadata.annotations = Some(annotations);
        let record = Record::read(&lease);
        assert_eq!(record.members.shards(), ["a", "b"]);
        assert_eq!(record.settled.shards(), ["a"]);
        assert_eq!(record.generation, 4);
        assert!(!record.acknowledged(), "b has not");
        assert_eq!(record.acks[&"a".to_string()], 4);
    }
}
