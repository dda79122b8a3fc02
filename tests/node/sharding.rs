//! The sharded manager on the node (`edit --sharding`, `make deploy`): three pods each reconcile
//! their share of the Guestbooks, placed as the ring of the live pods says; the leader's pod
//! deleted, its objects reconciled again by the others (the test prints how long that took),
//! and its replacement takes a share; scaled 3 -> 5 -> 2 -> 4 -> 2 with objects created during
//! each handover, the last before the moves to the 4th pods ended, each reconciled by its
//! replica; `make undeploy` leaves nothing. Then the same pods
//! in the server-side mode, which the node's API server has the feature gate for.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kube_scaffold_runtime::sharding::ring::{Ring, uid_position};
use serde_json::Value;

use crate::deploy::{self, manager_uids, pods};
use crate::project::{Project, edit, sharder_saw, turn};
use crate::ship::{DEPLOYMENT, NAMESPACE, Ship, ship};

const GROUP: &str = "webapp.node.example";
const LABEL: &str = "shard.kube-scaffold.io/ship";
/// The manager's argument that `edit --sharding` adds, as config/manager/manager.yaml has it.
const SHARDING_ARG: &str = "        - --sharding\n";
/// The line a user adds after it for the server-side mode, as the generated README says.
const SERVER_MODE_ARG: &str = "        - --sharding-mode=server\n";

/// Turns the ship's sharding off again when the scenario ends, however it ends, so that the
/// other scenarios deploy it as they expect (its image has the runtime's `sharding` feature,
/// which `edit --sharding=false` leaves on: `ship`); the server-side mode's line goes first.
struct Unsharded<'a>(&'a Project);

impl Drop for Unsharded<'_> {
    fn drop(&mut self) {
        let manager = self.0.dir.join("config/manager/manager.yaml");
        if let Ok(text) = std::fs::read_to_string(&manager) {
            std::fs::write(&manager, text.replace(SERVER_MODE_ARG, "")).unwrap();
        }
        self.0.scaffold(&["edit", "--sharding=false"]);
    }
}

// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
#[test]
fn sharded_pods_share_the_objects_through_a_deletion_and_scaling() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    project.scaffold(&["edit", "--sharding"]);
    let _unsharded = Unsharded(project);
    ship.deploy();
    assert_eq!(pods(project).len(), 3, "edit --sharding's three replicas");
    // Objects created before the sharder saw every pod's Lease would be placed on fewer pods
    // and handed over once it did, which the exact shares below do not allow.
    project.wait(
        "the sharder's ring holds the three pods",
        60,
        || format!("{:?}", pods(project)),
        || live(project, &pods(project)),
    );

    create(project, 0..30);
    let held = settle(project, 30, "three pods");
    // Created once the three pods ran: each pod reconciled its own objects and no other.
    for (pod, objects) in &held {
        assert!(!objects.is_empty(), "{pod} holds nothing: {held:?}");
        assert_eq!(&reconciled(project, pod), objects, "what {pod} reconciled");
    }

    // The leader's pod deleted: its objects move at once (it releases its Lease), the sharder
    // moves to another pod, and the replacement pod takes its share.
    delete_leader(project, &held, "", |leader, gone| {
        let placed = placement(project);
        gone.iter().all(|key| {
            let owner = placed.get(key).cloned().flatten();
            owner.is_some_and(|pod| pod != leader && reconciled(project, &pod).contains(key))
        })
    });
    ship.rollout();
    settle(project, 30, "three pods after the deletion");

    // Scaled up and down, objects created during each handover; then up again, and down
    // before the moves to the new pods ended: drains in flight when those pods go.
    for (replicas, created) in [(5, 30..36), (2, 36..60), (4, 60..70), (2, 70..80)] {
        let cut_short = replicas == 4;
        scale(project, replicas);
        create(project, created.clone());
        ship.rollout();
        project.wait(
            &format!("{replicas} pods"),
            120,
            || format!("{:?}", pods(project)),
            || pods(project).len() == replicas,
        );
        if !cut_short {
            settle(project, created.end, &format!("{replicas} pods"));
        }
    }
    let warnings = warnings(project, usize::MAX);
    let failed: Vec<&str> = warnings
        .lines()
        .filter(|l| l.contains("cannot label"))
        .collect();
    eprintln!(
        "sharder patches that failed and were sent again (the last pods' logs): {}\n{}",
        failed.len(),
        failed.join("\n")
    );

    undeploy_leaves_nothing(ship);
}

/// The server-side mode (`--sharding-mode=server` added to config/manager's args) in three
/// pods, with their own RBAC: the API server sends each pod the Guestbooks whose UID's hash is on
/// its arcs of the ring record, nothing is labelled, and each pod reconciled exactly those; a
/// CustomPod becomes Available through its Pod's events, which reach only the CustomPod's owner;
/// the leader's pod deleted, its objects are reconciled again by the others and its replacement
/// takes a share through the ring record's handover; `make undeploy` leaves nothing.
#[test]
fn server_side_sharded_pods_each_watch_the_objects_on_their_arcs() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    project.scaffold(&["edit", "--sharding"]);
    let _unsharded = Unsharded(project);
    let manager = project.dir.join("config/manager/manager.yaml");
    edit(
        &manager,
        SHARDING_ARG,
        &format!("{SHARDING_ARG}{SERVER_MODE_ARG}"),
    );
    ship.deploy();
    assert_eq!(pods(project).len(), 3, "edit --sharding's three replicas");
    // Objects created once the ring settled on the three: each reconciled by its owner only.
    project.wait(
        "the ring record settled on the three pods",
        120,
        || project.kubectl(&["get", "leases", "-n", NAMESPACE, "-o", "yaml"]),
        || settled(project, &pods(project)).is_some(),
    );

    create(project, 0..30);
    let custom_pods: String = (0..3)
        .map(|i| {
            format!("apiVersion: ship.node.example/v1\nkind: CustomPod\nmetadata: {{name: custom-{i}, namespace: default}}\nspec: {{replicas: 1}}\n---\n")
        })
        .collect();
    let output = project.apply(&custom_pods);
    assert!(output.status.success(), "{output:?}");
    let held = settle_by_uid(project, 30, "three pods");
    for (pod, objects) in &held {
        assert!(!objects.is_empty(), "{pod} holds nothing: {held:?}");
        let seen = reconciled(project, pod);
        assert_eq!(
            &seen, objects,
            "{pod} reconciled other objects than its own"
        );
    }
    // Each CustomPod Available: its reconciler ends awaiting a change, so only its Pod's events,
    // which each pod keeps for the owners it serves, bring it there; reconciled by its owner only.
    let (ring, _) = project.ring_record(NAMESPACE, "ship");
    for (key, uid) in uids(project, "custompods.v1.ship.node.example") {
        let name = key.trim_start_matches("default/");
        let object = format!("custompods.v1.ship.node.example/{name}");
        project.wait(
            &format!("CustomPod {name} Available"),
            120,
            || project.kubectl(&["get", "-n", "default", &object, "-o", "yaml"]),
            || project.condition(&object, "Available") == "True",
        );
        let owner = ring.owner_at(uid_position(&uid)).unwrap();
        for pod in pods(project) {
            let seen = reconciled_kind(project, &pod, "CustomPod.").contains(&key);
            assert_eq!(
                seen,
                pod == owner,
                "{pod} and CustomPod {name} (owner {owner})"
            );
        }
    }

    // The leader's pod deleted: its objects are reconciled again by the others, and the
    // replacement pod takes its share.
    delete_leader(project, &held, "server-side, ", |leader, gone| {
        let others: Vec<BTreeSet<String>> = pods(project)
            .iter()
            .filter(|pod| *pod != leader)
            .map(|pod| reconciled(project, pod))
            .collect();
        gone.iter()
            .all(|key| others.iter().any(|seen| seen.contains(key)))
    });
    ship.rollout();
    create(project, 30..36);
    settle_by_uid(project, 36, "three pods after the deletion");

    let custom_pods = project.kubectl(&[
        "delete",
        "custompods.v1.ship.node.example",
        "--all",
        "-n",
        "default",
        "--timeout=60s",
    ]);
    assert!(custom_pods.contains("deleted"), "{custom_pods}");
    undeploy_leaves_nothing(ship);
}

/// Deletes the pod that holds the leader Lease and waits until `moved(leader, its objects)`
/// says the others reconciled what it held (`held`), printing how long that took after
/// `prefix`.
// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
fn delete_leader(
    project: &Project,
    held: &BTreeMap<String, BTreeSet<String>>,
    prefix: &str,
    moved: impl Fn(&str, &BTreeSet<String>) -> bool,
) {
    let leader = deploy::leader(project);
    let deleted = Instant::now();
    project.kubectl(&["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"]);
    let gone = &held[&leader];
    project.wait(
        "the deleted pod's objects reconciled by the others",
        120,
        || {
            format!(
                "pods {:?}, placement {:?}",
                pods(project),
                placement(project)
            )
        },
        || moved(&leader, gone),
    );
    eprintln!(
        "{prefix}a deleted pod: its {} objects reconciled again by the others after {:.1?}",
        gone.len(),
        deleted.elapsed()
    );
}

/// `make undeploy`, then checks that it left no namespace, CRD, Lease or manager process.
fn undeploy_leaves_nothing(ship: &Ship) {
    let project = &ship.project;
    ship.make(&["undeploy"]);
    let left = project.kubectl(&["get", "namespace", "-o", "name"]);
    assert!(
        !left.contains(NAMESPACE),
        "undeploy left the namespace: {left}"
    );
    let crds = project.kubectl(&["get", "crd", "-o", "name"]);
    assert!(!crds.contains(GROUP), "undeploy left {crds}");
    let leases = project.kubectl(&["get", "leases", "-A", "-o", "name"]);
    assert!(!leases.contains("ship-"), "undeploy left {leases}");
    assert!(
        crate::control_plane::poll(60, || manager_uids().is_empty()),
        "the managers' processes outlived undeploy"
    );
}

/// Waits until the ring record names the live pods as settled, nothing is labelled with a shard,
/// and each of the first `count` Guestbooks was reconciled by the pod whose arcs hold its UID's
/// hash (its log); what each pod holds.
fn settle_by_uid(
    project: &Project,
    count: usize,
    what: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut held = BTreeMap::new();
    project.wait(
        &format!("{count} Guestbooks reconciled by their owners by UID on {what}"),
        180,
        || {
            let record = project.kubectl_output(&[
                "get",
                "lease",
                "-n",
                NAMESPACE,
                "ship-ring",
                "-o",
                "yaml",
            ]);
            format!(
                "pods {:?}\n{}",
                pods(project),
                String::from_utf8_lossy(&record.stdout)
            )
        },
        || {
            let pods = pods(project);
            let Some(ring) = settled(project, &pods) else {
                return false;
            };
            let uids = uids(project, &format!("guestbooks.v1.{GROUP}"));
            let keys: Vec<String> = (0..count).map(|i| format!("default/sharded-{i}")).collect();
            if !keys.iter().all(|key| uids.contains_key(key)) {
                return false;
            }
            held = pods
                .iter()
                .map(|pod| {
                    let mine = keys
                        .iter()
                        .filter(|key| ring.owner_at(uid_position(&uids[*key])) == Some(pod));
                    (pod.clone(), mine.cloned().collect::<BTreeSet<_>>())
                })
                .collect();
            held.iter()
                .all(|(pod, mine)| mine.is_subset(&reconciled(project, pod)))
        },
    );
    assert!(
        placement(project).values().all(Option::is_none),
        "the server-side mode labelled objects: {:?}",
        placement(project)
    );
    held
}

/// The ring of the ring record once it is settled on the shards `pods`.
fn settled(project: &Project, pods: &[String]) -> Option<Ring> {
    let (members, settled) = project.ring_record(NAMESPACE, "ship");
    (same_shards(&members, pods) && members == settled).then_some(members)
}

/// Whether `ring`'s shards are `pods`, in any order.
fn same_shards(ring: &Ring, pods: &[String]) -> bool {
    let mut pods = pods.to_vec();
    pods.sort();
    ring.shards() == pods
}

/// The UIDs of the objects of `resource` in `default`, by `namespace/name`.
fn uids(project: &Project, resource: &str) -> BTreeMap<String, String> {
    let list = project.kubectl(&["get", resource, "-n", "default", "-o", "json"]);
    let list: Value = serde_json::from_str(&list).unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let meta = &item["metadata"];
            let key = format!("default/{}", meta["name"].as_str()?);
            Some((key, meta["uid"].as_str()?.to_string()))
        })
        .collect()
}

/// Scales the manager's Deployment to `replicas`.
fn scale(project: &Project, replicas: usize) {
    let replicas = format!("--replicas={replicas}");
    project.kubectl(&["scale", "-n", NAMESPACE, DEPLOYMENT, &replicas]);
}

/// The `last` warnings and errors in the log of each pod.
fn warnings(project: &Project, last: usize) -> String {
    let pods = pods(project);
    let logs = pods.iter().map(|pod| {
        let output = project.kubectl_output(&["logs", "-n", NAMESPACE, pod, "-c", "manager"]);
        let log = String::from_utf8_lossy(&output.stdout).into_owned();
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("\"WARN\"") || l.contains("\"ERROR\""))
            .collect();
        let last = lines[lines.len().saturating_sub(last)..].join("\n");
        format!("{pod}:\n{last}")
    });
    logs.collect::<Vec<_>>().join("\n")
}

/// `kubectl apply` of the v1 Guestbooks `sharded-<i>` in `default` for `range`.
fn create(project: &Project, range: std::ops::Range<usize>) {
    let manifest: String = range
        .map(|i| {
            format!("apiVersion: {GROUP}/v1\nkind: Guestbook\nmetadata: {{name: sharded-{i}, namespace: default}}\nspec: {{foo: bar}}\n---\n")
        })
        .collect();
    let output = project.apply(&manifest);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Waits until the first `count` Guestbooks are placed as the ring of the live pods says, and
/// each was reconciled by the pod that holds it (its log); what each pod holds.
fn settle(project: &Project, count: usize, what: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut held = BTreeMap::new();
    project.wait(
        &format!("{count} Guestbooks placed on {what} and reconciled there"),
        180,
        || {
            format!(
                "pods {:?}, placement {:?}\nwarnings:\n{}",
                pods(project),
                placement(project),
                warnings(project, 10)
            )
        },
        || {
            let pods = pods(project);
            let (ring, _) = project.ring_record(NAMESPACE, "ship");
            if !same_shards(&ring, &pods) {
                return false;
            }
            let placed = placement(project);
            let keys: Vec<String> = (0..count).map(|i| format!("default/sharded-{i}")).collect();
            if !keys
                .iter()
                .all(|key| placed.get(key).cloned().flatten().as_deref() == ring.owner(key))
            {
                return false;
            }
            held = pods
                .iter()
                .map(|pod| {
                    let mine = keys.iter().filter(|k| placed[*k].as_deref() == Some(pod));
                    (pod.clone(), mine.cloned().collect::<BTreeSet<_>>())
                })
                .collect();
            held.iter()
                .all(|(pod, mine)| mine.is_subset(&reconciled(project, pod)))
        },
    );
    held
}

/// The shard label of every `sharded-<i>` Guestbook, by `namespace/name`.
fn placement(project: &Project) -> BTreeMap<String, Option<String>> {
    let list = project.kubectl(&[
        "get",
        &format!("guestbooks.v1.{GROUP}"),
        "-n",
        "default",
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_str(&list).unwrap();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let name = item["metadata"]["name"].as_str()?;
            let shard = item["metadata"]["labels"][LABEL].as_str().map(String::from);
            name.starts_with("sharded-")
                .then(|| (format!("default/{name}"), shard))
        })
        .collect()
}

/// Whether the sharder, in the log of the pod that leads, last saw `pods` live.
fn live(project: &Project, pods: &[String]) -> bool {
    let names: Vec<&str> = pods.iter().map(String::as_str).collect();
    pods.iter().any(|pod| {
        let output = project.kubectl_output(&["logs", "-n", NAMESPACE, pod, "-c", "manager"]);
        sharder_saw(&String::from_utf8_lossy(&output.stdout), &names)
    })
}

/// The Guestbooks pod `pod` reconciled, by `namespace/name`, from its log.
fn reconciled(project: &Project, pod: &str) -> BTreeSet<String> {
    reconciled_kind(project, pod, "Guestbook.")
}

/// The objects whose kind starts `kind` (`Guestbook.`) pod `pod` reconciled, by
/// `namespace/name`, from its log (JSON lines: the object as kube-runtime names it,
/// `Guestbook.v1.<group>/<name>.<namespace>`).
fn reconciled_kind(project: &Project, pod: &str, kind: &str) -> BTreeSet<String> {
    let output = project.kubectl_output(&["logs", "-n", NAMESPACE, pod, "-c", "manager"]);
    let log = String::from_utf8_lossy(&output.stdout);
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "reconciled")
        .filter_map(|line| {
            let object = line["fields"]["object"].as_str()?.to_string();
            let (object_kind, rest) = object.split_once('/')?;
            let (name, namespace) = rest.rsplit_once('.')?;
            object_kind
                .starts_with(kind)
                .then(|| format!("{namespace}/{name}"))
        })
        .collect()
}
