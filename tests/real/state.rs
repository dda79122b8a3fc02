//! The user's own state and errors on a real API server, as docs/project-layout.md shows
//! them: the project's `State` made an HTTP client of an outside service and given to the
//! manager (`Manager::with_state`), two edits of `src/lib.rs` and one of the unit tests'
//! context (`mocked()`, whose tests build); the controller, unchanged but for its work, reads
//! it as a typed field (`ctx.state`: the project's `Context` carries `State`) and returns the
//! service's refusal as its own error type (`Error::other`), which the runtime logs as
//! `kind="other"` and retries with backoff until the service answers. A manager given no value
//! of the state does not compile.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::project::{Project, edit, plain, turn};

/// `Billing`, its error, and the manager given one: appended to and edited into `src/lib.rs`.
const BILLING: &str = r#"
/// The billing service the Invoice controller asks before an invoice is available: an HTTP
/// client (hyper's, which kube's client uses too) and the service's address, `BILLING_URL`.
/// Cheap to clone: the clones share the client's connections.
#[derive(Clone)]
pub struct Billing {
    client: Client<HttpConnector, Empty<Bytes>>,
    base: String,
}

/// What can go wrong with the billing service: the operator's own error type.
#[derive(Debug)]
pub enum BillingError {
    /// The service answered with this status.
    Refused(u16),
    /// The service could not be asked.
    Unreachable(String),
}

impl std::fmt::Display for BillingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BillingError::Refused(status) => write!(f, "billing refused the invoice: HTTP {status}"),
            BillingError::Unreachable(why) => write!(f, "billing is unreachable: {why}"),
        }
    }
}

impl std::error::Error for BillingError {}

impl Billing {
    /// A client of the service at `base`.
    pub fn new(base: impl Into<String>) -> Self {
        let client = Client::builder(TokioExecutor::new()).build_http();
        Self { client, base: base.into() }
    }

    /// Asks the service to approve the invoice `name`; its answer's body.
    pub async fn approve(&self, name: &str) -> Result<String, BillingError> {
        let uri = format!("{}/approve/{name}", self.base)
            .parse()
            .map_err(|err| BillingError::Unreachable(format!("{err}")))?;
        let response = self
            .client
            .get(uri)
            .await
            .map_err(|err| BillingError::Unreachable(err.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(BillingError::Refused(status.as_u16()));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|err| BillingError::Unreachable(err.to_string()))?;
        Ok(String::from_utf8_lossy(&body.to_bytes()).into_owned())
    }
}
"#;

/// The user's lines in the Invoice controller's `apply`: ask the service, fail with its
/// error, report its answer.
const APPLY: &str = r#"    let approval = ctx.state.approve(&obj.name_any()).await.map_err(Error::other)?;
"#;

/// The manager of `src/lib.rs` as generated.
const GENERATED: &str = r#"pub fn manager(options: Options) -> Manager<State> {
    Manager::with_state(env!("CARGO_PKG_NAME"), options, ())
"#;

/// The manager of `src/lib.rs`, given the billing client.
const MANAGER: &str = r#"pub fn manager(options: Options) -> Manager<State> {
    let billing = Billing::new(std::env::var("BILLING_URL").unwrap_or_default());
    Manager::with_state(env!("CARGO_PKG_NAME"), options, billing)
"#;

#[test]
fn a_client_in_the_context_and_the_users_own_error_drive_the_reconcile() {
    let _turn = turn();
    let project = Project::init("billing", &["--domain", "mock.com"]);
    let kind = ["--group", "shop", "--version", "v1", "--kind", "Invoice"];
    project.scaffold(&[&["create", "api"][..], &kind].concat());
    edit_into_a_billing_operator(&project.dir);

    // The compiler checks the state: a manager given none is refused.
    let lib = project.dir.join("src/lib.rs");
    let typed = fs::read_to_string(&lib).unwrap();
    fs::write(&lib, typed.replace(MANAGER, GENERATED)).unwrap();
    let check = project.output("cargo", &["check", "--lib"]);
    let said = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "built without the state:\n{said}");
    assert!(
        said.contains("mismatched types")
            && said.contains("Context<Billing>")
            && said.contains("expected `Manager<Billing>`"),
        "{said}"
    );
    fs::write(&lib, typed).unwrap();
    // The unit tests build with the state in their context.
    project.run("cargo", &["test", "--lib", "--no-run"]);

    let service = Service::start();
    service.refuse.store(true, Ordering::SeqCst);
    project.run("make", &["manifests", "install"]);
    project.wait_established("crd/invoices.shop.mock.com");
    project.build_for_make_run();
    let mut run = project.command("make", &["run"]);
    run.env("BILLING_URL", &service.url);
    let manager = project.start(run);

    // The service refuses: the reconcile fails with the user's error, logged as such, and is
    // retried (the service is asked again).
    project.kubectl(&["apply", "-k", "config/samples"]);
    let object = "invoices.shop.mock.com/invoice-sample";
    project.wait(
        "the refused invoice asked again",
        60,
        || {
            format!(
                "asked: {:?}\n{}",
                service.asked.lock().unwrap(),
                manager.log()
            )
        },
        || service.asked("invoice-sample") >= 2,
    );
    let log = plain(&manager.log());
    assert!(
        log.contains("error=billing refused the invoice: HTTP 503 kind=\"other\""),
        "the user's error is not logged as an error of its own:\n{log}"
    );
    assert_ne!(project.condition(object, "Available"), "True");

    // The service answers: the next retry goes through, with what the service said.
    service.refuse.store(false, Ordering::SeqCst);
    project.wait(
        "the invoice Available once billing answers",
        60,
        || manager.log(),
        || project.condition(object, "Available") == "True",
    );
    let message = project.jsonpath(
        &[object],
        "{.status.conditions[?(@.type==\"Available\")].message}",
    );
    assert_eq!(message, "approved invoice-sample");
    let (_, log) = manager.interrupt(20);
    assert!(!log.contains("panicked"), "the manager panicked:\n{log}");
    project.kubectl(&["delete", "-k", "config/samples", "--wait=false"]);
    project.kubectl(&["delete", "crd", "invoices.shop.mock.com", "--wait=false"]);
}

/// The user's edits: the client's crates, `Billing` given to the manager, and the controller
/// asking it in `apply`.
fn edit_into_a_billing_operator(dir: &Path) {
    let edit = |file: &str, from: &str, to: &str| edit(&dir.join(file), from, to);
    edit(
        "Cargo.toml",
        "[dependencies]\n",
        "[dependencies]\nbytes = \"1\"\nhttp-body-util = \"0.1\"\nhyper-util = { version = \"0.1\", features = [\"client-legacy\", \"http1\", \"tokio\"] }\n",
    );
    edit(
        "src/lib.rs",
        "use kube_scaffold_runtime::manager::{Manager, Options};\n",
        "use bytes::Bytes;\nuse http_body_util::{BodyExt, Empty};\nuse hyper_util::client::legacy::Client;\nuse hyper_util::client::legacy::connect::HttpConnector;\nuse hyper_util::rt::TokioExecutor;\nuse kube_scaffold_runtime::manager::{Manager, Options};\n",
    );
    // The state: its type and its value. Every controller's context carries it.
    edit(
        "src/lib.rs",
        "pub type State = ();\n",
        "pub type State = Billing;\n",
    );
    edit("src/lib.rs", GENERATED, MANAGER);
    let lib = dir.join("src/lib.rs");
    let text = fs::read_to_string(&lib).unwrap();
    fs::write(&lib, format!("{text}{BILLING}")).unwrap();
    // The controllers' unit tests get one too.
    edit(
        "src/controller/mod.rs",
        "ctx.with_state(())",
        "ctx.with_state(crate::Billing::new(\"http://127.0.0.1:1\"))",
    );
    let controller = "src/controller/invoice.rs";
    edit(
        controller,
        "    // report what you observed through the conditions below.\n",
        &format!("    // report what you observed through the conditions below.\n{APPLY}"),
    );
    edit(
        controller,
        "    let message = format!(\"The {} is reconciled\", Object::kind(&()));\n",
        "    let message = approval;\n",
    );
}

/// A billing service on loopback: answers `/approve/<name>` with `approved <name>`, or 503
/// while `refuse` holds; counts the requests for each name.
struct Service {
    url: String,
    refuse: Arc<AtomicBool>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Service {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let refuse = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (refusing, log) = (refuse.clone(), asked.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                // The request line, then its headers up to the blank line (read whole: a
                // socket closed with unread bytes resets the connection).
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    continue;
                }
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let path = request.split_whitespace().nth(1).unwrap_or_default();
                let name = path
                    .strip_prefix("/approve/")
                    .unwrap_or_default()
                    .to_string();
                log.lock().unwrap().push(name.clone());
                let (status, body) = match refusing.load(Ordering::SeqCst) {
                    true => ("503 Service Unavailable", String::new()),
                    false => ("200 OK", format!("approved {name}")),
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Service { url, refuse, asked }
    }

    /// How many times the invoice `name` was asked for.
    fn asked(&self, name: &str) -> usize {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .filter(|n| *n == name)
            .count()
    }
}
