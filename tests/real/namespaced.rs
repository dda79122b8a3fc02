//! A project made `edit --namespaced`: its manager, run with exactly the RBAC config/default
//! deploys (a Role in its namespace for what the controller uses, no ClusterRole for it) and
//! `WATCH_NAMESPACE`, reconciles the objects of its namespace and the Deployments they own,
//! leaves another namespace's objects alone, and is never forbidden. Run without
//! `WATCH_NAMESPACE`, its lists are forbidden, and SIGTERM still stops it at once, exit 0.

use std::fs;
use std::time::{Duration, Instant};

use crate::project::{Project, turn};

const NAMESPACE: &str = "solo-system";

#[test]
fn a_namespaced_manager_reconciles_only_its_namespace_with_a_role() {
    let _turn = turn();
    let project = Project::init("solo", &["--domain", "solo.example"]);
    // A Guestbook that owns a Deployment, and the manager made to watch its own namespace.
    let guestbook = "create api --group webapp --version v1 --kind Guestbook --owns apps/v1/Deployment --resource --controller";
    project.scaffold(&guestbook.split(' ').collect::<Vec<_>>());
    project.scaffold(&["edit", "--namespaced"]);
    // `make manifests` writes the role from the code (crdgen), a Role now.
    project.run("make", &["manifests", "install"]);
    let role = fs::read_to_string(project.dir.join("config/rbac/role.yaml")).unwrap();
    assert!(role.contains("\nkind: Role\n"), "{role}");

    // The manager's identity and rights, exactly as config/default deploys them: the role
    // that grants its controller's verbs is a Role bound in its namespace.
    let default = project.kubectl(&["kustomize", "config/default"]);
    let documents: Vec<&str> = default.split("\n---\n").collect();
    let manager_role = documents
        .iter()
        .find(|doc| doc.contains("name: solo-manager-role"))
        .expect("the manager's role");
    assert!(manager_role.contains("kind: Role\n"), "{manager_role}");
    assert!(
        manager_role.contains(&format!("namespace: {NAMESPACE}")),
        "{manager_role}"
    );
    let (kubeconfig, _) = project.manager_identity(NAMESPACE);

    project.run("cargo", &["build", "--bin", "solo"]);
    // As config/manager runs it: WATCH_NAMESPACE from its own namespace.
    let manager_yaml = fs::read_to_string(project.dir.join("config/manager/manager.yaml")).unwrap();
    assert!(
        manager_yaml.contains("- name: WATCH_NAMESPACE"),
        "{manager_yaml}"
    );
    let mut command = project.command(&project.manager(), &["--leader-elect"]);
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAMESPACE", NAMESPACE)
        .env("WATCH_NAMESPACE", NAMESPACE);
    let manager = project.start(command);
    let log = || manager.log();

    let objects = format!(
        "apiVersion: webapp.solo.example/v1
kind: Guestbook
metadata: {{name: inside, namespace: {NAMESPACE}}}
spec: {{}}
---
apiVersion: webapp.solo.example/v1
kind: Guestbook
metadata: {{name: outside, namespace: default}}
spec: {{}}
"
    );
    let output = project.apply(&objects);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let inside = "guestbooks.webapp.solo.example/inside";
    // Its Deployment, owned, in the same namespace; no pod starts here, so it progresses.
    project.wait("the Deployment of `inside`", 60, log, || {
        !project
            .jsonpath(
                &["deployment", "inside", "-n", NAMESPACE],
                "{.metadata.ownerReferences}",
            )
            .is_empty()
    });
    project.wait("`inside` Progressing", 60, log, || {
        project.jsonpath(
            &[inside, "-n", NAMESPACE],
            "{.status.conditions[?(@.type==\"Progressing\")].status}",
        ) == "True"
    });
    // The other namespace's object: never reconciled, nothing made for it.
    let outside = "guestbooks.webapp.solo.example/outside";
    assert_eq!(
        project.jsonpath(&[outside, "-n", "default"], "{.status}"),
        "",
        "a manager watching {NAMESPACE} reconciled an object of `default`"
    );
    let deployment = project.kubectl_output(&["get", "deployment", "outside", "-n", "default"]);
    assert!(
        !deployment.status.success(),
        "a Deployment was made in `default`"
    );

    manager.stop_unforbidden();

    // Without WATCH_NAMESPACE it watches every namespace, which its Role forbids: its caches
    // never sync, and SIGTERM still stops it at once and cleanly, not after the 8 s grace.
    let mut command = project.command(&project.manager(), &["--leader-elect"]);
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAMESPACE", NAMESPACE);
    let manager = project.start(command);
    project.wait(
        "its lists forbidden",
        60,
        || manager.log(),
        || manager.log().contains("forbidden"),
    );
    let started = Instant::now();
    manager.signal("TERM");
    let (status, log) = manager.wait_exit(20);
    let took = started.elapsed();
    assert!(status.success(), "exit {status} after {took:?}:\n{log}");
    assert!(
        took < Duration::from_secs(4),
        "SIGTERM took {took:?}:\n{log}"
    );
    assert!(log.contains("stopped before its first list ended"), "{log}");

    project.kubectl(&[
        "delete",
        "guestbooks.webapp.solo.example",
        "--all",
        "-A",
        "--wait=false",
    ]);
    project.run("make", &["uninstall"]);
}
