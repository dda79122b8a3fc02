//! Webhooks under `make run WEBHOOK_LOCAL_URL=https://127.0.0.1:9443` on a real API server:
//! it applies the defaults (also to an update of an object of 1.2 MiB), refuses an invalid
//! object with the validator's message, keeps a field the manager's type does not know, and
//! the configurations are gone after Ctrl-C. The
//! project is under `--domain k8s.io`, whose groups are Kubernetes' own: its CRD installs
//! only with the API-approval annotation.

use crate::project::{Project, turn};

const WEBHOOK_URL: &str = "https://127.0.0.1:9443";

#[test]
fn webhooks_under_make_run_default_refuse_and_keep_unknown_fields() {
    let _turn = turn();
    let project = Project::init("fleet", &["--domain", "k8s.io"]);
    let guestbook = [
        "--group",
        "webapp",
        "--version",
        "v1",
        "--kind",
        "Guestbook",
    ];
    project.scaffold(&[&["create", "api"][..], &guestbook].concat());
    project.scaffold(
        &[
            &["create", "webhook"][..],
            &guestbook,
            &["--defaulting", "--programmatic-validation"],
        ]
        .concat(),
    );

    // A protected group: `create api` writes the annotation, `make manifests` the same bytes,
    // and the API server takes the CRD.
    let file = project
        .dir
        .join("config/crd/bases/webapp.k8s.io_guestbooks.yaml");
    let scaffolded = std::fs::read_to_string(&file).unwrap();
    project.run("make", &["manifests", "install"]);
    let crd = std::fs::read_to_string(&file).unwrap();
    assert!(crd.contains("api-approved.kubernetes.io:"), "{crd}");
    assert_eq!(
        scaffolded, crd,
        "make manifests rewrote the CRD create api wrote"
    );
    project.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/guestbooks.webapp.k8s.io",
        "--timeout=30s",
    ]);
    let annotations = project.kubectl(&[
        "get",
        "crd/guestbooks.webapp.k8s.io",
        "-o",
        "jsonpath={.metadata.annotations}",
    ]);
    assert!(
        annotations.contains("unapproved, experimental-only"),
        "{annotations}"
    );

    // The CRD gains a field this manager's type does not have (a newer CRD applied before
    // the manager is upgraded).
    project.kubectl(&[
        "patch", "crd", "guestbooks.webapp.k8s.io", "--type=json", "-p",
        r#"[{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/newField", "value": {"type": "string"}}]"#,
    ]);

    project.build_for_make_run();
    let manager = project.start_run(&[&format!("WEBHOOK_LOCAL_URL={WEBHOOK_URL}")]);
    project.wait_local_webhooks(&manager);
    let configurations = |kind: &str| project.kubectl(&["get", kind, "-o", "name"]);
    assert!(configurations("mutatingwebhookconfigurations").contains("fleet-local-"));
    assert!(configurations("validatingwebhookconfigurations").contains("fleet-local-"));

    // Defaults applied, the unknown field kept.
    let output = project.apply(
        "apiVersion: webapp.k8s.io/v1\nkind: Guestbook\nmetadata: {name: defaulted, namespace: default}\nspec: {newField: kept}\n",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let spec = project.kubectl(&[
        "get",
        "guestbooks.webapp.k8s.io/defaulted",
        "-o",
        "jsonpath={.spec}",
    ]);
    let spec: serde_json::Value = serde_json::from_str(&spec).unwrap();
    assert_eq!(
        spec["foo"],
        "default",
        "the defaulter did not run: {spec}\n{}",
        manager.log()
    );
    assert_eq!(
        spec["newField"], "kept",
        "the defaulter removed a field it does not know: {spec}"
    );
    // An update keeps it too.
    project.kubectl(&["label", "guestbooks.webapp.k8s.io/defaulted", "touched=yes"]);
    let spec = project.kubectl(&[
        "get",
        "guestbooks.webapp.k8s.io/defaulted",
        "-o",
        "jsonpath={.spec.newField}",
    ]);
    assert_eq!(spec, "kept");

    // An object of 1.2 MiB: its UPDATE review carries it twice (object and oldObject).
    let large = format!(
        "apiVersion: webapp.k8s.io/v1\nkind: Guestbook\nmetadata: {{name: large, namespace: default}}\nspec: {{newField: {}}}\n",
        "x".repeat(1_200_000)
    );
    let output = project.apply(&large);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    project.kubectl(&[
        "patch",
        "guestbooks.webapp.k8s.io/large",
        "--type=merge",
        "-p",
        r#"{"spec":{"foo":null}}"#,
    ]);
    let foo = project.kubectl(&[
        "get",
        "guestbooks.webapp.k8s.io/large",
        "-o",
        "jsonpath={.spec.foo}",
    ]);
    assert_eq!(
        foo,
        "default",
        "the update of a large object was not defaulted:\n{}",
        manager.log()
    );
    project.kubectl(&["delete", "guestbooks.webapp.k8s.io/large"]);

    // The validator refuses, with its message.
    let output = project.apply(
        "apiVersion: webapp.k8s.io/v1\nkind: Guestbook\nmetadata: {name: refused, namespace: default}\nspec: {foo: \"\"}\n",
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "an invalid Guestbook was created");
    assert!(said.contains("spec.foo must not be empty"), "{said}");

    // Ctrl-C: the configurations go with the manager.
    let (_, log) = manager.interrupt(20);
    for kind in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ] {
        assert!(
            !configurations(kind).contains("fleet-local-"),
            "{kind} left after Ctrl-C:\n{log}"
        );
    }
    project.run("make", &["uninstall"]);
}
