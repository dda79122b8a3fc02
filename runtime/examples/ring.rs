//! Prints how the sharding ring ([`Ring`]) spreads objects over shards and how many move when a
//! shard joins or leaves, as `scripts/simulate-sharding` shows it:
//!
//! ```sh
//! cargo run --release -p kube-scaffold-runtime --features sharding --example ring -- [objects]
//! ```
//!
//! For 2, 3, 5 and 10 shards: the busiest shard's slots and objects over the mean, in the label
//! mode (objects `ns-<i>/object-<j>`, placed by name) and the server-side one (random UUIDs,
//! placed by the hash the API server computes); the objects moved when one shard joins and
//! when one leaves, against the fair share; and the most ranges a shard's server-side selector
//! has (one `shardRange` term each). (No `[[example]]` with `required-features`: see
//! envtest.rs.)

#[cfg(not(feature = "sharding"))]
fn main() {
    eprintln!("error: this example was built without the `sharding` feature");
    eprintln!("help: cargo run -p kube-scaffold-runtime --features sharding --example ring");
    std::process::exit(2);
}

#[cfg(feature = "sharding")]
fn main() {
    use kube_scaffold_runtime::sharding::ring::{Ring, SLOTS, uid_position};

    let objects: usize = std::env::args()
        .nth(1)
        .map_or(Ok(100_000), |n| n.parse())
        .expect("the number of objects");
    let names: Vec<String> = (0..objects)
        .map(|i| format!("ns-{}/object-{i}", i % 97))
        .collect();
    let uids: Vec<u64> = uuids(objects).iter().map(|u| uid_position(u)).collect();
    println!(
        "{objects} objects, {SLOTS} slots: the busiest shard over the mean (slots; objects by name, by UID), objects moved (by UID) against the fair share, selector terms"
    );
    println!(
        "| shards | busiest: slots | by name | by UID | moved on join (fair) | moved on leave (fair) | most selector terms |"
    );
    println!("|---|---|---|---|---|---|---|");
    for shards in [2, 3, 5, 10] {
        let pods: Vec<String> = (0..=shards)
            .map(|i| format!("op-7d9f8b6c5d-{:05x}", i * 7919))
            .collect();
        let ring = Ring::new(&pods[..shards]);
        let busiest = |owners: &mut dyn Iterator<Item = Option<&str>>, total: usize| {
            let mut counts = std::collections::HashMap::new();
            for owner in owners {
                *counts.entry(owner.unwrap().to_string()).or_insert(0usize) += 1;
            }
            *counts.values().max().unwrap() as f64 / (total as f64 / shards as f64)
        };
        let slot_width = 1u64 << (64 - SLOTS.trailing_zeros());
        let slots = busiest(
            &mut (0..SLOTS as u64).map(|s| ring.owner_at(s * slot_width)),
            SLOTS,
        );
        let by_name = busiest(&mut names.iter().map(|k| ring.owner(k)), objects);
        let by_uid = busiest(&mut uids.iter().map(|&at| ring.owner_at(at)), objects);
        let moved = |from: &Ring, to: &Ring| {
            let moved = uids
                .iter()
                .filter(|&&at| from.owner_at(at) != to.owner_at(at))
                .count();
            moved as f64 / objects as f64
        };
        let joined = ring.with(&pods);
        let left = ring.with(&pods[1..shards]);
        let terms = pods[..shards]
            .iter()
            .map(|p| ring.arcs(p).ranges().len())
            .max()
            .unwrap();
        println!(
            "| {shards} | {slots:.3} | {by_name:.3} | {by_uid:.3} | {:.3} ({:.3}) | {:.3} ({:.3}) | {terms} |",
            moved(&ring, &joined),
            1.0 / (shards + 1) as f64,
            moved(&ring, &left),
            1.0 / shards as f64,
        );
    }
}

#[cfg(feature = "sharding")]
/// `count` version-4 UUIDs, as the API server gives objects, from a fixed seed (splitmix64).
fn uuids(count: usize) -> Vec<String> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..count)
        .map(|_| {
            let (a, b) = (next(), next());
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xfff,
                0x8000 | (b >> 48) & 0x3fff,
                b & 0xffff_ffff_ffff
            )
        })
        .collect()
}
