//! Faults of the API server, met by the generated manager:
//!
//! - gone and back: the manager reaches the API server through a relay the test cuts,
//!   resetting every connection and refusing new ones for 10 s, while objects are created and
//!   changed. The manager keeps running, and once the API server answers again it reconciles
//!   what changed while it was away; the test prints how long after the cut ended that took.
//! - etcd compacted meanwhile: PodTemplates have no watch cache on this control plane, so the
//!   manager's watch of them, resumed from the version it last saw, meets the compaction
//!   (410 Gone) and lists again; the PodTemplate made during the outage is reconciled.
//! - throttling: the manager, under its own ServiceAccount, is put by API Priority and
//!   Fairness in a priority level of one share that rejects what it cannot seat (429), and
//!   given 60 objects at once. Every one is reconciled, and the API server counted its 429s.
//! - listed again with 2,000 objects new to it: the manager is frozen (SIGSTOP) while its own
//!   API server restarts, so that its watches, resumed from versions older than the new watch
//!   cache, meet 410 Gone and list again, in pages; meanwhile 2,000 Guestbooks are created, a
//!   Ledger's child changed and another's deleted. Every Guestbook is reconciled within 30 s
//!   of the manager's return, and both children are made whole again.
//! - killed mid-reconcile: the manager is SIGKILLed while a reconcile stalls (a user's edit
//!   of the controller, on when `FAULTS_STALL` is set), once after a Ledger's child was
//!   applied but before its status, once in the middle of its finalizer's cleanup. Started
//!   again, the manager finishes both: the Ledger Available with the dead process's child
//!   taken over (not reported as another's), then its cleanup run and the Ledger gone.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::control_plane::free_port;
use crate::project::{Project, edit, turn};

/// The project's kind, by its full name: other tests' Guestbooks may be installed too.
const GUESTBOOKS: &str = "guestbooks.webapp.faults.example";

/// How long the API server is gone for the manager.
const OUTAGE: Duration = Duration::from_secs(10);

/// A TCP relay to the API server that can be cut: it resets its connections and refuses new
/// ones until restored.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let (refusing, open) = (cut.clone(), connections.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if refusing.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let mut open = open.lock().unwrap();
                for (from, to) in [(&client, &server), (&server, &client)] {
                    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                    std::thread::spawn(move || {
                        let mut buffer = [0; 16 * 1024];
                        while let Ok(n @ 1..) = from.read(&mut buffer) {
                            if to.write_all(&buffer[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(Shutdown::Both);
                        let _ = from.shutdown(Shutdown::Both);
                    });
                }
                open.extend([client, server]);
            }
        });
        Relay {
            port,
            cut,
            connections,
        }
    }

    /// Closes every relayed connection, and refuses new ones.
    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for connection in self.connections.lock().unwrap().drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
#[test]
fn the_manager_catches_up_after_the_api_server_went_away_and_under_throttling() {
    let _turn = turn();
    let project = Project::init("faults", &["--domain", "faults.example"]);
    project.create_api("webapp", "Guestbook", &["--resource", "--controller"]);
    // PodTemplates have no watch cache on this control plane: their watch reads etcd.
    project.create_api("core", "PodTemplate", &["--controller", "--resource=false"]);
    // Ledger has a finalizer and a child, and a reconcile that stalls when told to.
    let ledger = [
        "--resource",
        "--controller",
        "--finalizer",
        "--owns",
        "core/v1/ConfigMap",
    ];
    project.create_api("webapp", "Ledger", &ledger);
    stall_ledgers(&project);
    project.run("make", &["manifests", "install"]);
    project.run("cargo", &["build", "--bin", "faults"]);

    let target = project
        .plane
        .server
        .trim_start_matches("https://")
        .to_string();
    let relay = Relay::start(target.clone());
    let admin = std::fs::read_to_string(&project.plane.admin).unwrap();
    let relayed = project.dir.join("relayed.kubeconfig");
    let via = format!("127.0.0.1:{}", relay.port);
    std::fs::write(&relayed, admin.replace(&target, &via)).unwrap();
    let health = format!("--health-probe-bind-address=127.0.0.1:{}", free_port());
    let flags = [health.as_str(), "--metrics-bind-address=0"];
    let mut command = project.command(&project.manager(), &flags);
    command.env("KUBECONFIG", &relayed);
    let mut manager = project.start(command);

    let guestbook = |name: &str, foo: &str| {
        format!(
            "apiVersion: webapp.faults.example/v1\nkind: Guestbook\nmetadata: {{name: {name}, namespace: default}}\nspec: {{foo: {foo}}}\n"
        )
    };
    let available =
        |name: &str| project.condition(&format!("{GUESTBOOKS}/{name}"), "Available") == "True";
    let apply = |yaml: String| {
        let output = project.apply(&yaml);
        assert!(output.status.success(), "{output:?}");
    };
    let template = |name: &str| {
        format!(
            "apiVersion: v1\nkind: PodTemplate\nmetadata: {{name: {name}, namespace: default}}\ntemplate: {{spec: {{containers: [{{name: c, image: x}}]}}}}\n"
        )
    };
    let template_reconciled = |log: &str, name: &str| {
        let reconciled = format!("PodTemplate.v1./{name}.default");
        log.lines()
            .any(|l| l.contains("reconciled") && l.contains(&reconciled))
    };
    apply(guestbook("before", "a"));
    apply(template("before"));
    project.wait(
        "the first Guestbook and PodTemplate reconciled",
        60,
        || manager.log(),
        || available("before") && template_reconciled(&manager.log(), "before"),
    );

    relay.cut();
    let cut = Instant::now();
    apply(guestbook("during", "b"));
    let generation =
        |name: &str| project.jsonpath(&[&format!("{GUESTBOOKS}/{name}")], "{.metadata.generation}");
    apply(guestbook("before", "changed"));
    // The PodTemplates' history compacted away: the manager's watch cannot resume from the
    // version it last saw, and must list again.
    apply(template("during"));
    let lists_before = lists(project.plane, "podtemplates", &project.plane.server);
    compact(&project.plane.etcd);
    std::thread::sleep(OUTAGE.saturating_sub(cut.elapsed()));
    assert!(
        !available("during"),
        "reconciled while the API server was gone"
    );
    assert!(
        manager.exited().is_none(),
        "the manager stopped:\n{}",
        manager.log()
    );

    relay.restore();
    let restored = Instant::now();
    let observed = |name: &str| {
        project.jsonpath(
            &[&format!("{GUESTBOOKS}/{name}")],
            "{.status.conditions[?(@.type==\"Available\")].observedGeneration}",
        )
    };
    project.wait(
        "the objects changed while the API server was gone reconciled",
        60,
        || manager.log(),
        || {
            available("during")
                && observed("before") == generation("before")
                && template_reconciled(&manager.log(), "during")
        },
    );
    let lists = lists(project.plane, "podtemplates", &project.plane.server) - lists_before;
    assert!(
        lists >= 1,
        "the manager's PodTemplate watch resumed without a list"
    );
    eprintln!(
        "the API server gone for {:.1?}: what changed meanwhile reconciled {:.1?} after it was back",
        OUTAGE,
        restored.elapsed()
    );
    manager.stop_unforbidden();

    relisted(&project);
    throttled(&project);
    killed(&project);
    project.kubectl(&[
        "delete",
        "flowschema,prioritylevelconfiguration",
        "faults-throttled",
    ]);
    project.kubectl(&[
        "delete",
        "podtemplates",
        "before",
        "during",
        "-n",
        "default",
    ]);
    project.run("make", &["uninstall"]);
}

/// How many Guestbooks are created while the manager is away in `relisted`: several pages of
/// the API server's list (500 each).
const RELISTED: usize = 2000;

/// The manager listed again with [`RELISTED`] objects new to it (see the module's doc).
#[allow(clippy::print_stderr)]
fn relisted(project: &Project) {
    let mut server = project.plane.another_api_server();
    let admin = std::fs::read_to_string(&project.plane.admin).unwrap();
    let kubeconfig = project.dir.join("second.kubeconfig");
    std::fs::write(
        &kubeconfig,
        admin.replace(&project.plane.server, &server.url()),
    )
    .unwrap();
    let health = format!("--health-probe-bind-address=127.0.0.1:{}", free_port());
    let flags = [health.as_str(), "--metrics-bind-address=0"];
    let mut command = project.command(&project.manager(), &flags);
    command.env("KUBECONFIG", &kubeconfig);
    let manager = project.start(command);

    let guestbooks = |range: std::ops::Range<usize>| -> String {
        range
            .map(|i| format!("apiVersion: webapp.faults.example/v1\nkind: Guestbook\nmetadata: {{name: relisted-{i}, namespace: default}}\nspec: {{foo: x}}\n---\n"))
            .collect()
    };
    let ledgers: String = ["changed", "deleted"]
        .iter()
        .map(|name| format!("apiVersion: webapp.faults.example/v1\nkind: Ledger\nmetadata: {{name: relisted-{name}, namespace: default}}\nspec: {{foo: kept}}\n---\n"))
        .collect();
    let output = project.apply(&format!("{}{ledgers}", guestbooks(0..20)));
    assert!(output.status.success(), "{output:?}");
    let child = |name: &str| {
        project.jsonpath(
            &["-n", "default", &format!("configmap/relisted-{name}")],
            "{.data.foo}",
        )
    };
    let children_whole = || child("changed") == "kept" && child("deleted") == "kept";
    project.wait(
        "the first Guestbooks and the Ledgers' children",
        60,
        || manager.log(),
        || available_relisted(project) == 20 && children_whole(),
    );
    // The reconcile that adds a Ledger's finalizer goes on to apply it: one reconcile each,
    // not a second for the finalizer's own change (nor for the child's or the status').
    let reconciles = |name: &str| {
        let object = format!("/{name}.default");
        let log = manager.log();
        log.lines()
            .filter(|line| line.contains("reconciled") && line.contains(&object))
            .count()
    };
    std::thread::sleep(Duration::from_secs(2));
    for name in ["relisted-changed", "relisted-deleted"] {
        assert_eq!(
            reconciles(name),
            1,
            "the reconciles of {name}:\n{}",
            manager.log()
        );
    }

    manager.signal("STOP");
    server.stop();
    // Made through the shared API server, four writers at once.
    std::thread::scope(|scope| {
        let quarter = RELISTED / 4;
        for part in 0..4 {
            let range = 20 + part * quarter..20 + (part + 1) * quarter;
            let manifest = guestbooks(range);
            scope.spawn(move || {
                let output = project.apply(&manifest);
                assert!(output.status.success(), "{output:?}");
            });
        }
    });
    let patch = r#"{"data": {"foo": "changed while the manager was away"}}"#;
    let changed = project.kubectl(&[
        "patch",
        "-n",
        "default",
        "configmap/relisted-changed",
        "--type=merge",
        "-p",
        patch,
    ]);
    assert!(changed.contains("patched"), "{changed}");
    project.kubectl(&["delete", "-n", "default", "configmap/relisted-deleted"]);
    assert_eq!(child("deleted"), "", "the child was not deleted");
    server.start();
    manager.signal("CONT");
    let back = Instant::now();
    let total = RELISTED + 20;
    // Polled each second: a list of every Guestbook is work for the API server too.
    let whole = || available_relisted(project) == total && children_whole();
    while !whole() {
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "{} of {total} Guestbooks Available 30 s after the manager's return; children: changed {:?}, deleted {:?}\n{}",
            available_relisted(project),
            child("changed"),
            child("deleted"),
            manager.tail(20),
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let took = back.elapsed();
    // The restarted API server counts from zero: each of its lists is a list again.
    let lists = lists(project.plane, "guestbooks", &server.url());
    assert!(
        lists >= 1,
        "the manager's Guestbook watch resumed without a list"
    );
    eprintln!(
        "listed again ({lists} list requests) with {RELISTED} new objects: all {total} reconciled {took:.1?} after the manager's return"
    );
    // The Ledgers' finalizers need the manager.
    let ledgers = ["relisted-changed", "relisted-deleted"]
        .map(|name| format!("ledgers.webapp.faults.example/{name}"));
    let ledgers: Vec<&str> = ledgers.iter().map(String::as_str).collect();
    project.kubectl(&[&["delete", "-n", "default", "--timeout=60s"][..], &ledgers].concat());
    manager.stop_unforbidden();
    drop(server);
    let deleted = project.kubectl(&[
        "delete",
        GUESTBOOKS,
        "--all",
        "-n",
        "default",
        "--wait=false",
    ]);
    assert!(deleted.contains("deleted"), "{deleted}");
}

/// How many `relisted-<i>` Guestbooks are Available.
fn available_relisted(project: &Project) -> usize {
    let list = project.kubectl(&[
        "get",
        GUESTBOOKS,
        "-n",
        "default",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Available\")].status}{\"\\n\"}{end}",
    ]);
    list.lines()
        .filter(|line| line.starts_with("relisted-") && line.ends_with(" True"))
        .count()
}

/// The user's edit of the Ledger's controller: with `FAULTS_STALL=status`, a reconcile stalls
/// once the children are applied, before the status; with `FAULTS_STALL=cleanup`, a cleanup
/// stalls before it ends.
fn stall_ledgers(project: &Project) {
    let controller = project.dir.join("src/controller/ledger.rs");
    let stall = |key: &str, what: &str| {
        format!(
            "    if std::env::var(\"FAULTS_STALL\").as_deref() == Ok(\"{key}\") {{\n        \
             info!(name = %obj.name_any(), \"stalling {what}\");\n        \
             tokio::time::sleep(std::time::Duration::from_secs(600)).await;\n    }}\n"
        )
    };
    let status = "    let (available, reason, message) = if !foreign.is_empty() {\n";
    edit(
        &controller,
        status,
        &format!("{}{status}", stall("status", "before the status")),
    );
    let cleaned = "    info!(name = %obj.name_any(), \"cleaned up\");\n";
    edit(
        &controller,
        cleaned,
        &format!("{}{cleaned}", stall("cleanup", "in the cleanup")),
    );
}

/// The manager SIGKILLed in the middle of a Ledger's reconcile, then of its cleanup; each
/// time started again, it finishes what the dead process began.
#[allow(clippy::print_stderr)]
fn killed(project: &Project) {
    let ledger = "ledgers.webapp.faults.example/killed";
    let start = |stall: Option<&str>| {
        let health = format!("--health-probe-bind-address=127.0.0.1:{}", free_port());
        let flags = [health.as_str(), "--metrics-bind-address=0"];
        let mut command = project.command(&project.manager(), &flags);
        if let Some(stall) = stall {
            command.env("FAULTS_STALL", stall);
        }
        project.start(command)
    };
    let kill = |manager: crate::project::Running, stalled: &str| {
        project.wait(
            &format!("a reconcile stalled {stalled}"),
            60,
            || manager.log(),
            || manager.log().contains(&format!("stalling {stalled}")),
        );
        manager.signal("KILL");
        manager.wait_exit(10);
    };

    // Killed after the child was applied, before the status.
    let manager = start(Some("status"));
    let output = project.apply(
        "apiVersion: webapp.faults.example/v1\nkind: Ledger\nmetadata: {name: killed, namespace: default}\nspec: {foo: a}\n",
    );
    assert!(output.status.success(), "{output:?}");
    kill(manager, "before the status");
    let child = project.jsonpath(
        &["-n", "default", "configmap/killed"],
        "{.metadata.ownerReferences[0].kind} {.data.foo}",
    );
    assert_eq!(child, "Ledger a", "the child the killed manager applied");
    assert_ne!(
        project.condition(ledger, "Available"),
        "True",
        "the status was written before the kill"
    );
    let restarted = Instant::now();
    let manager = start(None);
    project.wait(
        "the Ledger reconciled by the next manager",
        60,
        || {
            format!(
                "{}\n{}",
                project.kubectl(&["get", ledger, "-o", "yaml"]),
                manager.log()
            )
        },
        || project.condition(ledger, "Available") == "True",
    );
    assert_eq!(
        project.condition(ledger, "Degraded"),
        "False",
        "the dead process's child taken for another's"
    );
    eprintln!(
        "killed before the status: the next manager reconciled it {:.1?} after it started",
        restarted.elapsed()
    );
    manager.stop_unforbidden();

    // Killed in the middle of the finalizer's cleanup.
    let manager = start(Some("cleanup"));
    project.kubectl(&["delete", ledger, "-n", "default", "--wait=false"]);
    kill(manager, "in the cleanup");
    let finalizers = project.jsonpath(&["-n", "default", ledger], "{.metadata.finalizers}");
    assert!(
        finalizers.contains("webapp.faults.example/finalizer"),
        "the Ledger's finalizer gone before its cleanup ended: {finalizers:?}"
    );
    let restarted = Instant::now();
    let manager = start(None);
    let gone = || {
        !project
            .kubectl_output(&["get", "-n", "default", ledger])
            .status
            .success()
    };
    project.wait(
        "the Ledger's cleanup finished by the next manager",
        60,
        || manager.log(),
        gone,
    );
    assert!(
        manager.log().contains("cleaned up"),
        "the next manager did not run the cleanup:\n{}",
        manager.log()
    );
    eprintln!(
        "killed in the cleanup: the next manager finished it {:.1?} after it started",
        restarted.elapsed()
    );
    manager.stop_unforbidden();
    // The child goes with its owner (the garbage collector).
    let collected = || {
        !project
            .kubectl_output(&["get", "-n", "default", "configmap/killed"])
            .status
            .success()
    };
    project.wait("the Ledger's child collected", 60, String::new, collected);
}

/// The LISTs of `resource` the API server at `server` served, by its own count.
fn lists(plane: &crate::control_plane::ControlPlane, resource: &str, server: &str) -> u64 {
    let metrics = plane.kubectl(&["--server", server, "get", "--raw", "/metrics"]);
    let metrics = String::from_utf8_lossy(&metrics.stdout).into_owned();
    let resource = format!("resource=\"{resource}\"");
    let counts = metrics.lines().filter(|l| {
        l.starts_with("apiserver_request_total{")
            && l.contains(&resource)
            && l.contains("verb=\"LIST\"")
    });
    counts
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Compacts etcd's history up to its current revision, through its JSON gateway.
fn compact(etcd: &str) {
    let post = |path: &str, body: &str| {
        let output = std::process::Command::new("curl")
            .args([
                "--silent",
                "--fail",
                "-X",
                "POST",
                &format!("{etcd}{path}"),
                "-d",
                body,
            ])
            .output()
            .unwrap();
        assert!(output.status.success(), "{path}: {output:?}");
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    let header = post("/v3/kv/range", r#"{"key": "AA=="}"#);
    let revision = header["header"]["revision"].as_str().unwrap().to_string();
    post(
        "/v3/kv/compaction",
        &format!(r#"{{"revision": "{revision}", "physical": true}}"#),
    );
}

/// The manager under its own identity, in a priority level that rejects what it cannot seat.
#[allow(clippy::print_stderr)]
fn throttled(project: &Project) {
    let (kubeconfig, _) = project.manager_identity("faults-system");
    let output = project.apply(THROTTLING);
    assert!(output.status.success(), "{output:?}");
    let health = format!("--health-probe-bind-address=127.0.0.1:{}", free_port());
    let flags = [health.as_str(), "--metrics-bind-address=0"];
    let mut command = project.command(&project.manager(), &flags);
    command.env("KUBECONFIG", &kubeconfig);
    let objects: String = (0..60)
        .map(|i| format!("apiVersion: webapp.faults.example/v1\nkind: Guestbook\nmetadata: {{name: throttled-{i}, namespace: default}}\nspec: {{foo: x}}\n---\n"))
        .collect();
    let output = project.apply(&objects);
    assert!(output.status.success(), "{output:?}");
    let rejected_before = rejected(project);
    let started = Instant::now();
    let manager = project.start(command);
    let reconciled = || {
        let statuses = project.kubectl(&[
            "get",
            GUESTBOOKS,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Available\")].status}{\"\\n\"}{end}",
        ]);
        statuses
            .lines()
            .filter(|l| l.starts_with("throttled-") && l.ends_with(" True"))
            .count()
    };
    project.wait(
        "every object reconciled while throttled",
        120,
        || format!("{} of 60\n{}", reconciled(), manager.log()),
        || reconciled() == 60,
    );
    let rejected = rejected(project) - rejected_before;
    eprintln!(
        "throttled: 60 objects reconciled in {:.1?}, the API server rejected {rejected} of the manager's requests (429)",
        started.elapsed()
    );
    assert!(
        rejected > 0,
        "the priority level rejected nothing: the test throttled nothing"
    );
    manager.stop_unforbidden();
}

/// The requests the API server rejected in the priority level `faults-throttled` (429s), by
/// its own count.
fn rejected(project: &Project) -> u64 {
    let metrics = project.kubectl(&["get", "--raw", "/metrics"]);
    let counts = metrics.lines().filter(|l| {
        l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
            && l.contains("priority_level=\"faults-throttled\"")
    });
    counts
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A priority level of one share that queues nothing, and the manager's ServiceAccount in it.
const THROTTLING: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: faults-throttled}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: faults-throttled}
spec:
  priorityLevelConfiguration: {name: faults-throttled}
  matchingPrecedence: 100
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount: {name: faults-controller-manager, namespace: faults-system}
    resourceRules:
    - verbs: [\"*\"]
      apiGroups: [\"*\"]
      resources: [\"*\"]
      namespaces: [\"*\"]
      clusterScope: true
    nonResourceRules:
    - verbs: [\"*\"]
      nonResourceURLs: [\"*\"]
";
