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
        self.owner_at(point(key))
    }

    /// The shard of the position `at`: the first shard point clockwise of it (at it or after);
    /// `None` on an empty ring. The server-side mode places an object at [`uid_position`].
    pub fn owner_at(&self, at: u64) -> Option<&str> {
        if self.points.is_empty() {
            return None;
        }
        let index = self.points.partition_point(|(p, _)| *p < at) % self.points.len();
        Some(&self.shards[self.points[index].1])
    }

    /// The positions `shard` owns: the arc up to and including each of its points from the
    /// point before, and, for the shard of the first point, the arc past the last one.
    pub fn arcs(&self, shard: &str) -> Ranges {
        let Some(index) = self.shards.iter().position(|s| s == shard) else {
            return Ranges::default();
        };
        let mut arcs = Vec::new();
        let mut from = 0u128;
        for &(point, owner) in &self.points {
            if owner == index {
                arcs.push((from, u128::from(point) + 1));
            }
            from = u128::from(point) + 1;
        }
        if self
            .points
            .first()
            .is_some_and(|&(_, owner)| owner == index)
        {
            arcs.push((from, END));
        }
        Ranges::from(arcs)
    }

    /// The shards on the ring, sorted.
    pub fn shards(&self) -> &[String] {
        &self.shards
    }
}

/// The end of the ring, past its last position: 2^64.
const END: u128 = 1 << 64;

/// Positions on the ring, as half-open ranges `[start, end)`, sorted, apart and not empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(Vec<(u128, u128)>);

impl From<Vec<(u128, u128)>> for Ranges {
    /// The union of `ranges`, in any order.
    fn from(mut ranges: Vec<(u128, u128)>) -> Self {
        ranges.retain(|(start, end)| start < end);
        ranges.sort_unstable();
        let mut merged: Vec<(u128, u128)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Self(merged)
    }
}

impl Ranges {
    /// Whether `at` is in one of the ranges.
    pub fn contains(&self, at: u64) -> bool {
        let at = u128::from(at);
        let index = self.0.partition_point(|&(_, end)| end <= at);
        self.0.get(index).is_some_and(|&(start, _)| start <= at)
    }

    /// The positions in both `self` and `other`.
    pub fn intersect(&self, other: &Ranges) -> Ranges {
        let mut both = Vec::new();
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        while let (Some(&&(a_start, a_end)), Some(&&(b_start, b_end))) = (a.peek(), b.peek()) {
            let (start, end) = (a_start.max(b_start), a_end.min(b_end));
            if start < end {
                both.push((start, end));
            }
            match a_end < b_end {
                true => a.next(),
                false => b.next(),
            };
        }
        Ranges(both)
    }

    /// Whether no position is in the ranges.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ranges, `[start, end)`; an end may be 2^64.
    pub fn ranges(&self) -> &[(u128, u128)] {
        &self.0
    }

    /// The shard selector of KEP-5866 that lists and watches the objects whose UID's hash is in
    /// the ranges: `shardRange(object.metadata.uid, '0x…', '0x…') || …`, with the 16 hex
    /// digits (17 for 2^64) the API server requires; `None` for no range, which no selector
    /// can say (an empty selector selects everything).
    pub fn uid_selector(&self) -> Option<String> {
        let bound = |at: u128| match at {
            END => "0x10000000000000000".to_string(),
            at => format!("0x{at:016x}"),
        };
        let terms: Vec<String> = self
            .0
            .iter()
            .map(|&(start, end)| {
                format!(
                    "shardRange(object.metadata.uid, '{}', '{}')",
                    bound(start),
                    bound(end)
                )
            })
            .collect();
        (!terms.is_empty()).then(|| terms.join(" || "))
    }
}

/// The position of an object of UID `uid` in the server-side mode: the 64-bit FNV-1a hash of
/// the UID, which the API server computes for `shardRange(object.metadata.uid, ..)`.
pub fn uid_position(uid: &str) -> u64 {
    let mut fnv = FnvHasher::default();
    fnv.write(uid.as_bytes());
    fnv.finish()
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
    fn each_position_is_in_the_arcs_of_its_owner_and_no_others() {
        let ring = Ring::new(["shard-0", "shard-1", "shard-2"]);
        let arcs: Vec<Ranges> = ring.shards().iter().map(|s| ring.arcs(s)).collect();
        let mut at = 0x9e37_79b9_7f4a_7c15u64;
        let edges = ring
            .points
            .iter()
            .flat_map(|&(p, _)| [p, p.wrapping_add(1)]);
        let random = (0..20_000).map(|_| {
            at = at.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            at
        });
        for position in edges.chain(random).chain([0, u64::MAX]) {
            let owner = ring.owner_at(position).unwrap();
            for (shard, arcs) in ring.shards().iter().zip(&arcs) {
                assert_eq!(arcs.contains(position), shard == owner, "{position:#x}");
            }
        }
        let total: u128 = arcs
            .iter()
            .flat_map(|a| a.ranges())
            .map(|(s, e)| e - s)
            .sum();
        assert_eq!(total, END, "the arcs cover the ring once");
        assert!(
            arcs.iter()
                .all(|a| a.ranges().len() <= POINTS_PER_SHARD + 1)
        );
    }

    #[test]
    fn ranges_intersect_and_spell_the_api_servers_selector() {
        let a = Ranges::from(vec![(0, 10), (20, 30), (40, END)]);
        let b = Ranges::from(vec![(5, 25), (28, 45)]);
        assert_eq!(
            a.intersect(&b),
            Ranges::from(vec![(5, 10), (20, 25), (28, 30), (40, 45)])
        );
        assert_eq!(b.intersect(&a), a.intersect(&b));
        assert!(a.intersect(&Ranges::default()).is_empty());
        assert_eq!(
            Ranges::from(vec![(3, 5), (0, 3), (7, 7)]),
            Ranges::from(vec![(0, 5)])
        );
        assert_eq!(Ranges::default().uid_selector(), None);
        assert_eq!(
            Ranges::from(vec![(0, 1), (0xff, END)])
                .uid_selector()
                .unwrap(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001') || \
             shardRange(object.metadata.uid, '0x00000000000000ff', '0x10000000000000000')"
        );
        // The API server's own example: `fnv.New64a` of "hello".
        assert_eq!(uid_position("hello"), 0xa430_d846_80aa_bd0b);
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
