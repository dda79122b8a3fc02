//! The seeds' workflow on the node, through the generated Makefile: `make deploy` of the image
//! `make docker-build` made; the manager's two pods Running as 65532 in a namespace that
//! enforces the restricted Pod Security Standard; one leads (`kubectl logs -c manager`); the
//! sample Available with its Event; defaults applied, an invalid object refused and a v1
//! object stored as v2, each by the API server calling the webhooks through their Service;
//! deploy-image's Deployment Available with its operand running; a controller's own Pods
//! Running, scaled 3 to 1, and collected with their owner; `make undeploy` leaving nothing of
//! the project.

use crate::control_plane::{poll, restart_containerd};
use crate::project::{Project, turn};
use crate::ship::{NAMESPACE, ship, webhooks_answer};

const GROUP: &str = "webapp.node.example";

#[test]
fn deploy_runs_the_manager_in_pods_and_its_webhooks_through_their_service() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    ship.deploy();

    let enforce = "{.metadata.labels.pod-security\\.kubernetes\\.io/enforce}";
    assert_eq!(
        project.jsonpath(&["namespace", NAMESPACE], enforce),
        "restricted"
    );
    let pods = pods(project);
    assert_eq!(pods.len(), 2, "the webhook patch's two replicas: {pods:?}");
    let uids = manager_uids();
    assert_eq!(
        uids,
        ["65532", "65532"],
        "the managers' processes on the node"
    );

    // One of them leads, and says so in its log.
    let leader = leader(project);
    let log = project.kubectl(&["logs", "-n", NAMESPACE, &leader, "-c", "manager"]);
    assert!(log.contains("became the leader"), "{leader}'s log:\n{log}");

    // The sample, reconciled by the leader in its pod.
    let sample = format!("guestbooks.v1.{GROUP}/guestbook-sample");
    project.kubectl(&[
        "apply",
        "-n",
        "default",
        "-f",
        "config/samples/webapp_v1_guestbook.yaml",
    ]);
    project.wait(
        "the sample Available",
        60,
        || project.kubectl(&["get", "-n", "default", &sample, "-o", "yaml"]),
        || project.condition(&sample, "Available") == "True",
    );
    let reasons = project.jsonpath(
        &[
            "events",
            "-n",
            "default",
            "--field-selector",
            "involvedObject.name=guestbook-sample",
        ],
        "{.items[*].reason}",
    );
    assert!(
        reasons.contains("Available"),
        "the sample's events: {reasons}"
    );

    // The webhooks, called by the API server through their Service.
    crate::ship::webhooks_answer(project, "deployed");
    project.kubectl(&["delete", "-n", "default", &sample, "--timeout=60s"]);

    // deploy-image: the Memcached's Deployment Available on the node, its pod running as the
    // user asked for, and the kind's status saying so.
    let memcached = "memcacheds.v1alpha1.cache.node.example/memcached-sample";
    project.kubectl(&[
        "apply",
        "-n",
        "default",
        "-f",
        "config/samples/cache_v1alpha1_memcached.yaml",
    ]);
    project.wait(
        "the Memcached Available",
        120,
        || {
            project.kubectl(&[
                "get",
                "-n",
                "default",
                memcached,
                "deployments",
                "pods",
                "-o",
                "yaml",
            ])
        },
        || project.condition(memcached, "Available") == "True",
    );
    let replicas = project.jsonpath(
        &["deployments", "-n", "default"],
        "{.items[*].status.availableReplicas}",
    );
    assert_eq!(replicas, "1", "the Memcached's Deployment");
    let user = project.jsonpath(
        &["pods", "-n", "default"],
        "{.items[*].spec.containers[0].securityContext.runAsUser}",
    );
    assert_eq!(user, "1001");
    assert!(
        process_uids("pause").contains(&"1001".to_string()),
        "the operand's process runs as 1001"
    );
    project.kubectl(&["delete", "-n", "default", memcached, "--timeout=60s"]);
    // Its Pod goes by the garbage collector (Deployment, ReplicaSet, Pod) after the Memcached;
    // once, on a busy node, it was still there when the CustomPod's Pods were counted below.
    project.wait(
        "the Memcached's Pod collected",
        120,
        || {
            project.kubectl(&[
                "get",
                "-n",
                "default",
                "deployments,replicasets,pods",
                "-o",
                "wide",
            ])
        },
        || {
            project
                .jsonpath(&["pods", "-n", "default"], "{.items[*].metadata.name}")
                .is_empty()
        },
    );

    // containerd restarted under the running pods: the managers' containers go on (the same
    // processes, no restart), the webhooks still answer, and new pods start (the CustomPod's
    // below).
    // Neither restarted since the deployment: two replicas that start together inject the
    // same CA at once, and the one whose write came second used to exit (409).
    assert_not_restarted(project);
    let managers = process_ids("manager");
    assert_eq!(managers.len(), 2, "the managers' processes: {managers:?}");
    restart_containerd();
    let ready = ["wait", "--for=condition=Ready", "--timeout=120s"];
    project.kubectl(&[&ready[..], &MANAGER_PODS].concat());
    assert_eq!(
        process_ids("manager"),
        managers,
        "the managers' processes after containerd's restart"
    );
    assert_not_restarted(project);
    webhooks_answer(project, "after-containerd");

    // An operator that makes pods: the CustomPod's Pods Running, scaled 3 to 1, then
    // collected with it.
    let custom = "custompods.v1.ship.node.example/custompod-sample";
    let sample = "config/samples/ship_v1_custompod.yaml";
    project.kubectl(&["apply", "-n", "default", "-f", sample]);
    for (replicas, running) in [(3, "Running Running Running"), (1, "Running")] {
        let scale = format!("{{\"spec\":{{\"replicas\":{replicas}}}}}");
        let patch = [
            "patch",
            "-n",
            "default",
            custom,
            "--type=merge",
            "-p",
            &scale,
        ];
        project.kubectl(&patch);
        let phases = || {
            let selector = "--selector=app.kubernetes.io/instance=custompod-sample";
            let pods = ["pods", "-n", "default", selector];
            project.jsonpath(&pods, "{.items[*].status.phase}")
        };
        let observed = || {
            let generations = "{.metadata.generation} {.status.observedGeneration}";
            let generations = project.jsonpath(&["-n", "default", custom], generations);
            let generations: Vec<&str> = generations.split(' ').collect();
            matches!(generations[..], [generation, observed] if generation == observed)
        };
        project.wait(
            &format!("the CustomPod's {replicas} Pods Running, and it Available"),
            120,
            || project.kubectl(&["get", "-n", "default", custom, "pods", "-o", "yaml"]),
            || {
                phases() == running
                    && observed()
                    && project.condition(custom, "Available") == "True"
            },
        );
    }
    let names = project.jsonpath(&["pods", "-n", "default"], "{.items[*].metadata.name}");
    assert_eq!(
        names, "custompod-sample-0",
        "the Pods left after scaling to 1"
    );
    project.kubectl(&["delete", "-n", "default", custom, "--timeout=60s"]);
    let gone = || {
        project
            .jsonpath(&["pods", "-n", "default"], "{.items[*].metadata.name}")
            .is_empty()
    };
    assert!(poll(60, gone), "the CustomPod's Pod outlived it");

    ship.make(&["undeploy"]);
    let left = project.kubectl(&["get", "namespace", "-o", "name"]);
    assert!(
        !left.contains(NAMESPACE),
        "undeploy left the namespace: {left}"
    );
    for kind in [
        "crd",
        "clusterrole",
        "clusterrolebinding",
        "mutatingwebhookconfiguration",
        "validatingwebhookconfiguration",
    ] {
        let names = project.kubectl(&["get", kind, "-o", "name"]);
        let ours: Vec<&str> = names
            .lines()
            .filter(|n| n.contains("ship-") || n.contains(GROUP))
            .collect();
        assert!(ours.is_empty(), "undeploy left {ours:?}");
    }
    assert!(
        poll(60, || manager_uids().is_empty()),
        "the managers' processes outlived undeploy"
    );
}

/// The manager's pods, as kubectl selects them.
pub const MANAGER_PODS: [&str; 5] = [
    "pods",
    "-n",
    NAMESPACE,
    "-l",
    "control-plane=controller-manager",
];

/// Checks that no container of the manager's pods has restarted; else fails with their last
/// states and the logs of the containers that ended.
pub fn assert_not_restarted(project: &Project) {
    let statuses = "{.items[*].status.containerStatuses[*]";
    let restarts = project.jsonpath(&MANAGER_PODS, &format!("{statuses}.restartCount}}"));
    if restarts.split_whitespace().all(|n| n == "0") {
        return;
    }
    let last = project.jsonpath(&MANAGER_PODS, &format!("{statuses}.lastState}}"));
    let previous: Vec<String> = pods(project)
        .iter()
        .map(|pod| {
            let logs = ["logs", "-n", NAMESPACE, pod, "-c", "manager", "--previous"];
            let output = project.kubectl_output(&logs);
            format!("{pod}: {}", String::from_utf8_lossy(&output.stdout))
        })
        .collect();
    panic!(
        "a manager restarted ({restarts}): {last}\n{}",
        previous.join("\n")
    );
}

/// The manager's pods that are not terminating, by name.
pub fn pods(project: &Project) -> Vec<String> {
    let names = project.jsonpath(
        &MANAGER_PODS,
        "{range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name} {end}|{range .items[*]}{.metadata.name} {end}",
    );
    let (terminating, all) = names.split_once('|').unwrap();
    let terminating: Vec<&str> = terminating.split_whitespace().collect();
    all.split_whitespace()
        .filter(|n| !terminating.contains(n))
        .map(str::to_string)
        .collect()
}

/// The pod that holds the leader Lease (its holder is `<pod>_<random>`).
pub fn leader(project: &Project) -> String {
    let holder = project.jsonpath(
        &["lease", "-n", NAMESPACE, "ship-leader-election"],
        "{.spec.holderIdentity}",
    );
    let pod = holder.split('_').next().unwrap_or_default();
    assert!(!pod.is_empty(), "nobody holds the lease");
    pod.to_string()
}

/// The manager's pods and their IPs.
pub fn pod_ips(project: &Project) -> Vec<(String, String)> {
    let names = pods(project);
    names
        .into_iter()
        .map(|pod| {
            let ip = project.jsonpath(&["pod", "-n", NAMESPACE, &pod], "{.status.podIP}");
            (pod, ip)
        })
        .collect()
}

/// The user IDs of the node's processes named `manager` (the image's entrypoint).
pub fn manager_uids() -> Vec<String> {
    process_uids("manager")
}

/// The user IDs of this machine's processes named `name`.
fn process_uids(name: &str) -> Vec<String> {
    processes("uid", name)
}

/// The IDs of this machine's processes named `name`, in order.
fn process_ids(name: &str) -> Vec<String> {
    let mut ids = processes("pid", name);
    ids.sort();
    ids
}

/// The `field` (a `ps -o` name) of this machine's processes named `name`.
fn processes(field: &str, name: &str) -> Vec<String> {
    let output = std::process::Command::new("ps")
        .args(["-eo", &format!("{field}=,comm=")])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines()
        .filter_map(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .split_first()
                .map(|(u, c)| (u.to_string(), c.join(" ")))
        })
        .filter(|(_, comm)| comm == name)
        .map(|(uid, _)| uid)
        .collect()
}
