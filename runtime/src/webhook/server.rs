//! The HTTPS server of the webhooks (feature `webhooks`): one route per hook and `/convert`,
//! over TLS with the certificate in `--webhook-cert-path`, read again when its files change.
//!
//! Hardened as controller-runtime's: reviews up to 7 MiB; a client gets 10 s to finish its TLS
//! handshake and send its request headers, so that idle connections cannot use up the
//! server; a failed `accept` (file descriptors exhausted) waits before the next instead of
//! spinning.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use kube::core::DynamicObject;
use kube::core::admission::AdmissionReview;
use kube::core::conversion::ConversionReview;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

use super::Hook;
use super::conversion::{self, Conversion};
use crate::metrics::Metrics;
use crate::server::{self, BindAddress};

/// The largest review the server reads, as controller-runtime's: an UPDATE review holds the
/// object twice (axum's default of 2 MiB refused those of objects over 1 MiB), a
/// ConversionReview many objects.
const MAX_REVIEW_BYTES: usize = 7 * 1024 * 1024;

/// How long a client may take to finish its TLS handshake, and then to send its request's
/// headers (Go's `http.Server` in controller-runtime: `ReadHeaderTimeout`).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait after a failed `accept` before the next: the error (too many open files)
/// lasts until connections close.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `hooks` and `conversions` over TLS on `address` until `shutdown`, with the
/// certificate in `cert_dir`, over HTTP/1.1 (and HTTP/2 with `http2`), counting requests in
/// `metrics`; nothing when there are none or the address is `0` (then no certificate is
/// needed). Fails at once if the address is taken or the certificate cannot be read.
pub fn serve(
    address: BindAddress,
    cert_dir: &Path,
    http2: bool,
    (hooks, conversions): (Vec<Hook>, Vec<Conversion>),
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let webhooks = (hooks, conversions);
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
    let certificate = Arc::new(Certificate::read(cert_dir)?);
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(certificate.clone());
    config.alpn_protocols = match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    };
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let app = router(hooks, conversions, metrics);
    tracing::info!(%address, "serving webhooks");
    tokio::spawn(certificate.keep_fresh(shutdown.clone()));
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!(error = %err, "webhook server: accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                },
                () = shutdown.cancelled() => return,
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                let handshake = tokio::time::timeout(handshake_timeout, acceptor.accept(stream));
                let stream = match handshake.await {
                    Ok(Ok(stream)) => stream,
                    Ok(Err(err)) => {
                        tracing::debug!(error = %err, %peer, "webhook server: TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "webhook server: TLS handshake timed out");
                        return;
                    }
                };
                let service = TowerToHyperService::new(app);
                let mut builder = auto::Builder::new(TokioExecutor::new());
                // Without a timer, hyper's header read timeout is silently off.
                builder
                    .http1()
                    .timer(TokioTimer::new())
                    .header_read_timeout(handshake_timeout);
                if !http2 {
                    builder = builder.http1_only();
                }
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                if let Err(err) = connection.await {
                    tracing::debug!(error = %err, %peer, "webhook server: connection failed");
                }
            });
        }
    });
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

/// The serving certificate and key, as files; `resolve` hands out the last that was read.
#[derive(Debug)]
struct Certificate {
    cert: PathBuf,
    key: PathBuf,
    /// The files' modification times when read, and what was read.
    current: RwLock<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

/// How often the certificate's files are checked for a renewal.
const CERT_CHECK: Duration = Duration::from_secs(10);

impl Certificate {
    fn read(dir: &Path) -> anyhow::Result<Self> {
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        let loaded = load(&cert, &key)?;
        let current = RwLock::new((modified(&cert), loaded));
        Ok(Self { cert, key, current })
    }

    /// Reads the files again whenever they changed, until `shutdown`.
    async fn keep_fresh(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(CERT_CHECK) => {}
                () = shutdown.cancelled() => return,
            }
            let seen = modified(&self.cert);
            if seen == self.current.read().expect("not poisoned").0 {
                continue;
            }
            match load(&self.cert, &self.key) {
                Ok(loaded) => {
                    *self.current.write().expect("not poisoned") = (seen, loaded);
                    tracing::info!(cert = %self.cert.display(), "webhook certificate reloaded");
                }
                Err(err) => tracing::warn!(error = %err, "webhook certificate not reloaded"),
            }
        }
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("not poisoned").1.clone())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn load(cert: &Path, key: &Path) -> anyhow::Result<Arc<CertifiedKey>> {
    let help = "pass --webhook-cert-path with the directory of tls.crt and tls.key";
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| {
            format!(
                "cannot read the webhook certificate {}: {help}",
                cert.display()
            )
        })?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read the webhook key {}: {help}", key.display()))?;
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(tokio_rustls::rustls::crypto::ring::default_provider()));
    let certified = CertifiedKey::from_der(certs, key, &provider)
        .context("the webhook certificate does not match its key")?;
    Ok(Arc::new(certified))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio_rustls::TlsConnector;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};

    use super::*;

    fn label(cm: &mut ConfigMap) {
        let labels = cm.metadata.labels.get_or_insert_default();
        labels.entry("defaulted".into()).or_insert("yes".into());
    }

    fn review(object: serde_json::Value) -> String {
        serde_json::json!({
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

    /// The manager's webhook server, over TLS with a certificate made here: a review posted to
    /// the hook's path is answered with the JSON patch of the defaults.
    #[tokio::test]
    async fn the_server_answers_reviews_over_tls() {
        let dir = std::env::temp_dir().join(format!("webhook-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("tls.crt"), made.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
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
        let dir = std::env::temp_dir().join(format!("webhook-h2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("tls.crt"), made.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
        let shutdown = CancellationToken::new();
        let mut negotiated = Vec::new();
        for http2 in [false, true] {
            let port = {
                let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                probe.local_addr().unwrap().port()
            };
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
        let dir = std::env::temp_dir().join(format!("webhook-idle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.join("tls.crt"), made.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
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
