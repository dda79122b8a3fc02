//! Sharded managers (`edit --sharding`) on a real API server, as processes: every object held by
//! one replica, the placement every replica computes, a joining replica taking its share while
//! objects are created, a killed replica's objects reconciled again within its lease, and no
//! object reconciled by two replicas at once, from the replicas' merged logs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube_scaffold_runtime::sharding::ring::Ring;
use serde_json::Value;

use crate::control_plane::free_port;
use crate::project::{Project, Running, edit, turn};

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
    let project = Project::init("sharded", &["--domain", "sharded.example"]);
    project.create_api("webapp", "Guestbook", &["--resource", "--controller"]);
    project.scaffold(&["edit", "--sharding"]);
    // A reconcile that takes a while, so that handovers meet reconciles in flight.
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
    let start = |shard: &str| -> Running {
        let (health, metrics) = (format!(":{}", free_port()), format!(":{}", free_port()));
        let duration = format!("--leader-elect-lease-duration={}s", LEASE.as_secs());
        let args = [
            "--sharding",
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
            .env("RUST_LOG", "info,kube_scaffold_runtime=debug");
        project.start(command)
    };
    let placed = || placed(&project);
    let settled = |shards: &[&str], count: usize| {
        let ring = Ring::new(shards);
        let placed = placed();
        placed.len() == count
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
            .map(|(shard, r)| format!("--- {shard}\n{}", tail(&r.log())))
            .collect::<Vec<_>>()
            .join("\n")
    };
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
            || tail(&replica.log()),
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
    let churn = {
        let (churning, kubectl, admin) = (
            churning.clone(),
            project.plane.kubectl_binary(),
            project.plane.admin.clone(),
        );
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
    };

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
            || tail(&replicas[owner.as_str()].log()),
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
    let ring = Ring::new(live);
    project.wait(
        "the killed replica's objects reconciled again",
        LEASE.as_secs() + 30,
        || format!("{:?}\n{}", placed(), logs(&replicas)),
        || {
            victims.iter().all(|key| {
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
    let mut logs: Vec<(String, String)> = vec![("shard-b".into(), dead.log())];
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

/// Every Guestbook, by `namespace/name`, with its labels.
fn placed(project: &Project) -> BTreeMap<String, Placed> {
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
        .iter()
        .map(|item| {
            let meta = &item["metadata"];
            let key = format!(
                "{}/{}",
                meta["namespace"].as_str().unwrap(),
                meta["name"].as_str().unwrap()
            );
            let labels = &meta["labels"];
            let placed = Placed {
                shard: labels[LABEL].as_str().map(String::from),
                draining: labels[DRAIN].as_str() == Some("true"),
            };
            (key, placed)
        })
        .collect()
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

/// The last 40 lines of `log`.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
