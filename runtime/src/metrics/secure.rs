//! `/metrics` over HTTPS for the clients the API server vouches for (feature `secure-metrics`,
//! `--metrics-secure`, kubebuilder's default), as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`: a request's bearer token is authenticated by
//! the API server (a TokenReview), and its user must be allowed to `get` the non-resource URL
//! `/metrics` (a SubjectAccessReview). config/rbac's `metrics-reader` ClusterRole grants that
//! to whoever scrapes (Prometheus' ServiceAccount); `metrics-auth-role` lets the manager create
//! both reviews. No token: 401; a token the API server does not know: 401; a user without the
//! grant: 403.
//!
//! Decisions are kept per token (allowed for two minutes, refused for ten seconds), so that a
//! scrape every few seconds does not cost two reviews each time. The certificate is
//! `--metrics-cert-path`'s (`tls.crt`, `tls.key`, read again when they change) or, without it,
//! one made at start that scrapers do not verify (`insecureSkipVerify`, as kubebuilder's
//! ServiceMonitor).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio_rustls::rustls::server::ResolvesServerCert;
use tokio_util::sync::CancellationToken;

use crate::server::tls::{self, Certificate, HANDSHAKE_TIMEOUT, SelfSignedCertificate};
use crate::server::{self, BindAddress};

/// How long a decision about a token is kept.
const ALLOWED_FOR: Duration = Duration::from_secs(120);
const REFUSED_FOR: Duration = Duration::from_secs(10);
/// Past this many tokens, expired decisions are dropped; if none has expired, all are.
const MAX_TOKENS: usize = 1024;

/// Serves `router` over HTTPS on `address` until `shutdown`, to the clients `client`'s API
/// server authenticates and authorizes; nothing when the address is `0`.
pub fn serve(
    address: BindAddress,
    cert_dir: Option<&Path>,
    http2: bool,
    router: Router,
    client: Client,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let Some(listener) = server::listen(address)? else {
        return Ok(());
    };
    let certificate: Arc<dyn ResolvesServerCert> = match cert_dir {
        Some(dir) => Certificate::watched(dir, "--metrics-cert-path", shutdown.clone())?,
        None => Arc::new(SelfSignedCertificate::new()?),
    };
    let app = guarded(router, client);
    tracing::info!(%address, "serving metrics over HTTPS to authorized clients");
    tls::serve(
        listener,
        certificate,
        app,
        http2,
        shutdown,
        HANDSHAKE_TIMEOUT,
    );
    Ok(())
}

/// `router`, answering only requests whose token `client`'s API server authenticates and
/// authorizes for the request's path.
pub fn guarded(router: Router, client: Client) -> Router {
    let auth = Arc::new(Auth {
        client,
        decisions: Mutex::default(),
    });
    router.route_layer(middleware::from_fn_with_state(auth, check))
}

struct Auth {
    client: Client,
    decisions: Mutex<HashMap<String, (Instant, Decision)>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Allowed,
    Unauthenticated,
    Forbidden,
}

async fn check(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let header = request.headers().get(AUTHORIZATION);
    let token = header.and_then(|value| value.to_str().ok());
    let token = token
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(token) = token.filter(|token| !token.is_empty()) else {
        return (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    };
    let verb = request.method().as_str().to_lowercase();
    match auth.decide(token, request.uri().path(), &verb).await {
        Ok(Decision::Allowed) => next.run(request).await,
        Ok(Decision::Unauthenticated) => (StatusCode::UNAUTHORIZED, "Unauthorized").into_response(),
        Ok(Decision::Forbidden) => (StatusCode::FORBIDDEN, "Forbidden").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "metrics: cannot review a client's token");
            (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
        }
    }
}

impl Auth {
    async fn decide(&self, token: &str, path: &str, verb: &str) -> Result<Decision, kube::Error> {
        if let Some(decision) = self.remembered(token) {
            return Ok(decision);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..TokenReviewSpec::default()
            },
            ..TokenReview::default()
        };
        let params = PostParams::default();
        let reviews = Api::<TokenReview>::all(self.client.clone());
        let status = reviews.create(&params, &review).await?.status;
        let status = status.unwrap_or_default();
        let decision = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => {
                let review = SubjectAccessReview {
                    spec: SubjectAccessReviewSpec {
                        user: user.username,
                        groups: user.groups,
                        uid: user.uid,
                        extra: user.extra,
                        non_resource_attributes: Some(NonResourceAttributes {
                            path: Some(path.to_string()),
                            verb: Some(verb.to_string()),
                        }),
                        ..SubjectAccessReviewSpec::default()
                    },
                    ..SubjectAccessReview::default()
                };
                let reviews = Api::<SubjectAccessReview>::all(self.client.clone());
                let status = reviews.create(&params, &review).await?.status;
                match status.is_some_and(|status| status.allowed) {
                    true => Decision::Allowed,
                    false => Decision::Forbidden,
                }
            }
            _ => Decision::Unauthenticated,
        };
        self.remember(token, decision);
        Ok(decision)
    }

    fn remembered(&self, token: &str) -> Option<Decision> {
        let decisions = self.decisions.lock().expect("not poisoned");
        let (until, decision) = decisions.get(token)?;
        (Instant::now() < *until).then_some(*decision)
    }

    fn remember(&self, token: &str, decision: Decision) {
        let now = Instant::now();
        let mut decisions = self.decisions.lock().expect("not poisoned");
        if decisions.len() >= MAX_TOKENS {
            decisions.retain(|_, (until, _)| now < *until);
            if decisions.len() >= MAX_TOKENS {
                decisions.clear();
            }
        }
        let kept = match decision {
            Decision::Allowed => ALLOWED_FOR,
            Decision::Unauthenticated | Decision::Forbidden => REFUSED_FOR,
        };
        decisions.insert(token.to_string(), (now + kept, decision));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http::{Request as HttpRequest, Response as HttpResponse};
    use kube::client::Body;
    use serde_json::{Value, json};
    use tower::ServiceExt as _;

    use super::*;

    /// An API server that knows the tokens `reader` (allowed to get /metrics) and `stranger`
    /// (not), and counts the reviews it answers.
    fn api_server() -> (Client, Arc<AtomicUsize>) {
        let (service, mut handle) =
            tower_test::mock::pair::<HttpRequest<Body>, HttpResponse<Body>>();
        let reviews = Arc::new(AtomicUsize::new(0));
        let counted = reviews.clone();
        tokio::spawn(async move {
            while let Some((request, send)) = handle.next_request().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let path = request.uri().path().to_string();
                let bytes = request.into_body().collect_bytes().await.unwrap();
                let mut review: Value = serde_json::from_slice(&bytes).unwrap();
                if path.ends_with("/tokenreviews") {
                    let token = review["spec"]["token"].as_str().unwrap_or_default();
                    review["status"] = match token {
                        "reader" | "stranger" => json!({
                            "authenticated": true,
                            "user": {"username": token, "groups": ["system:authenticated"]},
                        }),
                        _ => json!({"authenticated": false}),
                    };
                } else {
                    let spec = &review["spec"];
                    let allowed = spec["user"] == "reader"
                        && spec["nonResourceAttributes"]
                            == json!({"path": "/metrics", "verb": "get"});
                    review["status"] = json!({"allowed": allowed});
                }
                let body = Body::from(serde_json::to_vec(&review).unwrap());
                send.send_response(HttpResponse::builder().status(201).body(body).unwrap());
            }
        });
        (Client::new(service, "default"), reviews)
    }

    async fn status(app: &Router, token: Option<&str>) -> StatusCode {
        let mut request = HttpRequest::get("/metrics");
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(axum::body::Body::empty()).unwrap();
        app.clone().oneshot(request).await.unwrap().status()
    }

    /// Finding 11 of the review: /metrics was plain HTTP, open to anyone who reached the pod.
    #[tokio::test]
    async fn only_a_client_the_api_server_authorizes_reads_the_metrics() {
        let (client, reviews) = api_server();
        let metrics = Arc::new(crate::metrics::Metrics::default());
        let app = guarded(crate::metrics::router(metrics), client);

        assert_eq!(status(&app, None).await, StatusCode::UNAUTHORIZED);
        assert_eq!(reviews.load(Ordering::SeqCst), 0, "no token, no review");
        assert_eq!(status(&app, Some("forged")).await, StatusCode::UNAUTHORIZED);
        assert_eq!(status(&app, Some("stranger")).await, StatusCode::FORBIDDEN);
        assert_eq!(status(&app, Some("reader")).await, StatusCode::OK);
        let asked = reviews.load(Ordering::SeqCst);
        assert_eq!(
            asked,
            1 + 2 + 2,
            "a TokenReview each, a SubjectAccessReview when known"
        );

        // Decisions are kept: a second scrape asks nothing.
        assert_eq!(status(&app, Some("reader")).await, StatusCode::OK);
        assert_eq!(status(&app, Some("stranger")).await, StatusCode::FORBIDDEN);
        assert_eq!(reviews.load(Ordering::SeqCst), asked);
    }
}
