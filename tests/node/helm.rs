//! The helm plugin's chart on the node: `make build-installer` of the image, `edit --plugins
//! helm/v2-alpha`, `helm install` into a namespace helm makes, labelled `restricted` as
//! NOTES.txt says; the manager's two pods Running there, the sample Available through them and
//! their webhooks; `helm uninstall` removes them.

use crate::control_plane::poll;
use crate::deploy::manager_uids;
use crate::project::{helm, turn};
use crate::ship::ship;

const NAMESPACE: &str = "ship-helm";

#[test]
fn the_helm_chart_runs_the_manager_in_a_restricted_namespace() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    ship.make(&["build-installer"]);
    project.scaffold(&["edit", "--plugins", "helm/v2-alpha"]);
    let helm = helm();
    let helm = helm.as_str();
    let install = [
        "install",
        "ship",
        "dist/chart",
        "--namespace",
        NAMESPACE,
        "--create-namespace",
    ];
    let installed = project.run(helm, &install);
    let label = format!(
        "kubectl label namespace {NAMESPACE} pod-security.kubernetes.io/enforce=restricted"
    );
    assert!(installed.contains(&label), "NOTES.txt:\n{installed}");
    project.kubectl(&label.split(' ').skip(1).collect::<Vec<_>>());
    // The pods are made after the label: the ReplicaSet's, restarted under it.
    let deployment = "deployment/ship-controller-manager";
    project.kubectl(&["rollout", "restart", "-n", NAMESPACE, deployment]);
    project.kubectl(&[
        "rollout",
        "status",
        "-n",
        NAMESPACE,
        deployment,
        "--timeout=300s",
    ]);
    let ready = project.jsonpath(&["-n", NAMESPACE, deployment], "{.status.readyReplicas}");
    assert_eq!(ready, "2", "the chart's two replicas");
    assert!(
        poll(60, || manager_uids().len() == 2),
        "the managers' processes: {:?}",
        manager_uids()
    );

    let sample = "guestbooks.v1.webapp.node.example/guestbook-sample";
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
        || project.kubectl(&["logs", "-n", NAMESPACE, deployment, "-c", "manager"]),
        || project.condition(sample, "Available") == "True",
    );
    project.kubectl(&["delete", "-n", "default", sample, "--timeout=60s"]);

    project.run(
        helm,
        &["uninstall", "ship", "--namespace", NAMESPACE, "--wait"],
    );
    assert!(
        project
            .jsonpath(
                &["deployments", "-n", NAMESPACE],
                "{.items[*].metadata.name}"
            )
            .is_empty(),
        "helm uninstall left the manager"
    );
    // The CRDs are kept (crd.keep); the next scenario's `make deploy` owns them again.
    let crds = project.kubectl(&["get", "crd", "-o", "name"]);
    let ours: Vec<&str> = crds
        .lines()
        .filter(|c| c.contains("node.example"))
        .collect();
    project.kubectl(&[&["delete", "--timeout=60s"][..], &ours].concat());
    project.kubectl(&["delete", "namespace", NAMESPACE, "--timeout=120s"]);
}
