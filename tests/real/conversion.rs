//! Conversion between a kind's versions on a real API server: v1 and v2 served, v2 stored.
//! Under `make run WEBHOOK_LOCAL_URL=...` the manager points the CRD's conversion at itself and
//! puts it back when it stops; an object created as v1 reads back as v2 and as v1. Then the
//! manager restarts, as a pod does, with objects stored and its conversion reached through a
//! stand-in for its Service that, like a Service, sends traffic only while the manager is
//! ready: it must become ready (a readiness that waits for caches which need `/convert` to
//! sync never does). Last, the project's own integration test (`make test-integration`,
//! envtest) passes on these binaries and on the oldest Kubernetes tested (1.34).

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::control_plane::{Serving, free_port};
use crate::project::{Project, base64, turn};

const CRD: &str = "crd/guestbooks.webapp.convert.example";

#[test]
fn conversions_run_under_make_run_and_a_restarted_manager_becomes_ready() {
    let _turn = turn();
    let project = Project::init("convert", &["--domain", "convert.example"]);
    project.scaffold_converted_guestbook(&[]);
    project.run("make", &["manifests", "install"]);
    project.wait_established(CRD);
    project.run("cargo", &["build", "--bin", &project.name]);
    let client_config = |field: &str| {
        project.kubectl(&[
            "get",
            CRD,
            "-o",
            &format!("jsonpath={{.spec.conversion.webhook.clientConfig.{field}}}"),
        ])
    };
    assert_eq!(client_config("service.name"), "webhook-service");

    // make run: the CRD's conversion points at the local manager.
    let manager = project.start_run(&["WEBHOOK_LOCAL_URL=https://127.0.0.1:9443"]);
    project.wait_local_webhooks(&manager);
    assert_eq!(client_config("url"), "https://127.0.0.1:9443/convert");
    assert_eq!(client_config("service"), "");
    let output = project.apply(
        "apiVersion: webapp.convert.example/v1\nkind: Guestbook\nmetadata: {name: first, namespace: default}\nspec: {foo: bar}\n",
    );
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        manager.log()
    );
    for version in ["v2", "v1"] {
        let read = project.kubectl(&[
            "get",
            &format!("guestbooks.{version}.webapp.convert.example/first"),
            "-o",
            "jsonpath={.apiVersion} {.spec.foo}",
        ]);
        assert_eq!(read, format!("webapp.convert.example/{version} bar"));
    }
    let available =
        || project.condition("guestbooks.v1.webapp.convert.example/first", "Available") == "True";
    project.wait(
        "the v1 controller reconciles the stored v2 object",
        60,
        || manager.log(),
        available,
    );
    // Ctrl-C: the conversion is put back as `make install` left it.
    let (_, log) = manager.interrupt(20);
    assert_eq!(client_config("service.name"), "webhook-service", "{log}");
    assert_eq!(client_config("url"), "");

    // A restart as in a pod: the conversion reached through a stand-in Service that forwards
    // only while the manager is ready, the manager's own certificate.
    let certs = tempfile::tempdir().unwrap();
    let serving = Serving::for_names(&["127.0.0.1"]);
    std::fs::write(certs.path().join("tls.crt"), &serving.cert).unwrap();
    std::fs::write(certs.path().join("tls.key"), &serving.key).unwrap();
    let service = ReadyOnlyService::start(9443, 8081);
    let ca_bundle = base64(&serving.ca);
    let patch = format!(
        r#"{{"spec":{{"conversion":{{"strategy":"Webhook","webhook":{{"conversionReviewVersions":["v1"],"clientConfig":{{"service":null,"url":"https://127.0.0.1:{}/convert","caBundle":"{ca_bundle}"}}}}}}}}}}"#,
        service.port
    );
    project.kubectl(&["patch", CRD, "--type=merge", "-p", &patch]);
    let command = project.command(
        &project.manager(),
        &["--webhook-cert-path", certs.path().to_str().unwrap()],
    );
    let manager = project.start(command);
    project.wait(
        "the restarted manager ready, its objects stored in v2",
        60,
        || manager.log(),
        || readyz(8081) == Some(200),
    );
    project.wait(
        "v1 read through the conversion",
        30,
        || manager.log(),
        available,
    );

    project.kubectl(&[
        "delete",
        "guestbooks.v1.webapp.convert.example/first",
        "--timeout=30s",
    ]);
    manager.signal("TERM");
    let (status, log) = manager.wait_exit(30);
    assert!(status.success(), "{log}");
    drop(service);
    project.run("make", &["uninstall"]);

    // The project's own integration test (envtest for Rust) on the same binaries, then on
    // the oldest Kubernetes tested.
    integration_test(&project);
    let oldest = crate::control_plane::oldest_assets();
    let version = std::process::Command::new(oldest.join("kube-apiserver"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(version.starts_with("Kubernetes v1.34."), "{version}");
    let assets = format!("KUBEBUILDER_ASSETS={}", oldest.display());
    let out = project.run("make", &["test-integration", &assets]);
    assert!(
        out.contains("test every_sample_is_reconciled_and_every_webhook_answers ... ok"),
        "on {version}: {out}"
    );
}

/// `make test-integration` in `project`: refused with `error:` and `help:` without
/// `KUBEBUILDER_ASSETS`, passing with the control plane's binaries.
pub fn integration_test(project: &Project) {
    let output = project
        .command("make", &["test-integration"])
        .env_remove("KUBEBUILDER_ASSETS")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "test-integration ran without assets"
    );
    assert!(
        said.contains("error: no etcd and kube-apiserver in KUBEBUILDER_ASSETS"),
        "{said}"
    );
    assert!(said.contains("help: with Go:"), "{said}");
    let assets = format!("KUBEBUILDER_ASSETS={}", project.plane.assets.display());
    let out = project.run("make", &["test-integration", &assets]);
    assert!(
        out.contains("test every_sample_is_reconciled_and_every_webhook_answers ... ok"),
        "{out}"
    );
}

/// The status code of `GET /readyz` on the health port, if it answers.
fn readyz(port: u16) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_whitespace().nth(1)?.parse().ok()
}

/// A stand-in for a Service in front of one pod: connections on `port` reach the manager's
/// webhook port only while its `/readyz` answers 200 (a Service's endpoints are its ready
/// pods); others are closed at once.
struct ReadyOnlyService {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl ReadyOnlyService {
    fn start(target: u16, health: u16) -> Self {
        let port = free_port();
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                if readyz(health) != Some(200) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        ReadyOnlyService { port, stop }
    }
}

/// Copies `from` to `to` on a thread of its own until `from` ends.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
}

impl Drop for ReadyOnlyService {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
