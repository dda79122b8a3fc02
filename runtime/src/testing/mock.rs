//! A fake Kubernetes API server for the controllers' tests. It keeps objects by path and
//! answers GET, POST, PATCH (server-side apply, JSON patch, merge patch) and DELETE as the API
//! server would, in whatever order the controller sends them, and records every request. A
//! test seeds the objects, runs a reconcile, then looks at the objects and the requests: it
//! does not break when a reconcile makes one more call.
//!
//! A GET of a collection lists the objects under it that match the request's label selector
//! (equality only: `a=b,c=d`).
//!
//! It is not an API server: no validation, admission, watches or resource versions.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

use crate::controller::Context;

/// One request the controller sent.
#[derive(Clone, Debug)]
pub struct Sent {
    pub method: Method,
    /// The path, without the query.
    pub path: String,
    pub query: String,
    /// The JSON body, or `Null`.
    pub body: Value,
}

#[derive(Default)]
struct State {
    objects: BTreeMap<String, Value>,
    sent: Vec<Sent>,
    uids: u64,
    /// Paths ending so, and the status their writes fail with.
    refused: Vec<(String, StatusCode)>,
}

/// The API server's side of a test.
#[derive(Clone, Default)]
pub struct ApiServer(Arc<Mutex<State>>);

/// A context whose client talks to a new fake API server, and that server. Call it inside a
/// Tokio runtime (`#[tokio::test]`): the server runs as a task.
pub fn context() -> (Arc<Context>, ApiServer) {
    context_with(|ctx| ctx)
}

/// `context()`, with the context `make` makes of it: your own state added, e.g.
/// `mock::context_with(|ctx| ctx.with_state(Billing { .. }))`.
pub fn context_with<S>(make: impl FnOnce(Context) -> Context<S>) -> (Arc<Context<S>>, ApiServer) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let server = ApiServer::default();
    let serving = server.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            send.send_response(serving.serve(request).await);
        }
    });
    let client = Client::new(service, "default");
    (Arc::new(make(Context::new(client))), server)
}

impl ApiServer {
    /// Stores `object` at `path` (e.g. `/apis/apps/v1/namespaces/default/deployments/web`).
    pub fn insert(&self, path: &str, object: &impl serde::Serialize) {
        let object = serde_json::to_value(object).expect("an object serializes");
        self.state().objects.insert(path.into(), object);
    }

    /// Makes every write to a path ending in `suffix` (`/events`, say) fail with `status`, as
    /// the API server does when the manager lacks a permission or the server is overloaded.
    pub fn refuse(&self, suffix: &str, status: StatusCode) {
        self.state().refused.push((suffix.into(), status));
    }

    /// The object at `path` as it is now.
    pub fn get(&self, path: &str) -> Option<Value> {
        self.state().objects.get(path).cloned()
    }

    /// Every request so far, in order.
    pub fn sent(&self) -> Vec<Sent> {
        self.state().sent.clone()
    }

    /// The requests so far that would change something: everything but GET.
    pub fn writes(&self) -> Vec<Sent> {
        let sent = self.sent().into_iter();
        sent.filter(|s| s.method != Method::GET).collect()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn serve(&self, request: Request<Body>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or_default().to_string();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = request.into_body().collect_bytes().await;
        let bytes = bytes.expect("a request body");
        let body = match bytes.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&bytes).expect("a JSON request body"),
        };
        let mut state = self.state();
        state.sent.push(Sent {
            method: method.clone(),
            path: path.clone(),
            query: query.clone(),
            body: body.clone(),
        });
        let refused = state
            .refused
            .iter()
            .find(|(suffix, _)| path.ends_with(suffix.as_str()));
        let refused = refused.map(|(_, status)| *status);
        let (status, answer) = match refused {
            Some(status) if method != Method::GET => {
                (status, failure(status, "Refused", "refused by the test"))
            }
            _ if method == Method::GET && collection(&path) => {
                (StatusCode::OK, state.list(&path, &query))
            }
            _ => state.answer(method, &path, &content_type, body),
        };
        let answer = serde_json::to_vec(&answer).expect("a JSON answer");
        Response::builder()
            .status(status)
            .body(Body::from(answer))
            .expect("a response")
    }
}

impl State {
    /// The objects right under the collection at `path` that the label selector of `query`
    /// selects, as a list.
    fn list(&self, path: &str, query: &str) -> Value {
        let selector = form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "labelSelector")
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default();
        let wanted: Vec<(&str, &str)> = (selector.split(','))
            .filter_map(|pair| pair.split_once('='))
            .collect();
        let prefix = format!("{path}/");
        let items = (self.objects.iter())
            .filter(|(at, _)| {
                at.strip_prefix(&prefix)
                    .is_some_and(|name| !name.contains('/'))
            })
            .map(|(_, object)| object)
            .filter(|object| {
                let labels = &object["metadata"]["labels"];
                wanted.iter().all(|(key, value)| labels[key] == *value)
            });
        let items: Vec<Value> = items.cloned().collect();
        json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items})
    }

    /// What the API server answers `method` on `path` with.
    fn answer(
        &mut self,
        method: Method,
        path: &str,
        kind: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let state = self;
        match method {
            Method::GET => match state.objects.get(path) {
                Some(object) => (StatusCode::OK, object.clone()),
                None => not_found(path),
            },
            Method::POST => {
                let mut object = body;
                state.uids += 1;
                object["metadata"]["uid"] = json!(format!("uid-{}", state.uids));
                if let Some(name) = object["metadata"]["name"].as_str() {
                    let at = format!("{path}/{name}");
                    state.objects.insert(at, object.clone());
                }
                (StatusCode::CREATED, object)
            }
            Method::PATCH => state.patch(path, kind, body),
            Method::DELETE => match state.objects.remove(path) {
                Some(object) => (StatusCode::OK, object),
                None => not_found(path),
            },
            _ => (StatusCode::METHOD_NOT_ALLOWED, json!({})),
        }
    }

    fn patch(&mut self, path: &str, content_type: &str, body: Value) -> (StatusCode, Value) {
        let (path, status) = match path.strip_suffix("/status") {
            Some(object) => (object, true),
            None => (path, false),
        };
        let existing = self.objects.get(path).cloned();
        let apply = content_type.starts_with("application/apply-patch");
        let mut object = match existing {
            Some(object) => object,
            None if apply && !status => {
                self.uids += 1;
                json!({"metadata": {"uid": format!("uid-{}", self.uids)}})
            }
            None => return not_found(path),
        };
        match content_type {
            _ if apply && status => object["status"] = body["status"].clone(),
            _ if apply => json_patch::merge(&mut object, &body),
            "application/json-patch+json" => {
                // As the API server does, a missing field passes a `test` for `null`.
                let mut ops = body.as_array().cloned().unwrap_or_default();
                ops.retain(|op| {
                    let path = op["path"].as_str().unwrap_or_default();
                    let missing = object.pointer(path).is_none();
                    !(op["op"] == "test" && op["value"].is_null() && missing)
                });
                let patch = serde_json::from_value::<json_patch::Patch>(Value::from(ops));
                let patch = patch.expect("a JSON patch");
                if let Err(err) = json_patch::patch(&mut object, &patch) {
                    let status = StatusCode::UNPROCESSABLE_ENTITY;
                    return (status, failure(status, "Invalid", &err.to_string()));
                }
            }
            _ => json_patch::merge(&mut object, &body),
        }
        self.objects.insert(path.into(), object.clone());
        (StatusCode::OK, object)
    }
}

/// Whether `path` names a collection (`/api/v1/namespaces/default/configmaps`), not an object.
fn collection(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return false,
    };
    matches!(rest, ["namespaces", _, _] | [_])
}

fn not_found(path: &str) -> (StatusCode, Value) {
    let status = StatusCode::NOT_FOUND;
    let message = format!("{path} not found");
    (status, failure(status, "NotFound", &message))
}

/// A `Status` object, as the API server answers a failed request.
fn failure(status: StatusCode, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "reason": reason,
        "message": message,
        "code": status.as_u16(),
    })
}
