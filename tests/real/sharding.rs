//! Sharded managers (`edit --sharding`) on a real API server, as processes: every object held by
//! one replica, the placement every replica computes, a joining replica taking its share while
//! objects are created, a killed replica's objects reconciled again within its lease, and no
//! object reconciled by two replicas at once, from the replicas' merged logs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube_scaffold_runtime::sharding::RING_LABEL;
use kube_scaffold_runtime::sharding::ring::{Ring, uid_position};
use serde_json::Value;

use crate::control_plane::free_port;
use crate::project::{Project, Running, edit, sharder_saw, turn};

const LABEL: &str = "shard.kube-scaffold.io/sharded";
const DRAIN: &str = "drain.kube-scaffold.io/sharded";
/// The replicas' lease duration: a killed replica's objects move after it.
const LEASE: Duration = Duration::from_secs(4);

/// One Guestbook as the API server has it: its shard and drain labels.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placed {
    shard: Option<String>,
    draining: bool,
}

// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
#[test]
fn replicas_share_the_objects_and_hand_them_over_without_overlap() {
    let _turn = turn();
    let project = sharded_project();
    let start = |shard: &str| start(&project, shard, "labels");
    let placed = || placed(&project);
    let settled = |shards: &[&str], count: usize| {
        let (ring, _) = project.ring_record("default", "sharded");
        let placed = placed();
        names(&ring) == shards
            && placed.len() == count
            && placed
                .iter()
                .all(|(key, p)| !p.draining && p.shard.as_deref() == ring.owner(key))
    };

    let mut replicas: BTreeMap<&str, Running> = BTreeMap::new();
    for shard in ["shard-a", "shard-b", "shard-c"] {
        replicas.insert(shard, start(shard));
    }
    let logs = |replicas: &BTreeMap<&str, Running>| {
        replicas
            .iter()
            .map(|(shard, r)| format!("--- {shard}\n{}", r.tail(40)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Objects created before the sharder saw every replica's Lease would be placed on fewer
    // shards and handed over once it did, which the exact shares below do not allow.
    project.wait(
        "the sharder's ring holds the three replicas",
        30,
        || logs(&replicas),
        || {
            let three = ["shard-a", "shard-b", "shard-c"];
            replicas.values().any(|r| sharder_saw(&r.log(), &three))
        },
    );
    create(&project, 0..60);
    project.wait(
        "60 objects placed on the three shards as the ring says",
        60,
        || format!("{:?}\n{}", placed(), logs(&replicas)),
        || settled(&["shard-a", "shard-b", "shard-c"], 60),
    );
    // Each replica holds, and reconciled, its share and nothing else.
    let held = |shard: &str| -> BTreeSet<String> {
        let placed = placed();
        let mine = placed
            .iter()
            .filter(|(_, p)| p.shard.as_deref() == Some(shard));
        mine.map(|(key, _)| key.clone()).collect()
    };
    for (shard, replica) in &replicas {
        let mine = held(shard);
        assert!(mine.len() >= 8, "{shard} holds {} of 60", mine.len());
        project.wait(
            &format!("{shard} reconciles its share"),
            30,
            || replica.tail(40),
            || {
                reconciled(&replica.log())
                    .keys()
                    .cloned()
                    .collect::<BTreeSet<_>>()
                    == mine
            },
        );
    }

    // Reconciles go on through every handover below: each object's annotation changes.
    let churning = Arc::new(AtomicBool::new(true));
    let churn = churn(&project, churning.clone());

    // A fourth replica joins while objects are created: it takes its share, and only objects
    // that move to it move.
    let before = placed();
    replicas.insert("shard-d", start("shard-d"));
    create(&project, 60..70);
    project.wait(
        "70 objects placed on the four shards",
        60,
        || format!("{:?}\n{}", placed(), logs(&replicas)),
        || settled(&["shard-a", "shard-b", "shard-c", "shard-d"], 70),
    );
    let after = placed();
    let moved: Vec<&String> = before
        .iter()
        .filter(|(key, p)| after[*key].shard != p.shard)
        .map(|(key, _)| key)
        .collect();
    for key in &moved {
        assert_eq!(
            after[*key].shard.as_deref(),
            Some("shard-d"),
            "{key} moved between old shards"
        );
    }
    eprintln!(
        "a joining replica: {} of 60 objects moved (fair share 15)",
        moved.len()
    );
    assert!(!moved.is_empty(), "the new replica took nothing");
    for i in 60..70 {
        let key = format!("default/guestbook-{i}");
        let owner = after[&key].shard.clone().unwrap();
        project.wait(
            &format!("{key}, created during the handover, reconciled by {owner}"),
            30,
            || replicas[owner.as_str()].tail(40),
            || reconciled(&replicas[owner.as_str()].log()).contains_key(&key),
        );
    }

    // A replica killed (no release): its objects are reconciled again once its lease ran out.
    let victims = held("shard-b");
    let counts: BTreeMap<&str, BTreeMap<String, usize>> = replicas
        .iter()
        .map(|(shard, r)| (*shard, reconciled(&r.log())))
        .collect();
    replicas["shard-b"].signal("KILL");
    let killed = Instant::now();
    let dead = replicas.remove("shard-b").unwrap();
    let live = ["shard-a", "shard-c", "shard-d"];
    project.wait(
        "the killed replica's objects reconciled again",
        LEASE.as_secs() + 30,
        || format!("{:?}\n{}", placed(), logs(&replicas)),
        || {
            let (ring, _) = project.ring_record("default", "sharded");
            names(&ring) == live
                && victims.iter().all(|key| {
                    let owner = ring.owner(key).unwrap();
                    let now = reconciled(&replicas[owner].log())
                        .get(key)
                        .copied()
                        .unwrap_or(0);
                    now > counts[owner].get(key).copied().unwrap_or(0)
                })
        },
    );
    let took = killed.elapsed();
    eprintln!(
        "a killed replica: its {} objects reconciled again after {took:.1?} (lease {LEASE:?})",
        victims.len()
    );
    assert!(took <= LEASE + Duration::from_secs(10), "{took:?}");

    churning.store(false, Ordering::Relaxed);
    churn.join().unwrap();

    stop_without_overlaps(&project, vec![("shard-b", dead.log())], replicas);
}

/// The server-side mode (`--sharding-mode=server`) on an API server with the feature gate
/// `ShardedListAndWatch`: each replica lists and watches only the objects whose UID's hash is
/// on its arcs, nothing is labelled, a joining replica takes its share through the ring
/// record's narrowing, a killed one's objects are reconciled again within its lease and 10 s,
/// and no object is reconciled by two replicas at once.
// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
#[test]
fn the_api_server_filters_each_replicas_share_by_uid() {
    let _turn = turn();
    let project = sharded_project();
    let start = |shard: &str| start(&project, shard, "server");
    // Every Guestbook's position on the ring, by its UID; none labelled.
    let uids = || -> BTreeMap<String, u64> {
        let guestbooks = guestbooks(&project);
        for item in guestbooks.values() {
            let labels = item["labels"].as_object();
            assert!(
                labels.is_none_or(|l| l.keys().all(|k| !k.contains("kube-scaffold.io"))),
                "labelled: {item}"
            );
        }
        let position = |meta: &Value| uid_position(meta["uid"].as_str().unwrap());
        guestbooks
            .iter()
            .map(|(key, meta)| (key.clone(), position(meta)))
            .collect()
    };
    // The ring record, once it is settled on `shards`.
    let settled = |shards: &[&str]| {
        let (members, settled) = project.ring_record("default", "sharded");
        names(&members) == shards && members == settled
    };
    let ring = || project.ring_record("default", "sharded").0;
    // Whether each object of `uids` was reconciled by its owner on the ring of `shards` more
    // often than `before` says.
    let reconciled_by_owners =
        |replicas: &BTreeMap<&str, Running>,
         shards: &[&str],
         uids: &BTreeMap<String, u64>,
         before: &BTreeMap<&str, BTreeMap<String, usize>>| {
            let ring = ring();
            if names(&ring) != shards {
                return false;
            }
            let now: BTreeMap<&str, BTreeMap<String, usize>> = replicas
                .iter()
                .map(|(shard, r)| (*shard, reconciled(&r.log())))
                .collect();
            uids.iter().all(|(key, &at)| {
                let owner = ring.owner_at(at).unwrap();
                let count = |counts: &BTreeMap<&str, BTreeMap<String, usize>>| {
                    counts
                        .get(owner)
                        .and_then(|c| c.get(key))
                        .copied()
                        .unwrap_or(0)
                };
                count(&now) > count(before)
            })
        };
    let logs = |replicas: &BTreeMap<&str, Running>| {
        replicas
            .iter()
            .map(|(shard, r)| format!("--- {shard}\n{}", r.tail(40)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let counts =
        |replicas: &BTreeMap<&'static str, Running>| -> BTreeMap<&'static str, BTreeMap<String, usize>> {
            replicas
                .iter()
                .map(|(shard, r)| (*shard, reconciled(&r.log())))
                .collect()
        };

    let mut replicas: BTreeMap<&'static str, Running> = BTreeMap::new();
    for shard in ["shard-a", "shard-b", "shard-c"] {
        replicas.insert(shard, start(shard));
    }
    let three = ["shard-a", "shard-b", "shard-c"];
    // Objects created on a smaller first ring would be reconciled by a replica that later
    // gives them up, which the exact shares below do not allow.
    project.wait(
        "the ring record settled on the three replicas",
        30,
        || logs(&replicas),
        || settled(&three),
    );
    create(&project, 0..60);
    project.wait(
        "60 objects reconciled, each by its owner on the ring of three",
        60,
        || format!("{:?}\n{}", uids(), logs(&replicas)),
        || settled(&three) && reconciled_by_owners(&replicas, &three, &uids(), &BTreeMap::new()),
    );
    // Each replica reconciled its share and nothing else: the API server sent it no other.
    let old = ring();
    for (shard, replica) in &replicas {
        let mine: BTreeSet<String> = uids()
            .into_iter()
            .filter(|(_, at)| old.owner_at(*at) == Some(*shard))
            .map(|(key, _)| key)
            .collect();
        assert!(mine.len() >= 8, "{shard} holds {} of 60", mine.len());
        let seen: BTreeSet<String> = reconciled(&replica.log()).into_keys().collect();
        assert_eq!(seen, mine, "{shard} reconciled other objects than its own");
    }

    let churning = Arc::new(AtomicBool::new(true));
    let churn = churn(&project, churning.clone());

    // A fourth replica joins while objects are created: the objects it now owns, and the new
    // ones, are reconciled by their owners on the ring of four.
    let before = counts(&replicas);
    let released_before: u64 = replicas.values().map(|r| released(&r.log())).sum();
    replicas.insert("shard-d", start("shard-d"));
    create(&project, 60..70);
    let four = ["shard-a", "shard-b", "shard-c", "shard-d"];
    // The sharder makes the ring of four from the record's with the fewest moves.
    let new = old.with(four);
    // One of the objects created during the join (`guestbook-60` to `guestbook-69`).
    let created =
        |key: &str| key >= "default/guestbook-60" && key.len() == "default/guestbook-60".len();
    let moving: BTreeMap<String, u64> = uids()
        .into_iter()
        .filter(|(key, at)| created(key) || old.owner_at(*at) != new.owner_at(*at))
        .collect();
    for (key, at) in &moving {
        assert!(
            created(key) || new.owner_at(*at) == Some("shard-d"),
            "{key} moved between old shards"
        );
    }
    project.wait(
        "the ring of four settled, the moved and the new objects reconciled by their owners",
        60,
        || format!("{moving:?}\n{}", logs(&replicas)),
        || settled(&four) && reconciled_by_owners(&replicas, &four, &moving, &before),
    );
    assert_eq!(
        ring(),
        new,
        "the sharder's ring of four is not the one predicted"
    );
    eprintln!(
        "server-side, a joining replica: {} of 60 objects moved (fair share 15)",
        moving.len() - 10
    );
    // The old replicas counted what they gave up (`sharding_released_total`, logged beside):
    // the moved objects, and those of the new ones that reached an old owner first.
    let released_now: u64 = ["shard-a", "shard-b", "shard-c"]
        .iter()
        .map(|shard| released(&replicas[shard].log()))
        .sum();
    let moved = (moving.len() - 10) as u64;
    let created_to_d = moving
        .iter()
        .filter(|(key, at)| created(key) && new.owner_at(**at) == Some("shard-d"))
        .count() as u64;
    let released = released_now - released_before;
    assert!(
        (moved..=moved + created_to_d).contains(&released),
        "released {released}, moved {moved} (and {created_to_d} new ones to shard-d)"
    );

    // A replica killed (no release): its objects are reconciled again once its lease ran out.
    let victims: BTreeMap<String, u64> = uids()
        .into_iter()
        .filter(|(_, at)| new.owner_at(*at) == Some("shard-b"))
        .collect();
    let before = counts(&replicas);
    replicas["shard-b"].signal("KILL");
    let killed = Instant::now();
    let dead = replicas.remove("shard-b").unwrap();
    let live = ["shard-a", "shard-c", "shard-d"];
    project.wait(
        "the killed replica's objects reconciled again",
        LEASE.as_secs() + 30,
        || format!("{victims:?}\n{}", logs(&replicas)),
        || reconciled_by_owners(&replicas, &live, &victims, &before),
    );
    let took = killed.elapsed();
    eprintln!(
        "server-side, a killed replica: its {} objects reconciled again after {took:.1?} (lease {LEASE:?})",
        victims.len()
    );
    assert!(took <= LEASE + Duration::from_secs(10), "{took:?}");

    churning.store(false, Ordering::Relaxed);
    churn.join().unwrap();

    // Objects that leave a replica and come back unchanged are reconciled there again: a fifth
    // replica joins, takes its share, and leaves (SIGTERM: it releases its Lease). Its objects
    // leave the others' selections silently, and come back in a new list as they were.
    replicas.insert("shard-e", start("shard-e"));
    let five = ["shard-a", "shard-c", "shard-d", "shard-e"];
    project.wait(
        "the ring record settled on shard-e too",
        60,
        || logs(&replicas),
        || settled(&five),
    );
    let with_e = ring();
    let went: BTreeMap<String, u64> = uids()
        .into_iter()
        .filter(|(_, at)| with_e.owner_at(*at) == Some("shard-e"))
        .collect();
    assert!(!went.is_empty(), "shard-e took nothing");
    project.wait(
        "shard-e reconciled its share",
        30,
        || logs(&replicas),
        || reconciled_by_owners(&replicas, &five, &went, &BTreeMap::new()),
    );
    let before = counts(&replicas);
    let left = replicas.remove("shard-e").unwrap().stop_unforbidden();
    project.wait(
        "the objects back on their replicas, unchanged, reconciled there again",
        30,
        || format!("{went:?}\n{}", logs(&replicas)),
        || settled(&live) && reconciled_by_owners(&replicas, &live, &went, &before),
    );
    eprintln!(
        "server-side, a replica that left: its {} objects, back unchanged, reconciled again by their replicas",
        went.len()
    );
    uids(); // Still nothing labelled.
    let ended = vec![("shard-b", dead.log()), ("shard-e", left)];
    stop_without_overlaps(&project, ended, replicas);
}

/// Stops every replica (none was refused a request), checks from their merged logs and those
/// of the replicas that `ended` (name, log) that no object was reconciled by two replicas at
/// once, and uninstalls.
/// The names of `ring`'s shards.
fn names(ring: &Ring) -> Vec<&str> {
    ring.shards().iter().map(String::as_str).collect()
}

fn stop_without_overlaps(
    project: &Project,
    ended: Vec<(&str, String)>,
    replicas: BTreeMap<&str, Running>,
) {
    let ended = ended
        .into_iter()
        .map(|(shard, log)| (shard.to_string(), log));
    let mut logs: Vec<(String, String)> = ended.collect();
    for (shard, replica) in replicas {
        logs.push((shard.to_string(), replica.stop_unforbidden()));
    }
    let overlaps = overlaps(&logs);
    assert!(
        overlaps.is_empty(),
        "reconciled by two replicas at once: {overlaps:#?}"
    );
    project.run("make", &["uninstall"]);
}

/// Annotates every Guestbook anew every 100 ms while `churning`, so that reconciles go on
/// through every handover.
fn churn(project: &Project, churning: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let (kubectl, admin) = (project.plane.kubectl_binary(), project.plane.admin.clone());
    std::thread::spawn(move || {
        let mut round = 0;
        while churning.load(Ordering::Relaxed) {
            round += 1;
            let _ = std::process::Command::new(&kubectl)
                .env("KUBECONFIG", &admin)
                .args([
                    "annotate",
                    "guestbooks.webapp.sharded.example",
                    "--all",
                    "--overwrite",
                ])
                .arg(format!("churn={round}"))
                .output();
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

/// The project of these tests, built and installed: one Guestbook controller, sharded, whose
/// reconcile takes a second, so that handovers meet reconciles in flight.
fn sharded_project() -> Project {
    let project = Project::init("sharded", &["--domain", "sharded.example"]);
    // What the other test of this file left if it failed: its objects, labelled or not, and
    // its replicas' Leases.
    for leftover in [
        "delete crd guestbooks.webapp.sharded.example --ignore-not-found".to_string(),
        format!("delete lease -n default -l {RING_LABEL}=sharded"),
        "delete lease -n default sharded-ring --ignore-not-found".to_string(),
    ] {
        project.kubectl(&leftover.split(' ').collect::<Vec<_>>());
    }
    project.create_api("webapp", "Guestbook", &["--resource", "--controller"]);
    project.scaffold(&["edit", "--sharding"]);
    edit(
        &project.dir.join("src/controller/guestbook.rs"),
        "    // TODO(user): your logic here. Read `obj.spec`",
        "    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;\n    // TODO(user): your logic here. Read `obj.spec`",
    );
    project.run("make", &["manifests", "install"]);
    let role = std::fs::read_to_string(project.dir.join("config/rbac/role.yaml")).unwrap();
    assert!(
        role.contains("- guestbooks\n  verbs:\n  - get\n  - list\n  - patch\n  - watch"),
        "the sharder may not label the objects:\n{role}"
    );
    project.run("cargo", &["build", "--bin", "sharded"]);
    project
}

/// Starts the replica `shard` of the project's manager, sharded in `mode`, with a lease of
/// [`LEASE`] and JSON logs that show each reconcile's start and end.
fn start(project: &Project, shard: &str, mode: &str) -> Running {
    let (health, metrics) = (format!(":{}", free_port()), format!(":{}", free_port()));
    let duration = format!("--leader-elect-lease-duration={}s", LEASE.as_secs());
    let mode = format!("--sharding-mode={mode}");
    let args = [
        "--sharding",
        &mode,
        "--leader-election-namespace=default",
        &duration,
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=1s",
        "--health-probe-bind-address",
        &health,
        "--metrics-bind-address",
        &metrics,
        "--metrics-secure=false",
        "--webhook-bind-address=0",
        "--log-format=json",
    ];
    let mut command = project.command(&project.manager(), &args);
    command
        .env("POD_NAME", shard)
        .env("RUST_LOG", "info,kube_scaffold_runtime=debug")
        // A replica that fails ends its log with the error, not a backtrace.
        .env("RUST_BACKTRACE", "0");
    project.start(command)
}

/// `kubectl apply` of Guestbooks `guestbook-<i>` for `range`, in one request each.
fn create(project: &Project, range: std::ops::Range<usize>) {
    let manifest: String = range
        .map(|i| {
            format!(
                "apiVersion: webapp.sharded.example/v1\nkind: Guestbook\nmetadata:\n  name: guestbook-{i}\n  namespace: default\nspec:\n  foo: bar\n---\n"
            )
        })
        .collect();
    let output = project.apply(&manifest);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every Guestbook's metadata as the API server has it, by `namespace/name`.
fn guestbooks(project: &Project) -> BTreeMap<String, Value> {
    let list: Value = serde_json::from_str(&project.kubectl(&[
        "get",
        "guestbooks.webapp.sharded.example",
        "-A",
        "-o",
        "json",
    ]))
    .unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .map(|mut item| {
            let meta = item["metadata"].take();
            let key = format!(
                "{}/{}",
                meta["namespace"].as_str().unwrap(),
                meta["name"].as_str().unwrap()
            );
            (key, meta)
        })
        .collect()
}

/// Every Guestbook, by `namespace/name`, with its labels.
fn placed(project: &Project) -> BTreeMap<String, Placed> {
    let placed = |meta: Value| Placed {
        shard: meta["labels"][LABEL].as_str().map(String::from),
        draining: meta["labels"][DRAIN].as_str() == Some("true"),
    };
    let guestbooks = guestbooks(project).into_iter();
    guestbooks.map(|(key, meta)| (key, placed(meta))).collect()
}

/// One reconcile's log line: its message, object and time.
fn lines(log: &str) -> impl Iterator<Item = (String, String, String)> + '_ {
    log.lines().filter_map(|line| {
        let line: Value = serde_json::from_str(line).ok()?;
        let fields = &line["fields"];
        let message = fields["message"].as_str()?;
        if message != "reconcile started" && message != "reconcile ended" {
            return None;
        }
        let key = format!(
            "{}/{}",
            fields["namespace"].as_str()?,
            fields["name"].as_str()?
        );
        let time = line["timestamp"].as_str()?.to_string();
        Some((message.to_string(), key, time))
    })
}

/// How many reconciles of each object a replica's log shows ended.
fn reconciled(log: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (message, key, _) in lines(log) {
        if message == "reconcile ended" {
            *counts.entry(key).or_default() += 1;
        }
    }
    counts
}

/// How many objects a replica's log says it released to other shards (the server-side mode).
fn released(log: &str) -> u64 {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "released to other shards")
        .filter_map(|line| line["fields"]["objects"].as_u64())
        .sum()
}

/// The pairs of reconciles of one object, by two replicas, whose times overlap, from the
/// replicas' `(shard, log)`. A reconcile without an end (its replica killed) lasts to the
/// log's last line. Timestamps are RFC 3339 in UTC with a fixed width: they sort as text.
fn overlaps(logs: &[(String, String)]) -> Vec<String> {
    let mut spans: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for (shard, log) in logs {
        let last = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|l| l["timestamp"].as_str().map(String::from))
            .max()
            .unwrap_or_default();
        let mut open: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (message, key, time) in lines(log) {
            match message.as_str() {
                "reconcile started" => open.entry(key).or_default().push(time),
                _ => {
                    let started = open.get_mut(&key).and_then(Vec::pop).unwrap_or_default();
                    spans
                        .entry(key)
                        .or_default()
                        .push((started, time, shard.clone()));
                }
            }
        }
        for (key, starts) in open {
            for started in starts {
                spans
                    .entry(key.clone())
                    .or_default()
                    .push((started, last.clone(), shard.clone()));
            }
        }
    }
    let mut found = Vec::new();
    for (key, mut spans) in spans {
        spans.sort();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                if b.0 >= a.1 {
                    break;
                }
                if a.2 != b.2 {
                    found.push(format!(
                        "{key}: {} {}..{} and {} {}..{}",
                        a.2, a.0, a.1, b.2, b.0, b.1
                    ));
                }
            }
        }
    }
    found
}
