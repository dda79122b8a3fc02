// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The controller of `Guestbook` (webapp.mock.com/v1).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tracing::{info, instrument, warn};

use super::{Context, Error, Result, conditions, rule};
use crate::api::webapp::v1 as webappv1;

/// The kind this controller reconciles.
pub type Object = webappv1::Guestbook;
/// Its status.
pub type Status = webappv1::GuestbookStatus;
/// The field manager of the status this controller writes with server-side apply.
pub const FIELD_MANAGER: &str = "guestbook-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "guestbook";
/// The conditions this controller sets; others' stay theirs.
const CONDITIONS: &[&str] = &[conditions::AVAILABLE];
/// How long to wait before reconciling a healthy object again.
const RESYNC: Duration = Duration::from_secs(300);
/// How many objects are reconciled at once (controller-runtime's default); one object is
/// never reconciled twice at the same time.
const MAX_CONCURRENT_RECONCILES: u16 = 1;

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`).
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    run(ctx).boxed()
}

/// Watches `Guestbook` objects and reconciles each one until shutdown.
pub async fn run(ctx: Arc<Context>) {
    let objects = Api::<Object>::all(ctx.client.clone());
    let config = controller::Config::default().concurrency(MAX_CONCURRENT_RECONCILES);
    // TODO(user): objects this kind owns (a Deployment, a ConfigMap...) go in an `OWNED` list
    // with a `Child` impl each (`super::children`); `create api --owns apps/v1/Deployment`
    // scaffolds that.
    let controller = Controller::new(objects, watcher::Config::default().any_semantic())
        .with_config(config)
        .graceful_shutdown_on(ctx.shutdown.clone().cancelled_owned());
    super::report_synced(CONTROLLER, controller.store(), ctx.health.clone());
    ctx.metrics
        .start_controller(CONTROLLER, MAX_CONCURRENT_RECONCILES);
    controller
        .run(
            |obj, ctx| super::observe(CONTROLLER, obj, ctx, reconcile),
            error_policy,
            ctx,
        )
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => info!(object = %obj, "reconciled"),
                // `error_policy` has logged it, with its kind.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(err) => warn!(error = %err, "controller error"),
            }
        })
        .await;
    info!(controller = CONTROLLER, "controller stopped");
}

/// Brings the cluster to the state a `Guestbook` asks for.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = obj.namespace().ok_or_else(|| {
        Error::InvalidObject(format!(
            "a namespaced {} has no namespace",
            Object::kind(&())
        ))
    })?;
    let objects = Api::<Object>::namespaced(ctx.client.clone(), &namespace);
    // Objects with an owner reference to this one are deleted with it by Kubernetes' garbage
    // collector. To clean up anything else before an object goes, scaffold the controller
    // with `--finalizer` (see the README's "Nothing hangs on uninstall").
    apply(&obj, &objects, &ctx).await
}

/// The object exists and is not being deleted: make the world match its spec.
async fn apply(obj: &Object, objects: &Api<Object>, ctx: &Context) -> Result<Action> {
    // TODO(user): your logic here. Read `obj.spec`, create or update what it asks for, and
    // report what you observed through the conditions below.

    let available = conditions::Status::True;
    let reason = "Reconciled";
    let message = format!("The {} is reconciled", Object::kind(&()));

    let generation = obj.meta().generation;
    let current = obj.status.clone().unwrap_or_default();
    let was_available = conditions::is_true(&current.conditions, conditions::AVAILABLE);
    let status = Status {
        observed_generation: generation,
        conditions: conditions::set(
            &current.conditions,
            conditions::AVAILABLE,
            available,
            reason,
            &message,
            generation,
        ),
    };
    if obj.status.as_ref() != Some(&status) {
        // Only this controller's conditions: another manager's stay its own.
        let applied = Status {
            conditions: conditions::only(&status.conditions, CONDITIONS),
            ..status.clone()
        };
        let patch = serde_json::json!({
            "apiVersion": Object::api_version(&()),
            "kind": Object::kind(&()),
            "status": applied,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        objects
            .patch_status(&obj.name_any(), &params, &Patch::Apply(patch))
            .await?;
    }
    let event = if available == conditions::Status::True && !was_available {
        let note = format!("{} {} is available", Object::kind(&()), obj.name_any());
        Some((EventType::Normal, "Available", note))
    } else {
        None
    };
    if let Some((type_, reason, note)) = event {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        ctx.recorder.publish(&event, &obj.object_ref(&())).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// Decides when to retry after `reconcile` failed: 5 s, then doubling up to 5 minutes.
pub fn error_policy(obj: Arc<Object>, err: &Error, ctx: Arc<Context>) -> Action {
    let delay = ctx.backoff.next_delay(&ObjectRef::from_obj(&*obj).erase());
    let name = obj.name_any();
    warn!(error = %err, kind = err.kind(), %name, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    let status = format!("{resource}/status");
    vec![
        rule(&group, &resource, &["get", "list", "watch"]),
        rule(&group, &status, &["get", "patch", "update"]),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::api::webapp::v1::GuestbookSpec as Spec;
    use crate::controller::mock::{self, ApiServer};
    use crate::controller::observe;

    /// The test object's UID, which its children's owner references name.
    const UID: &str = "9c8f3a52-0000-4000-8000-000000000001";

    /// Where the test object lives on the API server.
    fn path() -> String {
        format!("{}/test", Object::url_path(&(), Some("default")))
    }

    fn object() -> Object {
        let mut obj = Object::new("test", Spec::default());
        obj.meta_mut().namespace = Some("default".into());
        obj.meta_mut().uid = Some(UID.into());
        obj.meta_mut().generation = Some(1);
        obj
    }

    /// An object as `apply` sees it.
    fn ready() -> Object {
        object()
    }

    /// A fake API server holding `obj`, and a context that talks to it.
    fn serving(obj: &Object) -> (Arc<Context>, ApiServer) {
        let (ctx, server) = mock::context();
        server.insert(&path(), obj);
        (ctx, server)
    }

    /// Reconciles `obj` once, against `ctx`'s API server; the reconcile must succeed.
    async fn reconciled(obj: Object, ctx: &Arc<Context>) -> Action {
        let result = reconcile(Arc::new(obj), ctx.clone()).await;
        result.expect("reconcile succeeded")
    }

    /// The `Available` condition of the object as the server holds it.
    fn available(server: &ApiServer) -> Value {
        let stored = server.get(&path()).expect("the object");
        let conditions = stored["status"]["conditions"].as_array().cloned();
        let conditions = conditions.expect("status conditions");
        let available = conditions.into_iter().find(|c| c["type"] == "Available");
        available.expect("an Available condition")
    }

    /// The Events the controller published.
    fn events(server: &ApiServer) -> Vec<Value> {
        let writes = server.writes().into_iter();
        let posts = writes.filter(|s| s.path.ends_with("/events"));
        posts.map(|s| s.body).collect()
    }

    #[tokio::test]
    async fn an_object_gets_its_status_applied() {
        let (ctx, server) = serving(&ready());
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(ready()), ctx, reconcile).await;
        let action = action.expect("reconcile succeeded");
        assert_eq!(action, Action::requeue(RESYNC));

        let status_path = format!("{}/status", path());
        let writes = server.writes().into_iter();
        let mut patches = writes.filter(|s| s.path == status_path);
        let patch = patches.next().expect("a status patch");
        assert!(patches.next().is_none(), "one status patch");
        let manager = format!("fieldManager={FIELD_MANAGER}");
        assert!(patch.query.contains(&manager), "{}", patch.query);
        assert_eq!(patch.body["kind"], Object::kind(&()).as_ref());
        let stored = server.get(&path()).expect("the object");
        assert_eq!(stored["status"]["observedGeneration"], 1);
        assert_eq!(available(&server)["observedGeneration"], 1);
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"requeue_after\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn an_object_becomes_available_with_an_event() {
        let (ctx, server) = serving(&ready());
        reconciled(ready(), &ctx).await;

        assert_eq!(available(&server)["status"], "True");
        assert_eq!(available(&server)["reason"], "Reconciled");
        let events = events(&server);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["type"], "Normal");
        assert_eq!(events[0]["reason"], "Available");
        assert_eq!(events[0]["regarding"]["name"], "test");
    }

    #[tokio::test]
    async fn an_up_to_date_status_is_not_written_again() {
        let (ctx, server) = serving(&ready());
        reconciled(ready(), &ctx).await;
        let stored = server.get(&path()).expect("the object");
        let obj: Object = serde_json::from_value(stored).expect("an object");
        let writes = server.writes().len();

        reconciled(obj, &ctx).await;
        let again = server.writes();
        let status_path = format!("{}/status", path());
        let rewritten = again[writes..].iter().any(|s| s.path == status_path);
        assert!(!rewritten, "the status was written again: {again:?}");
        assert_eq!(events(&server).len(), 1, "no second event");
    }

    #[tokio::test]
    async fn failures_are_retried_later_and_later() {
        let (ctx, _server) = mock::context();
        let obj = Arc::new(object());
        let err = Error::InvalidObject("broken".into());
        let delays: Vec<Action> = (0..3)
            .map(|_| error_policy(obj.clone(), &err, ctx.clone()))
            .collect();
        let expected = [5, 10, 20].map(|s| Action::requeue(Duration::from_secs(s)));
        assert_eq!(delays, expected);
    }
}
