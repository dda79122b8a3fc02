//! For the tests of the webhooks' certificates and registrations: a stand-in API server that
//! keeps objects by path and answers GET, POST (409 if the object exists), PUT, PATCH (the
//! body replaces the object, as a server-side apply of a whole object would; 409 once where a
//! test says another writer came first) and DELETE; and a TLS handshake against a certificate.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

#[derive(Clone, Default)]
pub struct Objects(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    objects: BTreeMap<String, Value>,
    /// Paths whose next PUT answers 409, as if another writer had written first.
    conflicts: BTreeSet<String>,
}

impl Objects {
    /// A client whose requests this stand-in answers. Call it inside a Tokio runtime.
    pub fn client(&self) -> Client {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let objects = self.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                send.send_response(objects.answer(request).await);
            }
        });
        Client::new(service, "default")
    }

    async fn answer(&self, request: Request<Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.unwrap();
        let path = parts.uri.path().to_string();
        let body = || serde_json::from_slice::<Value>(&bytes).unwrap();
        let mut state = self.0.lock().unwrap();
        if parts.method == Method::PUT && state.conflicts.remove(&path) {
            let body = Body::from(serde_json::to_vec(&status(409, "Conflict")).unwrap());
            return Response::builder()
                .status(StatusCode::CONFLICT)
                .body(body)
                .unwrap();
        }
        let objects = &mut state.objects;
        let (status, value) = match parts.method {
            Method::GET => match objects.get(&path) {
                Some(object) => (StatusCode::OK, object.clone()),
                None => (StatusCode::NOT_FOUND, status(404, "NotFound")),
            },
            Method::POST => {
                let object = body();
                let name = object["metadata"]["name"].as_str().unwrap();
                let path = format!("{path}/{name}");
                match objects.contains_key(&path) {
                    true => (StatusCode::CONFLICT, status(409, "AlreadyExists")),
                    false => {
                        objects.insert(path, object.clone());
                        (StatusCode::CREATED, object)
                    }
                }
            }
            Method::PUT | Method::PATCH => {
                let object = body();
                objects.insert(path, object.clone());
                (StatusCode::OK, object)
            }
            Method::DELETE => match objects.remove(&path) {
                Some(object) => (StatusCode::OK, object),
                None => (StatusCode::NOT_FOUND, status(404, "NotFound")),
            },
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                status(405, "MethodNotAllowed"),
            ),
        };
        let body = Body::from(serde_json::to_vec(&value).unwrap());
        Response::builder().status(status).body(body).unwrap()
    }

    pub fn get(&self, path: &str) -> Option<Value> {
        self.0.lock().unwrap().objects.get(path).cloned()
    }

    pub fn insert(&self, path: &str, object: Value) {
        self.0.lock().unwrap().objects.insert(path.into(), object);
    }

    /// The next PUT to `path` answers 409, as if another writer had written first.
    pub fn conflict_once(&self, path: &str) {
        self.0.lock().unwrap().conflicts.insert(path.into());
    }
}

fn status(code: u16, reason: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": reason,
    })
}

/// A TLS handshake with a server serving `tls_cert` and `tls_key` (PEM), by a client that
/// trusts only `ca` and asks for `name`.
pub async fn handshake(tls_cert: &str, tls_key: &str, ca: &str, name: &str) -> Result<(), String> {
    let chain = CertificateDer::pem_slice_iter(tls_cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(tls_key.as_bytes()).unwrap();
    let server = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let client = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let acceptor = TlsAcceptor::from(Arc::new(server));
    let accepting = tokio::spawn(async move { acceptor.accept(server_io).await.map(|_| ()) });
    let name = name.to_string().try_into().unwrap();
    let connected = TlsConnector::from(Arc::new(client))
        .connect(name, client_io)
        .await;
    let accepted = accepting.await.unwrap();
    connected.map(|_| ()).map_err(|e| e.to_string())?;
    accepted.map_err(|e| e.to_string())
}

/// A directory `webhook-<name>-<pid>` in the temporary directory holding `tls.crt` and
/// `tls.key` of a certificate for `localhost` made here, and that certificate.
pub fn serving_certificate(
    name: &str,
) -> (std::path::PathBuf, rcgen::CertifiedKey<rcgen::KeyPair>) {
    let dir = std::env::temp_dir().join(format!("webhook-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    std::fs::write(dir.join("tls.crt"), made.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
    (dir, made)
}

/// A loopback port free a moment ago.
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// A defaulter that labels a ConfigMap `defaulted: yes`.
pub fn label(cm: &mut k8s_openapi::api::core::v1::ConfigMap) {
    let labels = cm.metadata.labels.get_or_insert_default();
    labels.entry("defaulted".into()).or_insert("yes".into());
}

/// The AdmissionReview of the creation of the ConfigMap `object`, as the API server sends it.
pub fn admission_review(object: Value) -> String {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": object,
        }
    })
    .to_string()
}
