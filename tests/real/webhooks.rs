//! Webhooks under `make run WEBHOOK_LOCAL_URL=https://127.0.0.1:9443` on a real API server:
//! it applies the defaults (also to an update of an object of 1.2 MiB), refuses an invalid
//! object with the validator's message, keeps a field the manager's type does not know, and
//! the configurations are gone after Ctrl-C. Meanwhile its webhook server and secure metrics
//! meet bad input and load: malformed, deeply nested and oversized bodies, TLS 1.1, 500 idle
//! connections (closed by the server after its handshake timeout while the API server is
//! still served), 2,000 reviews 64 at once, and 500 scrapes with bogus tokens; the test
//! prints the reviews' rate and p99. The
//! project is under `--domain k8s.io`, whose groups are Kubernetes' own: its CRD installs
//! only with the API-approval annotation.

use std::io::Read as _;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::control_plane::free_port;
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
    project.wait_established("crd/guestbooks.webapp.k8s.io");
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
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut run = project.command(
        "make",
        &["run", &format!("WEBHOOK_LOCAL_URL={WEBHOOK_URL}")],
    );
    run.env("METRICS_BIND_ADDRESS", &metrics);
    let mut manager = project.start(run);
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

    abused(&project, &metrics);
    assert!(
        manager.exited().is_none(),
        "the manager stopped:\n{}",
        manager.log()
    );

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

/// The mutating webhook's path.
const MUTATE: &str = "/mutate-webapp-k8s-io-v1-guestbook";

/// The webhook server and the secure metrics at `metrics` under bad input and load; the
/// webhooks keep answering the API server throughout.
#[allow(clippy::print_stderr)]
fn abused(project: &Project, metrics: &str) {
    let url = format!("{WEBHOOK_URL}{MUTATE}");
    let file = |name: &str, body: &[u8]| {
        let path = project.dir.join(name);
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_string()
    };
    let post = |body: &str| {
        curl(&[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &format!("@{body}"),
            &url,
        ])
    };
    // Bad bodies: refused with a client error, never a 5xx or a dropped connection.
    let malformed = file(
        "malformed.json",
        br#"{"apiVersion": "admission.k8s.io/v1", "kind": "#,
    );
    let nested = file("nested.json", "[".repeat(100_000).as_bytes());
    let oversized = file("oversized.json", &vec![b' '; 8 * 1024 * 1024]);
    for (what, body, expected) in [
        ("a malformed review", &malformed, "400"),
        ("JSON nested 100,000 deep", &nested, "422"),
        ("a body of 8 MiB", &oversized, "413"),
    ] {
        assert_eq!(post(body), expected, "{what}");
    }

    // TLS 1.1 refused by the server with an alert (the client allows it); 1.2 taken.
    let address = &WEBHOOK_URL["https://".len()..];
    let handshake = |version: &str| {
        let output = Command::new("openssl")
            .args(["s_client", "-connect", address])
            .args([version, "-cipher", "DEFAULT:@SECLEVEL=0"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned();
        (output.status.success(), text)
    };
    let (taken, said) = handshake("-tls1_1");
    assert!(
        !taken && said.contains("SSL alert number") && said.contains("Cipher is (NONE)"),
        "TLS 1.1:\n{said}"
    );
    let (taken, said) = handshake("-tls1_2");
    assert!(taken && said.contains("TLSv1.2"), "TLS 1.2:\n{said}");

    // 500 connections that send nothing: the API server's review still answered, and the
    // server closes them after its handshake timeout (10 s).
    let mut idle: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    let opened = Instant::now();
    let output = project.apply(
        "apiVersion: webapp.k8s.io/v1\nkind: Guestbook\nmetadata: {name: crowded, namespace: default}\nspec: {}\n",
    );
    assert!(output.status.success(), "{output:?}");
    let answered = opened.elapsed();
    let defaulted = project.kubectl(&[
        "get",
        "guestbooks.webapp.k8s.io/crowded",
        "-o",
        "jsonpath={.spec.foo}",
    ]);
    assert_eq!(defaulted, "default", "the review among idle connections");
    for stream in &mut idle {
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut byte = [0; 1];
        let read = stream.read(&mut byte);
        assert!(
            match &read {
                Ok(read) => *read == 0,
                Err(err) => err.kind() == std::io::ErrorKind::ConnectionReset,
            },
            "an idle connection kept past the timeout: {read:?} after {:?}",
            opened.elapsed()
        );
    }
    let closed = opened.elapsed();
    drop(idle);

    // Load: 2,000 reviews, 64 at once.
    let review = file(
        "review.json",
        serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "webapp.k8s.io", "version": "v1", "kind": "Guestbook"},
                "resource": {"group": "webapp.k8s.io", "version": "v1", "resource": "guestbooks"},
                "operation": "CREATE",
                "userInfo": {"username": "load"},
                "object": {
                    "apiVersion": "webapp.k8s.io/v1",
                    "kind": "Guestbook",
                    "metadata": {"name": "load", "namespace": "default"},
                    "spec": {},
                },
            }
        })
        .to_string()
        .as_bytes(),
    );
    let urls: String = (0..2000)
        .map(|_| format!("url = \"{url}\"\noutput = \"/dev/null\"\n"))
        .collect();
    let urls = file("reviews.curlrc", urls.as_bytes());
    let started = Instant::now();
    let answers = curl(&[
        "-Z",
        "--parallel-max",
        "64",
        "-w",
        "%{http_code} %{time_total}\n",
        "-H",
        "Content-Type: application/json",
        "--data-binary",
        &format!("@{review}"),
        "-K",
        &urls,
    ]);
    let took = started.elapsed();
    let mut times: Vec<f64> = Vec::new();
    for line in answers.lines() {
        let (code, time) = line.split_once(' ').unwrap();
        assert_eq!(code, "200", "a review under load: {line}");
        times.push(time.parse().unwrap());
    }
    assert_eq!(times.len(), 2000, "answers under load");
    times.sort_by(f64::total_cmp);
    let p99 = times[times.len() * 99 / 100];

    // Scrapes with bogus tokens: each refused, and a reader's still served, having counted
    // every review above.
    let scrapes: String = (0..500)
        .map(|i| {
            format!(
                "url = \"https://{metrics}/metrics\"\noutput = \"/dev/null\"\ninsecure\n\
                 write-out = \"%{{http_code}}\\n\"\nheader = \"Authorization: Bearer bogus-{i}\"\n"
            )
        })
        .collect::<Vec<_>>()
        .join("next\n");
    let scrapes = file("scrapes.curlrc", scrapes.as_bytes());
    // Each scrape an operation of its own (`next`): its header is its only one.
    let codes = curl(&["-Z", "--parallel-max", "64", "-K", &scrapes]);
    assert!(
        codes.lines().count() == 500 && codes.lines().all(|c| c == "401"),
        "scrapes with bogus tokens: {codes}"
    );
    project.kubectl(&["create", "serviceaccount", "abuse-scraper", "-n", "default"]);
    project.kubectl(&[
        "create",
        "clusterrole",
        "fleet-abuse-reader",
        "--verb=get",
        "--non-resource-url=/metrics",
    ]);
    project.kubectl(&[
        "create",
        "clusterrolebinding",
        "fleet-abuse-reader",
        "--clusterrole=fleet-abuse-reader",
        "--serviceaccount=default:abuse-scraper",
    ]);
    let token = project.kubectl(&["create", "token", "abuse-scraper", "-n", "default"]);
    let bearer = format!("Authorization: Bearer {}", token.trim());
    let scrape = format!("https://{metrics}/metrics");
    let mut body = String::new();
    // The binding reaches the authorizer within a moment; a refusal is kept 10 s.
    crate::control_plane::poll(20, || {
        body = curl(&["-H", &bearer, &scrape]);
        body.contains("controller_runtime_webhook_requests_total")
    });
    let counted = body
        .lines()
        .find(|l| {
            l.starts_with("controller_runtime_webhook_requests_total{")
                && l.contains(MUTATE)
                && l.contains("code=\"200\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or_default();
    assert!(counted >= 2000.0, "the reviews counted: {counted}\n{body}");
    project.kubectl(&[
        "delete",
        "clusterrolebinding,clusterrole",
        "fleet-abuse-reader",
    ]);
    project.kubectl(&["delete", "serviceaccount", "abuse-scraper", "-n", "default"]);
    project.kubectl(&["delete", "guestbooks.webapp.k8s.io/crowded"]);
    eprintln!(
        "abused: a review among 500 idle connections answered in {answered:.1?}, which were closed after {closed:.1?}; \
         2,000 reviews, 64 at once, in {took:.1?} ({:.0}/s, p99 {:.0} ms)",
        2000.0 / took.as_secs_f64(),
        p99 * 1000.0
    );
}

/// `curl -sk ARGS`; its output, which must succeed.
fn curl(args: &[&str]) -> String {
    let output = Command::new("curl").arg("-sk").args(args).output().unwrap();
    assert!(
        output.status.success(),
        "curl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
