//! The helm plugin's chart, installed on the real API server by the real helm (built by
//! scripts/helm): every object it renders is accepted in a namespace helm makes, which NOTES.txt
//! says how to label for the `restricted` Pod Security Standard; an upgrade of the release with
//! another value changes the manager's Deployment, whose new pod that standard admits; uninstalling removes the
//! operator but keeps the CRD (`crd.keep`) and the objects of its kind, and without
//! `crd.keep` deletes the CRD too.

use crate::project::{Project, helm, turn};

const NAMESPACE: &str = "charted-system";
const CRD: &str = "crd/guestbooks.webapp.charted.example";

#[test]
fn the_chart_installs_upgrades_and_uninstalls_keeping_the_crd() {
    let _turn = turn();
    let project = Project::init("charted", &["--domain", "charted.example"]);
    let guestbook =
        "create api --group webapp --version v1 --kind Guestbook --resource --controller";
    project.scaffold(&guestbook.split(' ').collect::<Vec<_>>());
    // The installer, from the manifests create api wrote as `make manifests` does.
    let img = "IMG=registry.example.com/charted:v0.1.0";
    project.run("make", &["-o", "manifests", "build-installer", img]);
    project.scaffold(&["edit", "--plugins", "helm/v2-alpha"]);

    let helm = helm();
    let install = [
        "install",
        "charted",
        "dist/chart",
        "--namespace",
        NAMESPACE,
        "--create-namespace",
    ];
    let installed = project.run(&helm, &install);
    // NOTES.txt, rendered: how to enforce the Pod Security Standard config/manager's
    // Namespace enforces, which a namespace helm makes does not.
    let label = format!(
        "kubectl label namespace {NAMESPACE} pod-security.kubernetes.io/enforce=restricted"
    );
    assert!(installed.contains(&label), "{installed}");
    let args: Vec<&str> = label.split(' ').skip(1).collect();
    project.kubectl(&args);
    project.wait_established(CRD);
    let deployment = ["deployment", "charted-controller-manager", "-n", NAMESPACE];
    let image = project.jsonpath(&deployment, "{.spec.template.spec.containers[0].image}");
    assert_eq!(image, "registry.example.com/charted:v0.1.0");
    let managed = project.jsonpath(
        &deployment,
        "{.metadata.labels.app\\.kubernetes\\.io/managed-by}",
    );
    assert_eq!(managed, "Helm");
    for object in [
        "serviceaccount/charted-controller-manager",
        "role/charted-leader-election-role",
        "rolebinding/charted-leader-election-rolebinding",
        "service/charted-controller-manager-metrics-service",
    ] {
        project.kubectl(&["get", object, "-n", NAMESPACE]);
    }
    for object in [
        "clusterrole/charted-manager-role",
        "clusterrolebinding/charted-manager-rolebinding",
        "clusterrole/charted-guestbook-editor-role",
    ] {
        project.kubectl(&["get", object]);
    }
    let subject = project.jsonpath(
        &["clusterrolebinding", "charted-manager-rolebinding"],
        "{.subjects[0].namespace}",
    );
    assert_eq!(
        subject, NAMESPACE,
        "the binding names the release's namespace"
    );
    project.kubectl(&["apply", "-k", "config/samples"]);

    // Another value: the release's Deployment follows it.
    let upgrade = [
        "upgrade",
        "charted",
        "dist/chart",
        "--namespace",
        NAMESPACE,
        "--set",
        "manager.replicas=2",
    ];
    project.run(&helm, &upgrade);
    assert_eq!(project.jsonpath(&deployment, "{.spec.replicas}"), "2");
    // The second replica's pod is admitted under `restricted` (the ReplicaSet controller makes
    // it; nothing runs it here).
    let pods = || {
        let listed = project.kubectl(&["get", "pods", "-n", NAMESPACE, "-o", "name"]);
        listed.lines().count()
    };
    let admitted = crate::control_plane::poll(60, || pods() == 2);
    let events = project.kubectl(&["get", "events", "-n", NAMESPACE]);
    assert!(admitted, "{} pods; events:\n{events}", pods());

    // Uninstalled: the operator goes; the CRD and the Guestbook stay.
    project.run(&helm, &["uninstall", "charted", "--namespace", NAMESPACE]);
    let gone = project.kubectl_output(&["get", "deployment", "-n", NAMESPACE, "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&gone.stdout).trim(), "");
    let role = project.kubectl_output(&["get", "clusterrole", "charted-manager-role"]);
    assert!(
        !role.status.success(),
        "the ClusterRole outlived the release"
    );
    project.kubectl(&["get", CRD]);
    let kept = project.kubectl(&[
        "get",
        "guestbooks.webapp.charted.example",
        "-A",
        "-o",
        "name",
    ]);
    assert!(kept.contains("guestbook"), "{kept}");

    // Installed again (it takes the kept CRD back) without `crd.keep`: uninstalling deletes
    // the CRD too.
    let again = [&install[..], &["--set", "crd.keep=false"]].concat();
    project.run(&helm, &again);
    project.run(
        &helm,
        &["uninstall", "charted", "--namespace", NAMESPACE, "--wait"],
    );
    let crd = crate::control_plane::poll(60, || {
        !project.kubectl_output(&["get", CRD]).status.success()
    });
    assert!(crd, "the CRD outlived a release without crd.keep");
    project.kubectl(&["delete", "namespace", NAMESPACE, "--wait=false"]);
}
