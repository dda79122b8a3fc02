//! The manager's own webhook certificates (`create webhook --self-signed`) on a real API
//! server, the manager running as config/default deploys it (its ServiceAccount's token, its
//! flags and environment): the first replica makes the Secret and injects its CA into both
//! webhook configurations and the converted CRD; a second replica uses the same Secret; a
//! Secret of that name it did not write (cert-manager's, left after switching modes) is
//! replaced, where it used to stop the manager at every start; a CA bundle someone removes is
//! set again within seconds.
//!
//! The configurations and the CRD name the webhook Service, which the API server would dial
//! by a name this machine's DNS sends outside: here they name a loopback URL instead, and no
//! object of the kind is created, so the API server calls nothing.

use std::fs;
use std::path::Path;

use crate::control_plane::free_port;
use crate::project::{Project, Running, base64, turn};

const NAMESPACE: &str = "signed-system";
const SECRET: &str = "secret/webhook-server-cert";
const KEPT: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

#[test]
fn self_signed_certificates_are_made_shared_and_take_over_a_foreign_secret() {
    let _turn = turn();
    let project = Project::init("signed", &["--domain", "signed.example"]);
    project.scaffold_converted_guestbook(&["--self-signed"]);
    project.run("make", &["manifests"]);
    project.run("cargo", &["build", "--bin", "signed"]);

    // config/default, its Services replaced by a loopback URL.
    let yaml = project.kubectl(&["kustomize", "config/default"]);
    fs::write(project.dir.join("default.yaml"), yaml).unwrap();
    let json = project.kubectl(&[
        "create",
        "--dry-run=client",
        "-o",
        "json",
        "-f",
        "default.yaml",
    ]);
    let items: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&json)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let deployment = items.iter().find(|i| i["kind"] == "Deployment").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mut args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    args.retain(|a| !a.starts_with("--webhook-cert-path") && !a.contains("bind-address"));
    let service = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "WEBHOOK_SERVICE")
        .unwrap()["value"]
        .as_str()
        .unwrap()
        .to_string();
    let mut kept: Vec<serde_json::Value> = items
        .iter()
        .filter(|i| KEPT.iter().any(|k| i["kind"] == *k))
        .cloned()
        .collect();
    for item in &mut kept {
        let configs: Vec<&mut serde_json::Value> = match item["kind"].as_str().unwrap() {
            "CustomResourceDefinition" => {
                vec![&mut item["spec"]["conversion"]["webhook"]["clientConfig"]]
            }
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => item["webhooks"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .map(|w| &mut w["clientConfig"])
                .collect(),
            _ => continue,
        };
        for config in configs {
            let path = config["service"]["path"].as_str().unwrap().to_string();
            *config = serde_json::json!({"url": format!("https://127.0.0.1:1{path}")});
        }
    }
    let file = project.dir.join("installed.json");
    fs::write(
        &file,
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": kept}).to_string(),
    )
    .unwrap();
    project.kubectl(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
    project.wait_established("crd/guestbooks.webapp.signed.example");
    let token = project.kubectl(&[
        "create",
        "token",
        "signed-controller-manager",
        "-n",
        NAMESPACE,
    ]);
    let kubeconfig = project
        .plane
        .kubeconfig_for("signed-controller-manager", token.trim());

    let start = |identity: &str, certs: &Path| -> Running {
        let mut all = args.clone();
        for (flag, value) in [
            ("--webhook-cert-path", certs.to_str().unwrap().to_string()),
            ("--health-probe-bind-address", format!(":{}", free_port())),
            ("--metrics-bind-address", format!(":{}", free_port())),
            ("--webhook-bind-address", format!(":{}", free_port())),
        ] {
            all.push(format!("{flag}={value}"));
        }
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut command = project.command(&project.manager(), &all);
        command
            .env("KUBECONFIG", &kubeconfig)
            .env("POD_NAME", identity)
            .env("POD_NAMESPACE", NAMESPACE)
            .env("WEBHOOK_SERVICE", &service);
        project.start(command)
    };
    let secret = |field: &str| project.jsonpath(&["-n", NAMESPACE, SECRET], field);
    let bundles = || {
        let mut bundles = Vec::new();
        for (object, path) in [
            (
                "mutatingwebhookconfiguration/signed-mutating-webhook-configuration",
                "{.webhooks[*].clientConfig.caBundle}",
            ),
            (
                "validatingwebhookconfiguration/signed-validating-webhook-configuration",
                "{.webhooks[*].clientConfig.caBundle}",
            ),
            (
                "crd/guestbooks.webapp.signed.example",
                "{.spec.conversion.webhook.clientConfig.caBundle}",
            ),
        ] {
            bundles.push(project.kubectl(&["get", object, "-o", &format!("jsonpath={path}")]));
        }
        bundles
    };
    let injected = || {
        let ca = secret("{.data.ca\\.crt}");
        !ca.is_empty() && bundles().iter().all(|b| *b == ca)
    };

    // The first replica makes the Secret and injects its CA everywhere.
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let first = start("first", dirs[0].path());
    project.wait(
        "the CA injected into both configurations and the CRD",
        60,
        || first.log(),
        injected,
    );
    let version = secret("{.metadata.resourceVersion}");
    // The second uses the same Secret: it serves the same certificate and writes nothing.
    let second = start("second", dirs[1].path());
    project.wait(
        "the second replica serves the Secret's certificate",
        60,
        || second.log(),
        || {
            let served = fs::read(dirs[1].path().join("tls.crt")).unwrap_or_default();
            !served.is_empty() && base64(served) == secret("{.data.tls\\.crt}")
        },
    );
    assert_eq!(
        secret("{.metadata.resourceVersion}"),
        version,
        "the second replica rewrote the Secret"
    );
    // A CA bundle someone removed (a GitOps tool applying the manifests as written) is set
    // again within seconds: the replicas watch the configurations and the CRD, where they
    // used to look again every ten minutes.
    for (object, path) in [
        (
            "validatingwebhookconfiguration/signed-validating-webhook-configuration",
            "/webhooks/0/clientConfig/caBundle",
        ),
        (
            "crd/guestbooks.webapp.signed.example",
            "/spec/conversion/webhook/clientConfig/caBundle",
        ),
    ] {
        let removal = format!(r#"[{{"op": "remove", "path": "{path}"}}]"#);
        project.kubectl(&["patch", object, "--type=json", "-p", &removal]);
        assert!(!injected(), "{object} kept its CA bundle");
        project.wait(
            &format!("the CA injected again into {object}"),
            15,
            || first.log(),
            injected,
        );
    }
    for manager in [first, second] {
        manager.signal("TERM");
        let (status, log) = manager.wait_exit(20);
        assert!(status.success(), "{log}");
        let forbidden: Vec<&str> = log
            .lines()
            .filter(|l| l.to_lowercase().contains("forbidden"))
            .collect();
        assert!(
            forbidden.is_empty(),
            "requests the generated RBAC does not allow:\n{}",
            forbidden.join("\n")
        );
    }

    // A Secret of that name the manager did not write: replaced, and the manager runs on.
    project.kubectl(&["delete", "-n", NAMESPACE, SECRET]);
    project.kubectl(&[
        "create",
        "secret",
        "generic",
        "webhook-server-cert",
        "-n",
        NAMESPACE,
        "--type=kubernetes.io/tls",
        "--from-literal=tls.crt=cert-managers",
        "--from-literal=tls.key=key",
        "--from-literal=ca.crt=ca",
    ]);
    let mut again = start("again", dirs[0].path());
    project.wait(
        "the foreign Secret replaced and its CA injected",
        60,
        || again.log(),
        || secret("{.data.ca\\.crt}") != base64("ca") && injected(),
    );
    // Past the point where it used to stop: serving its webhooks, its controllers started.
    project.wait(
        "the manager serving its webhooks and running its controllers",
        60,
        || again.log(),
        || {
            let log = again.log();
            log.contains("serving webhooks") && log.contains("starting controllers")
        },
    );
    assert!(
        again.exited().is_none(),
        "the manager stopped:\n{}",
        again.log()
    );
    again.signal("TERM");
    let (status, log) = again.wait_exit(20);
    assert!(status.success(), "{log}");
    project.kubectl(&["delete", "-f", file.to_str().unwrap(), "--wait=false"]);
}
