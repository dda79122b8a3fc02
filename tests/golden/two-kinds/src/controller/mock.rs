//! A mocked Kubernetes API server for the controllers' tests (tower-test, as kube-rs's
//! controller-rs does): each test states the requests it expects, in order, and the answers.

use std::sync::Arc;

use http::{Request, Response};
use kube::Client;
use kube::client::Body;

use super::Context;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// The API server's side of a test.
pub struct ApiServer(Handle);

/// A context whose client talks to the returned mock API server.
pub fn context() -> (Arc<Context>, ApiServer) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    (Arc::new(Context::new(client)), ApiServer(handle))
}

impl ApiServer {
    /// Waits for the next request, checks its method and that its URI starts with `path`,
    /// answers `response` with status 200 and returns the request's JSON body.
    pub async fn expect(
        &mut self,
        method: http::Method,
        path: &str,
        response: serde_json::Value,
    ) -> serde_json::Value {
        let (body, send) = self.next(method, path).await;
        let answer = serde_json::to_vec(&response).expect("a JSON response");
        send.send_response(
            Response::builder()
                .body(Body::from(answer))
                .expect("a response"),
        );
        if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body).expect("a JSON request body")
        }
    }

    /// Like `expect`, answering with the request's own body, as the API server does on create.
    pub async fn expect_echo(&mut self, method: http::Method, path: &str) -> serde_json::Value {
        let (body, send) = self.next(method, path).await;
        let sent = serde_json::from_slice(&body).expect("a JSON request body");
        send.send_response(
            Response::builder()
                .body(Body::from(body))
                .expect("a response"),
        );
        sent
    }

    async fn next(
        &mut self,
        method: http::Method,
        path: &str,
    ) -> (Vec<u8>, tower_test::mock::SendResponse<Response<Body>>) {
        let (request, send) = self
            .0
            .next_request()
            .await
            .expect("the client sent no request");
        assert_eq!(request.method(), method, "method of {}", request.uri());
        let uri = request.uri().to_string();
        assert!(
            uri.starts_with(path),
            "expected a request to {path}, got {uri}"
        );
        let body = request
            .into_body()
            .collect_bytes()
            .await
            .expect("request body");
        (body.to_vec(), send)
    }

    /// Asserts the client sends no further request.
    pub async fn done(mut self) {
        let next =
            tokio::time::timeout(std::time::Duration::from_millis(100), self.0.next_request());
        if let Ok(Some((request, _))) = next.await {
            panic!("unexpected request: {} {}", request.method(), request.uri());
        }
    }
}
