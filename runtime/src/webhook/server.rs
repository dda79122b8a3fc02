//! The HTTPS server of the webhooks (feature `webhooks`): one route per hook and `/convert`,
//! over TLS with the certificate in `--webhook-cert-path`, read again when its files change.
//!
//! Hardened as controller-runtime's (`server::tls`): reviews up to 7 MiB; handshake and
//! header timeouts; a pause after a failed `accept`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use kube::core::conversion::ConversionReview;
use tokio_util::sync::CancellationToken;

use super::Hook;
use super::conversion::{self, Conversion};
use crate::metrics::Metrics;
use crate::server::tls::{self, Certificate, HANDSHAKE_TIMEOUT};
use crate::server::{self, BindAddress};

/// The largest review the server reads, as controller-runtime's: an UPDATE review holds the
/// object twice (axum's default of 2 MiB refused those of objects over 1 MiB), a
/// ConversionReview many objects.
const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;

/// Serves `hooks` and `conversions` over TLS on `address` until `shutdown`, with the
/// certificate in `cert_dir`, over HTTP/1.1 (and HTTP/2 with `http2`), counting requests in
/// `metrics`; nothing when there are none or the address is `0` (then no certificate is
/// needed). Fails at once if the address is taken or the certificate cannot be read.
pub fn serve(
    address: BindAddress,
    cert_dir: &Path,
    http2: bool,
    webhooks: (Vec<Hook>, Vec<Conversion>),
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    serve_with(
        address,
        cert_dir,
        http2,
        webhooks,
        metrics,
        shutdown,
        HANDSHAKE_TIMEOUT,
    )
}

/// `serve`, giving clients `handshake_timeout` to finish the handshake and send headers.
fn serve_with(
    address: BindAddress,
    cert_dir: &Path,
    http2: bool,
    (hooks, conversions): (Vec<Hook>, Vec<Conversion>),
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    handshake_timeout: Duration,
) -> anyhow::Result<()> {
    if hooks.is_empty() && conversions.is_empty() {
        return Ok(());
    }
    let Some(listener) = server::listen(address)? else {
        return Ok(());
    };
    let certificate = Certificate::watched(cert_dir, "--webhook-cert-path", shutdown.clone())?;
    let app = router(hooks, conversions, metrics);
    tracing::info!(%address, "serving webhooks");
    tls::serve(
        listener,
        certificate,
        app,
        http2,
        shutdown,
        handshake_timeout,
    );
    Ok(())
}

/// One route per hook, each answering the AdmissionReviews posted to its path, and
/// `/convert` for the ConversionReviews of every kind with conversions; each request counted
/// in `metrics` under its path (controller-runtime's `webhook` label).
pub fn router(hooks: Vec<Hook>, conversions: Vec<Conversion>, metrics: Arc<Metrics>) -> Router {
    let mut router = Router::new();
    for hook in hooks {
        let path = hook.path.clone();
        let answer = |State(hook): State<Arc<Hook>>,
                      Json(review): Json<AdmissionReview<DynamicObject>>| async move {
            Json(hook.review(review))
        };
        router = router.route(&path, post(answer).with_state(Arc::new(hook)));
    }
    if !conversions.is_empty() {
        let answer = |State(conversions): State<Arc<Vec<Conversion>>>,
                      Json(review): Json<ConversionReview>| async move {
            Json(conversion::review(&conversions, review))
        };
        let state = Arc::new(conversions);
        router = router.route(conversion::PATH, post(answer).with_state(state));
    }
    // A route layer: only the hooks' paths are counted, not whatever path a client tries.
    let counted = middleware::from_fn_with_state(metrics, counted);
    router
        .layer(DefaultBodyLimit::max(MAX_REVIEW_BYTES))
        .route_layer(counted)
}

/// Counts a request to a hook while it is served, then its status code and latency.
async fn counted(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let webhook = request.uri().path().to_string();
    let _in_flight = metrics.webhook_started(&webhook);
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let code = response.status().as_u16();
    metrics.webhook_answered(&webhook, code, started.elapsed());
    response
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio_rustls::TlsConnector;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};

    use super::super::fake::{admission_review as review, free_port, label, serving_certificate};
    use super::*;

    /// The manager's webhook server, over TLS with a certificate made here: a review posted to
    /// the hook's path is answered with the JSON patch of the defaults.
    #[tokio::test]
    async fn the_server_answers_reviews_over_tls() {
        let (dir, made) = serving_certificate("test");
        let port = free_port();
        let address = format!("127.0.0.1:{port}").parse().unwrap();
        let shutdown = CancellationToken::new();
        let hooks = vec![Hook::defaulting::<ConfigMap>(label)];
        let metrics = Arc::new(Metrics::default());
        let webhooks = (hooks, Vec::new());
        serve(
            address,
            &dir,
            false,
            webhooks,
            metrics.clone(),
            shutdown.clone(),
        )
        .unwrap();

        let mut roots = RootCertStore::empty();
        roots.add(made.cert.der().clone()).unwrap();
        let client = ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let name = "localhost".try_into().unwrap();
        let connector = TlsConnector::from(Arc::new(client));
        let mut tls = connector.connect(name, tcp).await.unwrap();
        let body = review(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "test", "namespace": "default"},
        }));
        let request = format!(
            "POST /mutate--v1-configmap HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tls.read_to_string(&mut answer).await.unwrap();
        shutdown.cancel();
        std::fs::remove_dir_all(&dir).unwrap();

        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        let json = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
        let review: serde_json::Value = serde_json::from_str(json).unwrap();
        let response = &review["response"];
        assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response["allowed"], true);
        assert_eq!(response["patchType"], "JSONPatch");
        // kube writes the patch's bytes as a JSON array, which the API server reads as bytes.
        let bytes: Vec<u8> = serde_json::from_value(response["patch"].clone()).unwrap();
        let patch: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let expected = serde_json::json!([
            {"op": "add", "path": "/metadata/labels", "value": {"defaulted": "yes"}}
        ]);
        assert_eq!(patch, expected);
        let text = metrics.encode();
        for line in [
            "controller_runtime_webhook_requests_total{webhook=\"/mutate--v1-configmap\",code=\"200\"} 1",
            "controller_runtime_webhook_requests_in_flight{webhook=\"/mutate--v1-configmap\"} 0",
            "controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate--v1-configmap\"} 1",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
    }

    /// HTTP/2 is negotiated only with `--enable-http2`: a client that speaks only HTTP/2 is
    /// refused in the TLS handshake otherwise.
    #[tokio::test]
    async fn http2_is_offered_only_when_asked_for() {
        let (dir, made) = serving_certificate("h2");
        let shutdown = CancellationToken::new();
        let mut negotiated = Vec::new();
        for http2 in [false, true] {
            let port = free_port();
            let address = format!("127.0.0.1:{port}").parse().unwrap();
            let hooks = vec![Hook::defaulting::<ConfigMap>(label)];
            let webhooks = (hooks, Vec::new());
            let metrics = Arc::new(Metrics::default());
            serve(address, &dir, http2, webhooks, metrics, shutdown.clone()).unwrap();
            let mut roots = RootCertStore::empty();
            roots.add(made.cert.der().clone()).unwrap();
            let mut client = ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            client.alpn_protocols = vec![b"h2".to_vec()];
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            let name = "localhost".try_into().unwrap();
            let tls = TlsConnector::from(Arc::new(client))
                .connect(name, tcp)
                .await;
            let protocol = tls
                .ok()
                .and_then(|t| t.get_ref().1.alpn_protocol().map(<[u8]>::to_vec));
            negotiated.push(protocol);
        }
        shutdown.cancel();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(negotiated, [None, Some(b"h2".to_vec())]);
    }

    #[tokio::test]
    async fn a_missing_certificate_is_an_error_that_names_the_flag() {
        let hooks = vec![Hook::defaulting::<ConfigMap>(label)];
        let address = "127.0.0.1:0".parse().unwrap();
        let err = serve(
            address,
            Path::new("/nonexistent"),
            false,
            (hooks, Vec::new()),
            Arc::new(Metrics::default()),
            CancellationToken::new(),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("--webhook-cert-path"),
            "{err:#}"
        );
    }

    /// A client that connects and sends nothing is disconnected once the handshake timeout
    /// passes, instead of holding a connection (and a task) for ever.
    #[tokio::test]
    async fn an_idle_client_is_disconnected_after_the_handshake_timeout() {
        let (dir, _) = serving_certificate("idle");
        let port = free_port();
        let address = format!("127.0.0.1:{port}").parse().unwrap();
        let shutdown = CancellationToken::new();
        let hooks = vec![Hook::defaulting::<ConfigMap>(label)];
        let timeout = Duration::from_millis(300);
        serve_with(
            address,
            &dir,
            false,
            (hooks, Vec::new()),
            Arc::new(Metrics::default()),
            shutdown.clone(),
            timeout,
        )
        .unwrap();

        let mut idle = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let mut buffer = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buffer)).await;
        shutdown.cancel();
        std::fs::remove_dir_all(&dir).unwrap();
        let read = read.expect("the server closed the idle connection within 5 s");
        assert_eq!(read.unwrap_or(0), 0, "closed without an answer");
        assert!(started.elapsed() >= timeout, "{:?}", started.elapsed());
    }
}

/// Any body posted to a hook, bytes or a review with parts replaced at random, is answered
/// with a review or a client error: never a server error or a panic (proptest).
#[cfg(all(test, feature = "testing"))]
mod decoding {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use k8s_openapi::api::core::v1::ConfigMap;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tower::ServiceExt as _;

    use super::super::fake::{admission_review, label};
    use super::super::{Hook, Validator};
    use super::*;

    const PATHS: [&str; 2] = ["/mutate--v1-configmap", "/validate--v1-configmap"];

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-zA-Z]{0,8}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// The review of a ConfigMap's creation with the value at one of its paths replaced, or
    /// removed.
    fn changed_review() -> impl Strategy<Value = Vec<u8>> {
        let paths = prop::sample::select(vec![
            "/request",
            "/request/uid",
            "/request/kind",
            "/request/operation",
            "/request/object",
            "/request/object/metadata",
            "/request/object/metadata/labels",
            "/request/object/data",
            "/request/oldObject",
            "/request/userInfo",
            "/apiVersion",
            "/kind",
            "/request/dryRun",
            "/request/options",
        ]);
        let value = prop::option::weighted(0.8, any_json());
        (paths, value).prop_map(|(path, value)| {
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v"}});
            let mut review: Value = serde_json::from_str(&admission_review(object)).unwrap();
            let (parent, key) = path.rsplit_once('/').unwrap();
            if let Some(Value::Object(parent)) = review.pointer_mut(parent) {
                match value {
                    Some(value) => parent.insert(key.to_string(), value),
                    None => parent.remove(key),
                };
            }
            serde_json::to_vec(&review).unwrap()
        })
    }

    fn body() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            3 => changed_review(),
            1 => prop::collection::vec(any::<u8>(), 0..256),
            1 => any_json().prop_map(|value| serde_json::to_vec(&value).unwrap()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn any_body_is_answered_with_a_review_or_a_client_error(
            body in body(),
            path in prop::sample::select(PATHS.to_vec()),
        ) {
            let allow = |_: &ConfigMap| Ok(vec![]);
            let validator = Validator { create: allow, update: |_, _| Ok(vec![]), delete: allow };
            let hooks = vec![Hook::defaulting::<ConfigMap>(label), Hook::validating(validator)];
            let router = router(hooks, Vec::new(), Arc::new(Metrics::default()));
            let request = Request::post(path)
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap();
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let (status, answer) = runtime.block_on(async {
                let response = router.oneshot(request).await.unwrap();
                let status = response.status();
                let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
                (status, bytes)
            });
            prop_assert!(status == StatusCode::OK || status.is_client_error(), "{}: {:?}", status, answer);
            if status == StatusCode::OK {
                let review: Value = serde_json::from_slice(&answer).unwrap();
                prop_assert!(review["response"]["uid"].is_string(), "{}", review);
                prop_assert!(review["response"]["allowed"].is_boolean(), "{}", review);
            }
        }
    }
}
