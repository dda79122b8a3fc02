//! cert-manager, `create webhook`'s default, on the node: cert-manager 1.11.5 built from its
//! Go module (scripts/cert-manager), its images pushed to the node's registry, and one
//! manifest that installs it (its CRDs and its own chart, rendered) standing in for the
//! release's `cert-manager.yaml`. The ship, its webhooks switched to cert-manager (the files
//! `create webhook` writes without `--self-signed`): `make test-e2e` installs cert-manager from
//! that manifest (`CERT_MANAGER_URL`) and passes (and installs nothing when told to skip it);
//! then `make deploy`: the serving Certificate issued, its CA injected into the webhook
//! configurations and the converted CRD, and the API server calling the webhooks through their
//! Service with that CA; `make undeploy`, then cert-manager uninstalled.

use std::fs;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::deploy::{assert_not_restarted, pod_ips};
use crate::project::{Project, cert_manager, helm, turn, unbase64};
use crate::ship::{NAMESPACE, ship, webhooks_answer};

const GROUP: &str = "webapp.node.example";
const DEPLOYMENTS: [&str; 3] = [
    "deployment/cert-manager",
    "deployment/cert-manager-webhook",
    "deployment/cert-manager-cainjector",
];

#[test]
fn cert_manager_serves_the_ships_webhooks_deployed_with_make_deploy() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;

    // cert-manager's images in the node's registry, and one manifest that installs it (its
    // namespace, its CRDs, its chart rendered), as the release's `cert-manager.yaml` does.
    let built = cert_manager(Some("localhost:5000"));
    let version = "v1.11.5";
    let images: Vec<String> = ["", "webhook.", "cainjector."]
        .iter()
        .zip(["controller", "webhook", "cainjector"])
        .map(|(key, command)| {
            format!("{key}image.repository=localhost:5000/cert-manager-{command},{key}image.tag={version}")
        })
        .collect();
    let values = format!("{},startupapicheck.enabled=false", images.join(","));
    let chart = built.join("chart");
    let rendered = project.run(
        &helm(),
        &[
            "template",
            "cert-manager",
            chart.to_str().unwrap(),
            "--namespace",
            "cert-manager",
            "--kube-version",
            "1.37.2",
            "--set",
            &values,
        ],
    );
    let crds = fs::read_to_string(built.join("crds.yaml")).unwrap();
    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: cert-manager}\n";
    let installed = project.dir.join("cert-manager.yaml");
    fs::write(
        &installed,
        format!("{namespace}---\n{crds}\n---\n{rendered}"),
    )
    .unwrap();
    let url = format!("CERT_MANAGER_URL={}", installed.display());

    // The ship with cert-manager's webhook files: what `create webhook` writes without
    // `--self-signed` (a project scaffolded so), over a copy of the ship.
    let copy = Project::init("ship", &["--domain", "node.example"]);
    copy.scaffold_converted_guestbook(&[]);
    let kept: Vec<(String, String)> = [
        "config/default/kustomization.yaml",
        "config/default/manager_webhook_patch.yaml",
    ]
    .iter()
    .map(|file| {
        (
            file.to_string(),
            fs::read_to_string(copy.dir.join(file)).unwrap(),
        )
    })
    .collect();
    let copied = Command::new("cp")
        .args([
            "-a",
            &format!("{}/.", project.dir.display()),
            copy.dir.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(copied.success());
    for (file, text) in &kept {
        fs::write(copy.dir.join(file), text).unwrap();
    }
    fs::remove_dir_all(copy.dir.join("config/webhookcerts")).unwrap();
    // Told to skip it, test-e2e installs nothing (this manifest does not exist).
    let skipped = [
        "setup-cert-manager",
        "E2E_CONTEXT=admin",
        "CERT_MANAGER_INSTALL_SKIP=true",
        "CERT_MANAGER_URL=/nowhere.yaml",
    ];
    ship.make_in(&copy, &skipped);
    // The generated e2e, which installs cert-manager first, as kubebuilder's does.
    let output = ship.make_in(
        &copy,
        &[
            "test-e2e",
            "E2E_CONTEXT=admin",
            "E2E_IMG=localhost:5000/ship:e2e-cert-manager",
            &url,
        ],
    );
    assert!(
        output.contains("every_sample_becomes_available_and_is_cleaned_up ... ok"),
        "make test-e2e:\n{output}"
    );
    for deployment in DEPLOYMENTS {
        let status = [
            "rollout",
            "status",
            "-n",
            "cert-manager",
            deployment,
            "--timeout=300s",
        ];
        project.kubectl(&status);
    }

    ship.make_in(&copy, &["deploy"]);
    ship.rollout();

    let certificate = ["-n", NAMESPACE, "certificate/ship-serving-cert"];
    copy.wait(
        "the serving Certificate issued",
        120,
        || copy.kubectl(&["describe", "-n", NAMESPACE, "certificate"]),
        || {
            copy.jsonpath(
                &certificate,
                "{.status.conditions[?(@.type==\"Ready\")].status}",
            ) == "True"
        },
    );
    let secret = ["-n", NAMESPACE, "secret/webhook-server-cert"];
    let ca = copy.jsonpath(&secret, "{.data.ca\\.crt}");
    copy.wait_ca_injected(&ca, &format!("guestbooks.{GROUP}"));

    // The API server calls the webhooks through their Service, trusting that CA.
    webhooks_answer(&copy, "certified");

    // Renewed as `cmctl renew` does (the Issuing condition), with a new key: the new
    // certificate is injected and served by the same pods, which reload it from their volume.
    let before = copy.jsonpath(&secret, "{.data.tls\\.crt}");
    copy.kubectl(&[
        "patch",
        "-n",
        NAMESPACE,
        "certificate/ship-serving-cert",
        "--type=merge",
        "-p",
        r#"{"spec":{"privateKey":{"rotationPolicy":"Always"}}}"#,
    ]);
    copy.kubectl(&[
        "patch",
        "-n",
        NAMESPACE,
        "certificate/ship-serving-cert",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/status/conditions/-","value":{"type":"Issuing","status":"True","reason":"ManuallyTriggered","message":"renewed by the node test","lastTransitionTime":"2026-01-01T00:00:00Z"}}]"#,
    ]);
    let renewed = Instant::now();
    copy.wait(
        "the certificate renewed",
        120,
        || copy.kubectl(&["describe", "-n", NAMESPACE, "certificate"]),
        || {
            let now = copy.jsonpath(&secret, "{.data.tls\\.crt}");
            !now.is_empty() && now != before
        },
    );
    let issued = copy.jsonpath(&secret, "{.data.tls\\.crt}");
    let fingerprint = fingerprint(&unbase64(&issued));
    let ca = copy.jsonpath(&secret, "{.data.ca\\.crt}");
    copy.wait_ca_injected(&ca, &format!("guestbooks.{GROUP}"));
    let pods = pod_ips(&copy);
    copy.wait(
        "every manager pod serving the renewed certificate",
        240,
        || {
            format!(
                "{pods:?} serve {:?}, issued {fingerprint}",
                pods.iter().map(|(_, ip)| served(ip)).collect::<Vec<_>>()
            )
        },
        || pods.iter().all(|(_, ip)| served(ip) == fingerprint),
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "renewed certificate served by every pod after {:.1} s",
            renewed.elapsed().as_secs_f64()
        );
    }
    assert_not_restarted(&copy);
    for (pod, _) in &pods {
        let log = copy.kubectl(&["logs", "-n", NAMESPACE, pod, "-c", "manager"]);
        assert!(log.contains("certificate reloaded"), "{pod}'s log:\n{log}");
    }
    webhooks_answer(&copy, "renewed");

    ship.make_in(&copy, &["undeploy"]);
    let namespace = copy.kubectl_output(&["get", "namespace", NAMESPACE]);
    assert!(
        !namespace.status.success(),
        "make undeploy left {NAMESPACE}"
    );
    project.kubectl(&[
        "delete",
        "-f",
        installed.to_str().unwrap(),
        "--timeout=120s",
    ]);
}

/// The SHA-256 fingerprint of the PEM certificate `pem`, as openssl prints it.
fn fingerprint(pem: &[u8]) -> String {
    let mut child = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(pem).unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// The fingerprint of the certificate the webhook server at `ip` presents (empty if none).
fn served(ip: &str) -> String {
    let output = Command::new("openssl")
        .args(["s_client", "-connect", &format!("{ip}:9443")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if output.stdout.is_empty() {
        return String::new();
    }
    fingerprint(&output.stdout)
}
