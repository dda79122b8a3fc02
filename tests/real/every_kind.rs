//! One project holding every kind of controller the tool makes (own kind, `--owns`,
//! deploy-image, built-in, another project's, adopted), its manager running with exactly the
//! generated ServiceAccount's permissions (a token of that account) and leader election, on a
//! real API server: no request is forbidden; owned Deployments carry a controller reference,
//! follow the spec, come back to it when someone else changes them, and go with their owner
//! (the garbage collector); a condition another field manager writes stays that manager's;
//! /metrics answers over HTTPS only the clients the API server authorizes; SIGTERM releases
//! the lease.

use std::fs;
use std::process::Command;

use crate::control_plane::{free_port, poll};
use crate::project::{Project, turn};

const CERTIFICATE_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crds/certificate.yaml"
);
const BACKUP_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crds/backup.yaml"
);
const NAMESPACE: &str = "every-system";

#[test]
fn every_kind_of_controller_runs_with_the_generated_rbac() {
    let _turn = turn();
    let project = Project::init("every", &["--domain", "every.example"]);
    for args in [
        &[
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--resource",
            "--controller",
        ][..],
        &[
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Site",
            "--owns",
            "apps/v1/Deployment",
            "--resource",
            "--controller",
        ],
        &[
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--image",
            "memcached:1.6.26-alpine3.19",
            "--image-container-port",
            "11211",
            "--plugins",
            "deploy-image/v1-alpha",
            "--resource",
            "--controller",
        ],
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--controller",
        ],
        &[
            "--group",
            "cert-manager.io",
            "--version",
            "v1",
            "--kind",
            "Certificate",
            "--controller",
            "--resource=false",
            "--external-api-crd",
            CERTIFICATE_CRD,
        ],
        &["--from-crd", BACKUP_CRD, "--controller"],
    ] {
        project.scaffold(&[&["create", "api"][..], args].concat());
    }
    project.run("make", &["manifests", "install"]);
    // The API server authorizes: a user without rights cannot read the kind (so a manager
    // whose requests are never forbidden has the rights it needs).
    let nobody = project
        .plane
        .kubectl_as(&project.plane.nobody)
        .args(["get", "guestbooks.webapp.every.example"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&nobody.stderr);
    assert!(
        !nobody.status.success() && said.contains("forbidden"),
        "{said}"
    );
    project.kubectl(&["apply", "--server-side", "-f", CERTIFICATE_CRD]);
    project.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=30s",
    ]);

    // The manager's identity and rights, exactly as config/default deploys them.
    let (kubeconfig, token) = project.manager_identity(NAMESPACE);

    // A metric of the project's own, registered as docs/commands.md shows (a user's edit).
    let lib = project.dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let wired = "Manager::with_state(env!(\"CARGO_PKG_NAME\"), options, ())";
    assert!(text.contains(wired), "{text}");
    let text = text.replace(wired, &format!("{wired}\n        .metrics(register)")) + OWN_METRIC;
    std::fs::write(&lib, text).unwrap();
    project.run("cargo", &["build", "--bin", "every"]);
    let metrics = format!("127.0.0.1:{}", free_port());
    let metrics_flag = format!("--metrics-bind-address={metrics}");
    let mut command = project.command(&project.manager(), &["--leader-elect", &metrics_flag]);
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAMESPACE", NAMESPACE);
    let manager = project.start(command);
    let log = || manager.log();

    project.kubectl(&["apply", "-k", "config/samples"]);
    let objects = "apiVersion: ops.example.org/v1
kind: Backup
metadata: {name: nightly, namespace: default}
spec: {schedule: '0 3 * * *', target: {kind: Deployment, name: memcached-sample}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: site, namespace: default}
spec: {secretName: site-tls, issuerRef: {name: ca}}
";
    let output = project.apply(objects);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    project.wait("guestbook-sample Available", 60, log, || {
        project.condition(
            "guestbooks.webapp.every.example/guestbook-sample",
            "Available",
        ) == "True"
    });

    // Owned Deployments: a controller reference to their owner.
    let owner_of = |deployment: &str| {
        project.jsonpath(&["deployment", deployment], "{.metadata.ownerReferences}")
    };
    for (deployment, kind) in [("site-sample", "Site"), ("memcached-sample", "Memcached")] {
        project.wait(&format!("the {kind}'s Deployment"), 60, log, || {
            !owner_of(deployment).is_empty()
        });
        let refs: serde_json::Value = serde_json::from_str(&owner_of(deployment)).unwrap();
        assert_eq!(refs[0]["kind"], kind, "{refs}");
        assert_eq!(refs[0]["controller"], true, "{refs}");
        // The Deployments' pods never start here (no kubelet): their owners wait, Progressing.
        project.wait(&format!("the {kind} Progressing"), 60, log, || {
            project.condition(
                &format!("{}/{deployment}", kind.to_lowercase()),
                "Progressing",
            ) == "True"
        });
    }

    // A spec change reaches the Deployment.
    project.kubectl(&[
        "patch",
        "memcacheds.cache.every.example/memcached-sample",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":2}}"#,
    ]);
    project.wait("the Deployment follows the spec", 60, log, || {
        project.jsonpath(&["deployment/memcached-sample"], "{.spec.replicas}") == "2"
    });
    // A change to the Deployment by someone else reconciles its owner, which applies the
    // spec's replicas again: only the manager's own writes are not heard back.
    project.kubectl(&["scale", "deployment/memcached-sample", "--replicas=5"]);
    project.wait(
        "the Deployment back at the spec's replicas",
        60,
        log,
        || project.jsonpath(&["deployment/memcached-sample"], "{.spec.replicas}") == "2",
    );

    // A condition of another field manager: kept by the controller's status apply, and that
    // manager's alone, so it can take it back.
    let audited = |status: &str| {
        format!(
            "apiVersion: webapp.every.example/v1\nkind: Guestbook\nmetadata: {{name: guestbook-sample, namespace: default}}\nstatus:\n  conditions:{status}\n"
        )
    };
    let apply_status = |manifest: String| {
        let file = project.dir.join("audited.yaml");
        fs::write(&file, manifest).unwrap();
        project.kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=auditor",
            "--subresource=status",
            "-f",
            file.to_str().unwrap(),
        ]);
    };
    // The reconciles of the sample so far, by the manager's log.
    let reconciles = || {
        log()
            .lines()
            .filter(|line| line.contains("reconciled") && line.contains("/guestbook-sample."))
            .count()
    };
    let before = reconciles();
    apply_status(audited(
        "\n  - {type: Audited, status: \"True\", reason: Checked, message: ok, lastTransitionTime: \"2026-11-24T00:00:00Z\"}",
    ));
    // A spec change (`foo` set) observed by the controller at `generation`.
    let changed = |foo: &str, generation: &str| {
        let sample = "guestbooks.webapp.every.example/guestbook-sample";
        let patch = format!(r#"{{"spec":{{"foo":"{foo}"}}}}"#);
        project.kubectl(&["patch", sample, "--type=merge", "-p", &patch]);
        let what = format!("the controller observes generation {generation}");
        project.wait(&what, 60, log, || {
            project.jsonpath(&[sample], "{.status.observedGeneration}") == generation
        });
    };
    // A spec change makes the controller apply its status again.
    changed("changed", "2");
    // Status changes alone, the auditor's and the controller's own, reconcile nothing: the
    // spec change made one reconcile. A second spec change is the fence: its reconcile comes
    // after any that the earlier status events made (the watch delivers them in order).
    changed("fenced", "3");
    assert_eq!(
        reconciles() - before,
        2,
        "status changes alone reconciled the Guestbook:\n{}",
        log()
    );
    assert_eq!(
        project.condition(
            "guestbooks.webapp.every.example/guestbook-sample",
            "Audited"
        ),
        "True",
        "the controller's apply dropped another manager's condition"
    );
    apply_status(audited(" []"));
    assert_eq!(
        project.condition(
            "guestbooks.webapp.every.example/guestbook-sample",
            "Audited"
        ),
        "",
        "the controller co-owns another manager's condition:\n{}",
        project.kubectl(&[
            "get",
            "guestbooks.webapp.every.example/guestbook-sample",
            "-o",
            "yaml",
            "--show-managed-fields"
        ])
    );
    assert_eq!(
        project.condition(
            "guestbooks.webapp.every.example/guestbook-sample",
            "Available"
        ),
        "True"
    );

    // A child deleted by someone else: its owner's controller hears of it (the owned watch,
    // selected by the manager's label, not the 5-minute resync) and applies it again.
    let uid = |deployment: &str| project.jsonpath(&["deployment", deployment], "{.metadata.uid}");
    let first = uid("site-sample");
    project.kubectl(&["delete", "deployment/site-sample", "--timeout=30s"]);
    project.wait("the Site's Deployment applied again", 30, log, || {
        let again = uid("site-sample");
        !again.is_empty() && again != first
    });
    // Its owner reference blocks the owner's deletion: a foreground deletion of the Site ends
    // only once the Deployment is gone.
    let refs: serde_json::Value = serde_json::from_str(&owner_of("site-sample")).unwrap();
    assert_eq!(refs[0]["blockOwnerDeletion"], true, "{refs}");
    project.kubectl(&[
        "delete",
        "site/site-sample",
        "--cascade=foreground",
        "--timeout=60s",
    ]);
    let child = project.kubectl_output(&["get", "deployment/site-sample", "-o", "name"]);
    let deleting = project.jsonpath(&["deployment/site-sample"], "{.metadata.deletionTimestamp}");
    assert!(
        !child.status.success() || !deleting.is_empty(),
        "the Site was deleted before its Deployment"
    );

    // The owner deleted, the garbage collector deletes its Deployment.
    project.kubectl(&[
        "delete",
        "memcacheds.cache.every.example/memcached-sample",
        "--timeout=30s",
    ]);
    project.wait(
        "the garbage collector deletes the Deployment",
        60,
        log,
        || {
            !project
                .kubectl_output(&["get", "deployment/memcached-sample"])
                .status
                .success()
        },
    );

    // /metrics, over HTTPS (the certificate the manager made), only for a token whose user
    // may get /metrics: not without one, not the manager's own, but a scraper's bound to the
    // generated `metrics-reader` ClusterRole.
    let scrape = |token: Option<&str>| {
        let mut curl = Command::new("curl");
        curl.args(["-sk", "-o", "-", "-w", "\n%{http_code}"]);
        if let Some(token) = token {
            curl.args(["-H", &format!("Authorization: Bearer {token}")]);
        }
        let output = curl.arg(format!("https://{metrics}/metrics")).output();
        let output = output.expect("curl runs");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or_default();
        (code.to_string(), body.to_string())
    };
    assert_eq!(scrape(None).0, "401", "{}", log());
    assert_eq!(scrape(Some(token.trim())).0, "403", "{}", log());
    project.kubectl(&["create", "serviceaccount", "scraper", "-n", "default"]);
    project.kubectl(&[
        "create",
        "clusterrolebinding",
        "every-scraper",
        "--clusterrole=every-metrics-reader",
        "--serviceaccount=default:scraper",
    ]);
    let scraper = project.kubectl(&["create", "token", "scraper", "-n", "default"]);
    // The scraper's binding reaches the authorizer within a moment; a refusal is kept 10 s.
    let mut scraped = (String::new(), String::new());
    poll(20, || {
        scraped = scrape(Some(scraper.trim()));
        scraped.0 != "403"
    });
    assert_eq!(scraped.0, "200", "{}", log());
    let counted = "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"success\"}";
    assert!(scraped.1.contains(counted), "{}", scraped.1);
    assert!(
        scraped.1.contains("\nevery_widgets_total 0\n"),
        "{}",
        scraped.1
    );
    project.kubectl(&["delete", "clusterrolebinding", "every-scraper"]);

    // SIGTERM: the manager stops and gives the lease up.
    let log = manager.stop_unforbidden();
    let holder = project.kubectl(&[
        "get",
        "lease",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.items[*].spec.holderIdentity}",
    ]);
    assert_eq!(holder.trim(), "", "the lease was not released:\n{log}");
    project.run("make", &["uninstall"]);

    crate::conversion::integration_test(&project);
}

/// The project's own metric, and the function that registers it (`Manager::metrics`).
const OWN_METRIC: &str = "
/// Widgets seen.
pub static WIDGETS: std::sync::LazyLock<
    kube_scaffold_runtime::metrics::prometheus_client::metrics::counter::Counter,
> = std::sync::LazyLock::new(Default::default);

fn register(registry: &mut kube_scaffold_runtime::metrics::prometheus_client::registry::Registry) {
    registry.register(\"every_widgets\", \"Widgets seen\", WIDGETS.clone());
}
";
