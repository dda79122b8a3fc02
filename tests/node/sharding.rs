//! The sharded manager on the node (`edit --sharding`, `make deploy`): three pods each reconcile
//! their share of the Guestbooks, placed as the ring of the live pods says; the leader's pod
//! deleted, its objects reconciled again by the others (the test prints how long that took),
//! and its replacement takes a share; scaled 3 -> 5 -> 2 with objects created during each
//! handover, each reconciled by its replica; `make undeploy` leaves nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kube_scaffold_runtime::sharding::ring::Ring;
use serde_json::Value;

use crate::deploy::{self, manager_uids, pods};
use crate::project::{Project, turn};
use crate::ship::{DEPLOYMENT, NAMESPACE, ship};

const GROUP: &str = "webapp.node.example";
const LABEL: &str = "shard.kube-scaffold.io/ship";

/// Turns the ship's sharding off again when the scenario ends, however it ends, so that the
/// other scenarios deploy it as they expect (its image has the runtime's `sharding` feature,
/// which `edit --sharding=false` leaves on: `ship`).
struct Unsharded<'a>(&'a Project);

impl Drop for Unsharded<'_> {
    fn drop(&mut self) {
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

    create(project, 0..30);
    let held = settle(project, 30, "three pods");
    // Created once the three pods ran: each pod reconciled its own objects and no other.
    for (pod, objects) in &held {
        assert!(!objects.is_empty(), "{pod} holds nothing: {held:?}");
        assert_eq!(&reconciled(project, pod), objects, "what {pod} reconciled");
    }

    // The leader's pod deleted: its objects move at once (it releases its Lease), the sharder
    // moves to another pod, and the replacement pod takes its share.
    let leader = deploy::leader(project);
    let deleted = Instant::now();
    project.kubectl(&["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"]);
    let gone = held[&leader].clone();
    project.wait(
        "the deleted pod's objects reconciled by the others",
        120,
        || format!("{:?}", placement(project)),
        || {
            let placed = placement(project);
            gone.iter().all(|key| {
                let owner = placed.get(key).cloned().flatten();
                owner.is_some_and(|pod| pod != leader && reconciled(project, &pod).contains(key))
            })
        },
    );
    eprintln!(
        "a deleted pod: its {} objects reconciled again by the others after {:.1?}",
        gone.len(),
        deleted.elapsed()
    );
    ship.rollout();
    settle(project, 30, "three pods after the deletion");

    // Scaled up and down, objects created during each handover.
    for (replicas, created) in [(5, 30..36), (2, 36..40)] {
        project.kubectl(&[
            "scale",
            "-n",
            NAMESPACE,
            DEPLOYMENT,
            &format!("--replicas={replicas}"),
        ]);
        create(project, created.clone());
        ship.rollout();
        project.wait(
            &format!("{replicas} pods"),
            120,
            || format!("{:?}", pods(project)),
            || pods(project).len() == replicas,
        );
        settle(project, created.end, &format!("{replicas} pods"));
    }

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
                "pods {:?}, placement {:?}",
                pods(project),
                placement(project)
            )
        },
        || {
            let pods = pods(project);
            let ring = Ring::new(&pods);
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

/// The Guestbooks pod `pod` reconciled, by `namespace/name`, from its log (JSON lines: the
/// object as kube-runtime names it, `Guestbook.v1.<group>/<name>.<namespace>`).
fn reconciled(project: &Project, pod: &str) -> BTreeSet<String> {
    let output = project.kubectl_output(&["logs", "-n", NAMESPACE, pod, "-c", "manager"]);
    let log = String::from_utf8_lossy(&output.stdout);
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "reconciled")
        .filter_map(|line| {
            let object = line["fields"]["object"].as_str()?.to_string();
            let (kind, rest) = object.split_once('/')?;
            let (name, namespace) = rest.rsplit_once('.')?;
            kind.starts_with("Guestbook.")
                .then(|| format!("{namespace}/{name}"))
        })
        .collect()
}
