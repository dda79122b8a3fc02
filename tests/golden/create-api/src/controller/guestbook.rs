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
    // TODO(user): to reconcile when the objects this kind owns change, watch them too, e.g.
    // `.owns(Api::<Deployment>::all(ctx.client.clone()), watcher::Config::default())`, and add
    // their RBAC rules to `rbac_rules` below.
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

    let generation = obj.meta().generation;
    let current = obj.status.clone().unwrap_or_default();
    let was_available = conditions::is_true(&current.conditions, conditions::AVAILABLE);
    let message = format!("The {} is reconciled", Object::kind(&()));
    let status = Status {
        observed_generation: generation,
        conditions: conditions::set(
            &current.conditions,
            conditions::AVAILABLE,
            conditions::Status::True,
            "Reconciled",
            &message,
            generation,
        ),
    };
    if obj.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({
            "apiVersion": Object::api_version(&()),
            "kind": Object::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        objects
            .patch_status(&obj.name_any(), &params, &Patch::Apply(patch))
            .await?;
    }
    if !was_available {
        let event = Event {
            type_: EventType::Normal,
            reason: "Available".into(),
            note: Some(format!(
                "{} {} is available",
                Object::kind(&()),
                obj.name_any()
            )),
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
    use http::Method;
    use serde_json::Value;

    use super::*;
    use crate::api::webapp::v1::GuestbookSpec as Spec;
    use crate::controller::{mock, observe};

    /// Where the test object lives on the API server.
    fn path() -> String {
        format!("{}/test", Object::url_path(&(), Some("default")))
    }

    fn object() -> Object {
        let mut obj = Object::new("test", Spec::default());
        obj.meta_mut().namespace = Some("default".into());
        obj.meta_mut().generation = Some(1);
        obj
    }

    /// An object as `apply` sees it.
    fn ready() -> Object {
        object()
    }

    fn json_of(obj: &Object) -> Value {
        serde_json::to_value(obj).expect("an object serializes")
    }

    #[tokio::test]
    async fn an_object_gets_its_status_applied_and_an_event() {
        let (ctx, mut server) = mock::context();
        let obj = ready();
        let metrics = ctx.metrics.clone();
        let reconciling = tokio::spawn(observe(CONTROLLER, Arc::new(obj.clone()), ctx, reconcile));

        let status = format!("{}/status?&force=true&fieldManager={FIELD_MANAGER}", path());
        let patch = server.expect(Method::PATCH, &status, json_of(&obj)).await;
        assert_eq!(patch["kind"], Object::kind(&()).as_ref());
        assert_eq!(patch["status"]["observedGeneration"], 1);
        assert_eq!(patch["status"]["conditions"][0]["type"], "Available");
        assert_eq!(patch["status"]["conditions"][0]["status"], "True");
        let events = "/apis/events.k8s.io/v1/namespaces/default/events?";
        let event = server.expect_echo(Method::POST, events).await;
        assert_eq!(event["reason"], "Available");
        assert_eq!(event["regarding"]["name"], "test");

        let action = reconciling
            .await
            .expect("reconcile ran")
            .expect("reconcile succeeded");
        assert_eq!(action, Action::requeue(RESYNC));
        server.done().await;
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"requeue_after\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn an_up_to_date_status_is_not_written_again() {
        let (ctx, server) = mock::context();
        let mut obj = ready();
        let message = format!("The {} is reconciled", Object::kind(&()));
        let conditions = conditions::set(
            &[],
            conditions::AVAILABLE,
            conditions::Status::True,
            "Reconciled",
            &message,
            Some(1),
        );
        obj.status = Some(Status {
            observed_generation: Some(1),
            conditions,
        });

        let reconciling = tokio::spawn(reconcile(Arc::new(obj), ctx));

        server.done().await;
        let action = reconciling
            .await
            .expect("reconcile ran")
            .expect("reconcile succeeded");
        assert_eq!(action, Action::requeue(RESYNC));
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
