//! cert-manager, `create webhook`'s default (no `--self-signed`), on a real API server:
//! config/default applied whole beside cert-manager's controller and cainjector (built from
//! its Go module by scripts/cert-manager, run as processes with the administrator's
//! kubeconfig). The serving Certificate is issued for the webhook Service's names; its CA is
//! injected into both webhook configurations and the converted CRD; the manager, given the
//! Secret's files as the kubelet mounts them, serves its webhooks over TLS that the injected
//! CA verifies under the Service's name.
//!
//! No node runs pods here: the Deployment's pods never start, and the API server, which would
//! dial the Service, calls no webhook.

use std::fs;

use crate::control_plane::free_port;
use crate::project::{Project, cert_manager, turn, unbase64};

const NAMESPACE: &str = "certs-system";
const SERVICE: &str = "certs-webhook-service.certs-system.svc";

#[test]
fn cert_manager_issues_the_serving_certificate_and_injects_its_ca() {
    let _turn = turn();
    let cert_manager = cert_manager(None);
    let project = Project::init("certs", &["--domain", "certs.example"]);
    project.scaffold_converted_guestbook(&[]);
    project.run("make", &["manifests"]);
    project.run("cargo", &["build", "--bin", "certs"]);

    let crds = cert_manager.join("crds.yaml");
    project.kubectl(&["apply", "--server-side", "-f", crds.to_str().unwrap()]);
    for crd in [
        "crd/certificates.cert-manager.io",
        "crd/issuers.cert-manager.io",
    ] {
        project.wait_established(crd);
    }
    project.apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: cert-manager}\n");
    let admin = format!("--kubeconfig={}", project.plane.admin.display());
    let controller = cert_manager.join("controller");
    let metrics = format!("--metrics-listen-address=127.0.0.1:{}", free_port());
    let _controller = project.start(project.command(
        controller.to_str().unwrap(),
        &[
            &admin,
            "--leader-elect=false",
            "--cluster-resource-namespace=cert-manager",
            &metrics,
        ],
    ));
    let cainjector = cert_manager.join("cainjector");
    let _cainjector = project.start(project.command(
        cainjector.to_str().unwrap(),
        &[&admin, "--leader-elect=false"],
    ));

    // config/default, whole, as `make deploy` applies it.
    let yaml = project.kubectl(&["kustomize", "config/default"]);
    assert!(yaml.contains("kind: Certificate\n"), "{yaml}");
    let default = project.dir.join("default.yaml");
    fs::write(&default, &yaml).unwrap();
    project.apply(&yaml);
    let certificate = ["-n", NAMESPACE, "certificate/certs-serving-cert"];
    project.wait(
        "the serving Certificate issued",
        90,
        || project.kubectl(&["describe", "-n", NAMESPACE, "certificate"]),
        || {
            project.jsonpath(
                &certificate,
                "{.status.conditions[?(@.type==\"Ready\")].status}",
            ) == "True"
        },
    );
    let names = project.jsonpath(&certificate, "{.spec.dnsNames}");
    assert!(names.contains(&format!("\"{SERVICE}\"")), "{names}");

    let secret = ["-n", NAMESPACE, "secret/webhook-server-cert"];
    let ca = project.jsonpath(&secret, "{.data.ca\\.crt}");
    assert!(!ca.is_empty(), "no CA in the Secret");
    project.wait_ca_injected(&ca, "guestbooks.webapp.certs.example");

    // The manager with the Secret's files, as the kubelet mounts them: its TLS verifies with
    // the injected CA under the Service's name, and with no other CA.
    let certs = project.dir.join("serving-certs");
    fs::create_dir_all(&certs).unwrap();
    for file in ["tls.crt", "tls.key"] {
        let field = format!("{{.data.{}}}", file.replace('.', "\\."));
        let data = project.jsonpath(&secret, &field);
        fs::write(certs.join(file), unbase64(&data)).unwrap();
    }
    fs::write(project.dir.join("injected-ca.crt"), unbase64(&ca)).unwrap();
    let port = free_port();
    let flags = [
        format!("--webhook-cert-path={}", certs.display()),
        format!("--webhook-bind-address=127.0.0.1:{port}"),
        format!("--health-probe-bind-address=127.0.0.1:{}", free_port()),
        "--metrics-bind-address=0".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let manager = project.start(project.command(&project.manager(), &flags));
    let mutating = "mutatingwebhookconfiguration/certs-mutating-webhook-configuration";
    let path = project.jsonpath(&[mutating], "{.webhooks[0].clientConfig.service.path}");
    // kubectl verifies as the API server does (Go's crypto/x509): cert-manager's self-signed
    // certificate has an empty subject, which curl's OpenSSL refuses as an issuer.
    fs::write(project.dir.join("review.json"), "{}").unwrap();
    fs::write(
        project.dir.join("nobody.kubeconfig"),
        "apiVersion: v1\nkind: Config\n",
    )
    .unwrap();
    let kubectl = project.plane.kubectl_binary();
    let call = |ca: &str| {
        let server = format!("--server=https://127.0.0.1:{port}");
        let ca = format!("--certificate-authority={ca}");
        let name = format!("--tls-server-name={SERVICE}");
        let args = [
            "--kubeconfig=nobody.kubeconfig",
            "--token=unused",
            &server,
            &ca,
            &name,
            "create",
            "--raw",
            &path,
            "-f",
            "review.json",
        ];
        let output = project.output(kubectl.to_str().unwrap(), &args);
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    // The webhook server's answer, after the handshake: kubectl's raw POST has no JSON
    // content type.
    let refused = "Error from server (UnsupportedMediaType)";
    project.wait(
        "the webhooks served over TLS the injected CA verifies",
        60,
        || format!("{}\n{}", call("injected-ca.crt"), manager.log()),
        || call("injected-ca.crt").contains(refused),
    );
    // Any other CA fails the handshake.
    let other = call("/etc/ssl/certs/ca-certificates.crt");
    assert!(
        other.contains("x509: certificate signed by unknown authority"),
        "{other}"
    );
    drop(manager);
    let default = default.to_str().unwrap();
    project.kubectl(&[
        "delete",
        "-f",
        default,
        "--ignore-not-found",
        "--timeout=60s",
    ]);
}
