//! The ring that places each object on one shard: the positions (64-bit hashes) are cut into
//! [`SLOTS`] equal slots, and each slot belongs to one shard. The sharder keeps the table from
//! one set of live shards to the next with the fewest moves ([`Ring::with`]) and publishes it
//! in the ring record, so that every replica places every object alike.

use std::fmt;
use std::hash::Hasher as _;

use fnv::FnvHasher;

/// How many slots the ring has: each of S shards holds `SLOTS / S` of them, rounded up or
/// down, so the busiest of 5 holds 0.6% over the mean (docs/scaling.md). More slots balance
/// more shards as well, at the cost of a longer server-side selector (one term per run of a
/// shard's adjacent slots).
pub const SLOTS: usize = 512;

/// The bits of a position below its slot's.
const SLOT_SHIFT: u32 = 64 - SLOTS.trailing_zeros();

/// The live shards and the slot table: which shard holds each slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    shards: Vec<String>,
    /// Per slot, the index in `shards` of its shard; empty when there is no shard.
    slots: Vec<u16>,
}

impl Ring {
    /// The ring of `shards` (the order does not matter) made from nothing: the same table
    /// wherever it is computed.
    pub fn new<S: AsRef<str>>(shards: impl IntoIterator<Item = S>) -> Self {
        Self::default().with(shards)
    }

    /// The ring of the live shards `shards`, from this one with the fewest slots moved: a dead
    /// shard's slots go to the others, a new shard takes its share from the busiest, and no
    /// slot moves between two shards that stay, but to even their counts out. Each shard then
    /// holds `SLOTS / S` slots, rounded up or down. Which slots move is decided by a hash of
    /// shard and slot, so the result depends only on this table and `shards`.
    pub fn with<S: AsRef<str>>(&self, shards: impl IntoIterator<Item = S>) -> Self {
        let mut shards: Vec<String> = shards.into_iter().map(|s| s.as_ref().to_string()).collect();
        shards.sort();
        shards.dedup();
        if shards.is_empty() {
            return Self::default();
        }
        // Each slot's shard as an index into `shards`; `None`: its shard is gone.
        let mut owners: Vec<Option<usize>> = match self.slots.is_empty() {
            true => vec![None; SLOTS],
            false => self
                .slots
                .iter()
                .map(|&i| shards.binary_search(&self.shards[usize::from(i)]).ok())
                .collect(),
        };
        let mut held = vec![0usize; shards.len()];
        for owner in owners.iter().flatten() {
            held[*owner] += 1;
        }
        // The quotas: the busiest shards keep the rounding's extra slots.
        let mut by_load: Vec<usize> = (0..shards.len()).collect();
        by_load.sort_by_key(|&i| (std::cmp::Reverse(held[i]), i));
        let mut quota = vec![SLOTS / shards.len(); shards.len()];
        for &i in by_load.iter().take(SLOTS % shards.len()) {
            quota[i] += 1;
        }
        // Shards over their quota give up the slots they hold by the weakest claim.
        for (shard, name) in shards.iter().enumerate() {
            let excess = held[shard].saturating_sub(quota[shard]);
            if excess == 0 {
                continue;
            }
            let mut mine: Vec<usize> = (0..SLOTS).filter(|&s| owners[s] == Some(shard)).collect();
            mine.sort_by_key(|&slot| (claim(name, slot), slot));
            for &slot in &mine[..excess] {
                owners[slot] = None;
            }
            held[shard] = quota[shard];
        }
        // The free slots go to the shards under their quota, the strongest claims first.
        let mut claims: Vec<(u64, usize, usize)> = (0..SLOTS)
            .filter(|&slot| owners[slot].is_none())
            .flat_map(|slot| {
                let shards = &shards;
                let held = &held;
                let quota = &quota;
                (0..shards.len())
                    .filter(move |&shard| held[shard] < quota[shard])
                    .map(move |shard| (claim(&shards[shard], slot), slot, shard))
            })
            .collect();
        claims.sort_unstable_by(|a, b| b.cmp(a));
        for (_, slot, shard) in claims {
            if owners[slot].is_none() && held[shard] < quota[shard] {
                owners[slot] = Some(shard);
                held[shard] += 1;
            }
        }
        let slots = owners
            .into_iter()
            .map(|owner| u16::try_from(owner.expect("the quotas add up to SLOTS")).unwrap_or(0))
            .collect();
        Self { shards, slots }
    }

    /// The shard of the object `key` (`namespace/name`) in the label mode; `None` on an empty
    /// ring.
    pub fn owner(&self, key: &str) -> Option<&str> {
        self.owner_at(point(key))
    }

    /// The shard of the position `at`; `None` on an empty ring. The server-side mode places an
    /// object at [`uid_position`].
    pub fn owner_at(&self, at: u64) -> Option<&str> {
        let slot = usize::try_from(at >> SLOT_SHIFT).ok()?;
        let index = *self.slots.get(slot)?;
        Some(&self.shards[usize::from(index)])
    }

    /// The positions `shard` holds: its slots, adjacent ones merged.
    pub fn arcs(&self, shard: &str) -> Ranges {
        let Ok(index) = self.shards.binary_search_by(|s| s.as_str().cmp(shard)) else {
            return Ranges::default();
        };
        let width = 1u128 << SLOT_SHIFT;
        let arcs: Vec<(u128, u128)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|&(_, &owner)| usize::from(owner) == index)
            .map(|(slot, _)| (slot as u128 * width, (slot as u128 + 1) * width))
            .collect();
        Ranges::from(arcs)
    }

    /// The shards on the ring, sorted.
    pub fn shards(&self) -> &[String] {
        &self.shards
    }

    /// The ring written as [`Display`](fmt::Display) writes it: `None` unless `text` is one.
    /// A list of shards alone (`a,b,c`, as records of earlier versions hold) is the ring of
    /// those shards made from nothing.
    pub fn parse(text: &str) -> Option<Self> {
        let (names, table) = text.split_once(';').unwrap_or((text, ""));
        let shards: Vec<String> = names
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if table.is_empty() {
            return Some(Self::new(shards));
        }
        let slots: Vec<u16> = table
            .split('.')
            .map(|i| i.parse().ok())
            .collect::<Option<_>>()?;
        let sorted = shards.windows(2).all(|w| w[0] < w[1]);
        let valid = slots.len() == SLOTS && slots.iter().all(|&i| usize::from(i) < shards.len());
        (sorted && valid).then_some(Self { shards, slots })
    }
}

impl fmt::Display for Ring {
    /// `<shard>,<shard>,…;<index>.<index>.…`: the shards, then each slot's shard by its index
    /// among them; nothing for the empty ring.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shards.is_empty() {
            return Ok(());
        }
        write!(f, "{};", self.shards.join(","))?;
        for (i, slot) in self.slots.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{slot}")?;
        }
        Ok(())
    }
}

/// How strongly `shard` claims `slot`: a hash of both, so that every table is computed alike
/// and the slots that move are spread over the ring.
fn claim(shard: &str, slot: usize) -> u64 {
    point(&format!("{shard}/{slot}"))
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
    fn pods(count: usize) -> Vec<String> {
        (0..count)
            .map(|i| format!("op-7d9f8b6c5d-x{i:x}k9p"))
            .collect()
    }

    /// How many slots each shard of `ring` holds.
    fn slots(ring: &Ring) -> Vec<usize> {
        let mut held = vec![0; ring.shards().len()];
        for &i in &ring.slots {
            held[usize::from(i)] += 1;
        }
        held
    }

    #[test]
    fn each_shard_holds_its_share_of_the_slots_rounded() {
        for count in 1..=12 {
            let ring = Ring::new(pods(count));
            let held = slots(&ring);
            let (fewest, most) = (held.iter().min().unwrap(), held.iter().max().unwrap());
            assert!(most - fewest <= 1, "{count} shards: {held:?}");
            assert_eq!(held.iter().sum::<usize>(), SLOTS);
        }
        let keys = keys(30_000);
        for count in [3, 5] {
            let ring = Ring::new(pods(count));
            let loads = loads(&ring, &keys);
            let busiest = *loads.values().max().unwrap() as f64;
            let mean = keys.len() as f64 / count as f64;
            assert!(busiest / mean <= 1.03, "{count} shards: {loads:?}");
        }
    }

    #[test]
    fn each_position_is_in_the_arcs_of_its_owner_and_no_others() {
        let ring = Ring::new(["shard-0", "shard-1", "shard-2"]);
        let arcs: Vec<Ranges> = ring.shards().iter().map(|s| ring.arcs(s)).collect();
        let mut at = 0x9e37_79b9_7f4a_7c15u64;
        let edges = (0..SLOTS as u64).flat_map(|slot| {
            let first = slot << SLOT_SHIFT;
            [first, first.wrapping_sub(1)]
        });
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
        // The server-side selector has a term per range.
        assert!(arcs.iter().all(|a| a.ranges().len() <= SLOTS / 3));
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
    fn a_join_or_a_leave_moves_the_fair_share_of_slots_and_nothing_between_others() {
        let moved = |from: &Ring, to: &Ring| {
            (0..SLOTS)
                .filter(|&s| {
                    from.owner_at((s as u64) << SLOT_SHIFT) != to.owner_at((s as u64) << SLOT_SHIFT)
                })
                .count()
        };
        let mut ring = Ring::new(pods(3));
        let mut live = pods(3);
        for (step, next) in [
            (0, "joins"),
            (1, "joins"),
            (2, "leaves"),
            (3, "joins"),
            (4, "leaves"),
        ] {
            let before = ring.clone();
            let newcomer = format!("new-{step}");
            match next {
                "joins" => live.push(newcomer.clone()),
                _ => {
                    live.remove(step % live.len());
                }
            }
            ring = ring.with(&live);
            let held = slots(&ring);
            assert!(
                held.iter().max().unwrap() - held.iter().min().unwrap() <= 1,
                "{held:?}"
            );
            let fair = SLOTS.div_ceil(live.len() + usize::from(next == "leaves"));
            assert!(
                moved(&before, &ring) <= fair,
                "step {step}: {} > {fair}",
                moved(&before, &ring)
            );
            for slot in 0..SLOTS {
                let at = (slot as u64) << SLOT_SHIFT;
                let (was, is) = (before.owner_at(at).unwrap(), ring.owner_at(at).unwrap());
                let stays =
                    |s: &str| live.iter().any(|l| l == s) && before.shards().iter().any(|b| b == s);
                assert!(
                    was == is || !stays(was) || !stays(is),
                    "slot {slot}: {was} -> {is}"
                );
            }
        }
        assert_eq!(ring.with(&live), ring, "the same shards: nothing moves");
        assert_eq!(ring.with(Vec::<String>::new()), Ring::default());
    }

    #[test]
    fn a_ring_reads_back_as_written() {
        let ring = Ring::new(["b", "a", "c"]).with(["a", "c", "d"]);
        let text = ring.to_string();
        assert!(text.starts_with("a,c,d;"), "{text}");
        assert_eq!(Ring::parse(&text), Some(ring));
        assert_eq!(
            Ring::parse("a,b"),
            Some(Ring::new(["a", "b"])),
            "an earlier record"
        );
        assert_eq!(Ring::parse(""), Some(Ring::default()));
        assert_eq!(Ring::default().to_string(), "");
        for bad in ["a,b;0.1", "a;1.0", "b,a;0", "a;x"] {
            assert_eq!(Ring::parse(bad), None, "{bad}");
        }
    }
}
