//! The consistent-hash ring that places each object on one shard: every replica that computes
//! it from the same live shards places every object alike.

use std::hash::Hasher as _;

use fnv::FnvHasher;

/// How many points each shard has on the ring: the busiest of 3 shards then carries under 10%
/// over the mean (docs/scaling.md, `scripts/simulate-sharding`).
pub const POINTS_PER_SHARD: usize = 256;

/// The shards at their points, sorted by point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    points: Vec<(u64, usize)>,
    shards: Vec<String>,
}

impl Ring {
    /// The ring of `shards` (the order does not matter), each at [`POINTS_PER_SHARD`] points:
    /// the hashes of `<shard>-<i>`.
    pub fn new<S: AsRef<str>>(shards: impl IntoIterator<Item = S>) -> Self {
        let mut shards: Vec<String> = shards.into_iter().map(|s| s.as_ref().to_string()).collect();
        shards.sort();
        shards.dedup();
        let mut points: Vec<(u64, usize)> = shards
            .iter()
            .enumerate()
            .flat_map(|(index, shard)| {
                (0..POINTS_PER_SHARD).map(move |i| (point(&format!("{shard}-{i}")), index))
            })
            .collect();
        points.sort_unstable();
        Self { points, shards }
    }

    /// The shard of the object `key` (`namespace/name`): the first shard point clockwise of the
    /// key's own; `None` on an empty ring.
    pub fn owner(&self, key: &str) -> Option<&str> {
        if self.points.is_empty() {
            return None;
        }
        let at = self.points.partition_point(|(p, _)| *p < point(key)) % self.points.len();
        Some(&self.shards[self.points[at].1])
    }

    /// The shards on the ring, sorted.
    pub fn shards(&self) -> &[String] {
        &self.shards
    }
}

/// The position of `text` on the ring: its 64-bit FNV-1a hash (the hash KEP-5866's
/// `shardRange` uses), mixed by splitmix64's finalizer so that texts that differ in their last
/// characters (`shard-0`, `shard-1`) still land far apart.
fn point(text: &str) -> u64 {
    let mut fnv = FnvHasher::default();
    fnv.write(text.as_bytes());
    let mut z = fnv.finish();
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn keys(count: usize) -> Vec<String> {
        (0..count)
            .map(|i| format!("ns-{}/object-{i}", i % 97))
            .collect()
    }

    fn loads<'a>(ring: &'a Ring, keys: &[String]) -> HashMap<&'a str, usize> {
        let mut loads = HashMap::new();
        for key in keys {
            *loads.entry(ring.owner(key).unwrap()).or_default() += 1;
        }
        loads
    }

    #[test]
    fn every_replica_computes_the_same_owner_whatever_the_order_of_the_leases() {
        let a = Ring::new(["pod-a", "pod-b", "pod-c"]);
        let b = Ring::new(["pod-c", "pod-a", "pod-b", "pod-a"]);
        assert_eq!(a, b);
        for key in keys(1000) {
            assert_eq!(a.owner(&key), b.owner(&key));
        }
        assert_eq!(Ring::new(Vec::<String>::new()).owner("default/x"), None);
    }

    /// Pod names as a Deployment makes them: alike but for their last characters.
    #[test]
    fn the_busiest_of_three_shards_carries_at_most_a_tenth_over_the_mean() {
        let shards = [
            "op-7d9f8b6c5d-x2k9p",
            "op-7d9f8b6c5d-x2k9q",
            "op-7d9f8b6c5d-4mz7t",
        ];
        let keys = keys(30_000);
        let ring = Ring::new(shards);
        let loads = loads(&ring, &keys);
        assert_eq!(loads.len(), 3, "{loads:?}");
        let busiest = *loads.values().max().unwrap() as f64;
        assert!(busiest / 10_000.0 <= 1.10, "{loads:?}");
    }

    #[test]
    fn a_joining_or_leaving_shard_moves_about_its_fair_share() {
        let keys = keys(30_000);
        let three = Ring::new(["shard-0", "shard-1", "shard-2"]);
        let four = Ring::new(["shard-0", "shard-1", "shard-2", "shard-3"]);
        let moved = |from: &Ring, to: &Ring| {
            keys.iter().filter(|k| from.owner(k) != to.owner(k)).count() as f64 / keys.len() as f64
        };
        let join = moved(&three, &four);
        assert!(join <= 0.25 * 1.1, "moved {join} on a join, fair 0.25");
        // Only to the new shard: nothing moves between the shards that stay.
        for key in &keys {
            let (before, after) = (three.owner(key).unwrap(), four.owner(key).unwrap());
            assert!(
                before == after || after == "shard-3",
                "{key}: {before} -> {after}"
            );
        }
        let leave = moved(&four, &three);
        assert!(leave <= 0.25 * 1.1, "moved {leave} on a leave, fair 0.25");
    }
}
