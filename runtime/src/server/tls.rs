//! HTTPS, for the webhook server and the secure metrics endpoint (features `webhooks`,
//! `secure-metrics`): a certificate read from a directory's `tls.crt` and `tls.key` and read
//! again when they change, and a server hardened as controller-runtime's: a client gets 10 s
//! to finish its TLS handshake and send its request headers, so that idle connections cannot
//! use up the server; a failed `accept` (file descriptors exhausted) waits before the next
//! instead of spinning.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

/// How long a client may take to finish its TLS handshake, and then to send its request's
/// headers (Go's `http.Server` in controller-runtime: `ReadHeaderTimeout`).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait after a failed `accept` before the next: the error (too many open files)
/// lasts until connections close.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How often a certificate's files are checked for a renewal.
const CERT_CHECK: Duration = Duration::from_secs(10);

/// The TLS side of a server with `certificate`: HTTP/1.1, and HTTP/2 when `http2` (both
/// servers offer HTTP/2 only when asked, as kubebuilder's `--enable-http2`).
fn acceptor(certificate: Arc<dyn ResolvesServerCert>, http2: bool) -> TlsAcceptor {
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    };
    TlsAcceptor::from(Arc::new(config))
}

/// Serves `app` over TLS with `certificate` on `listener` in the background until `shutdown`,
/// giving each client `handshake_timeout` to finish its handshake and send its headers.
pub fn serve(
    listener: TcpListener,
    certificate: Arc<dyn ResolvesServerCert>,
    app: Router,
    http2: bool,
    shutdown: CancellationToken,
    handshake_timeout: Duration,
) {
    let acceptor = acceptor(certificate, http2);
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!(error = %err, "HTTPS server: accept failed");
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
                        tracing::debug!(error = %err, %peer, "HTTPS server: TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "HTTPS server: TLS handshake timed out");
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
                    tracing::debug!(error = %err, %peer, "HTTPS server: connection failed");
                }
            });
        }
    });
}

/// A serving certificate and key, as files; `resolve` hands out the last that was read.
#[derive(Debug)]
pub struct Certificate {
    cert: PathBuf,
    key: PathBuf,
    /// The flag that names the directory, for the errors.
    flag: &'static str,
    /// The files' modification times when read, and what was read.
    current: RwLock<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

impl Certificate {
    /// Reads `tls.crt` and `tls.key` in `dir`, which the flag `flag` names.
    fn read(dir: &Path, flag: &'static str) -> anyhow::Result<Self> {
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        let loaded = load(&cert, &key, flag)?;
        let current = RwLock::new((modified(&cert), loaded));
        Ok(Self {
            cert,
            key,
            flag,
            current,
        })
    }

    /// Reads `tls.crt` and `tls.key` in `dir` (which the flag `flag` names), and again in the
    /// background whenever they change, until `shutdown`.
    pub fn watched(
        dir: &Path,
        flag: &'static str,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Arc<Self>> {
        let certificate = Arc::new(Self::read(dir, flag)?);
        tokio::spawn(certificate.clone().keep_fresh(shutdown));
        Ok(certificate)
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
            match load(&self.cert, &self.key, self.flag) {
                Ok(loaded) => {
                    *self.current.write().expect("not poisoned") = (seen, loaded);
                    tracing::info!(cert = %self.cert.display(), "certificate reloaded");
                }
                Err(err) => tracing::warn!(error = %err, "certificate not reloaded"),
            }
        }
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("not poisoned").1.clone())
    }
}

/// A certificate made at start, for `localhost`, that no client is expected to verify (a
/// Prometheus ServiceMonitor with `insecureSkipVerify`, as controller-runtime's own when no
/// certificate is given).
#[cfg(feature = "secure-metrics")]
#[derive(Debug)]
pub struct SelfSignedCertificate(Arc<CertifiedKey>);

#[cfg(feature = "secure-metrics")]
impl SelfSignedCertificate {
    pub fn new() -> anyhow::Result<Self> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
        let key = PrivateKeyDer::from_pem_slice(made.signing_key.serialize_pem().as_bytes())
            .context("a key rcgen made")?;
        let certified = CertifiedKey::from_der(vec![made.cert.der().clone()], key, &provider())
            .context("a certificate rcgen made")?;
        Ok(Self(Arc::new(certified)))
    }
}

#[cfg(feature = "secure-metrics")]
impl ResolvesServerCert for SelfSignedCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The process's crypto provider, or ring's (kube's).
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(tokio_rustls::rustls::crypto::ring::default_provider()))
}

fn load(cert: &Path, key: &Path, flag: &str) -> anyhow::Result<Arc<CertifiedKey>> {
    let help = format!("pass {flag} with the directory of tls.crt and tls.key");
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("cannot read the certificate {}: {help}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read the key {}: {help}", key.display()))?;
    let certified = CertifiedKey::from_der(certs, key, &provider())
        .context("the certificate does not match its key")?;
    Ok(Arc::new(certified))
}
