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

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tracing::{info, instrument, warn};

use super::{Context, Error, Result, conditions};
use crate::api::webapp::v1 as webappv1;

/// The finalizer this controller puts on every `Guestbook` so that `cleanup` runs before deletion.
pub const FINALIZER: &str = "webapp.mock.com/finalizer";
/// The field manager of the status this controller writes with server-side apply.
pub const FIELD_MANAGER: &str = "guestbook-controller";
/// How long to wait before reconciling a healthy object again.
const RESYNC: Duration = Duration::from_secs(300);
/// This controller's name in metrics and logs.
const CONTROLLER: &str = "guestbook";

/// Watches `Guestbook` objects and reconciles each one until shutdown.
pub async fn run(ctx: Arc<Context>) {
    let objects = Api::<webappv1::Guestbook>::all(ctx.client.clone());
    let controller =
        Controller::new(objects, watcher::Config::default().any_semantic()).shutdown_on_signal();
    let cache = controller.store();
    let readiness = ctx.readiness.clone();
    tokio::spawn(async move {
        // kube-runtime 5 wakes only the last of several tasks waiting for a store (the
        // controller waits on it too), so ask again every second rather than once.
        loop {
            match tokio::time::timeout(Duration::from_secs(1), cache.wait_until_ready()).await {
                Ok(Ok(())) => {
                    info!(controller = CONTROLLER, "cache synced");
                    readiness.synced();
                    break;
                }
                Ok(Err(_)) => break,
                Err(_) => continue,
            }
        }
    });
    controller
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => info!(object = %obj, "reconciled"),
                Err(err) => warn!(error = %err, "reconcile failed"),
            }
        })
        .await;
}

/// Brings the cluster to the state a `Guestbook` asks for.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<webappv1::Guestbook>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = obj
        .namespace()
        .ok_or_else(|| Error::InvalidObject("a namespaced Guestbook has no namespace".into()))?;
    let objects = Api::<webappv1::Guestbook>::namespaced(ctx.client.clone(), &namespace);
    let timer = ctx.metrics.reconcile(CONTROLLER);
    let object_ref = ObjectRef::from_obj(&*obj).erase();
    let action = finalizer(&objects, FINALIZER, obj, |event| async {
        match event {
            finalizer::Event::Apply(obj) => apply(&obj, &objects, &ctx).await,
            finalizer::Event::Cleanup(obj) => cleanup(&obj).await,
        }
    })
    .await
    .map_err(|err| Error::Finalizer(Box::new(err)))?;
    ctx.backoff.reset(&object_ref);
    timer.succeeded();
    Ok(action)
}

/// The object exists and is not being deleted: make the world match its spec.
async fn apply(
    obj: &webappv1::Guestbook,
    objects: &Api<webappv1::Guestbook>,
    ctx: &Context,
) -> Result<Action> {
    // TODO(user): your logic here. Read `obj.spec`, create or update what it asks for, and
    // report what you observed through the conditions below.

    let generation = obj.meta().generation;
    let current = obj.status.clone().unwrap_or_default();
    let was_available = current
        .conditions
        .iter()
        .any(|c| c.type_ == conditions::AVAILABLE && c.status == "True");
    let status = webappv1::GuestbookStatus {
        observed_generation: generation,
        conditions: conditions::set(
            &current.conditions,
            conditions::AVAILABLE,
            true,
            "Reconciled",
            "The Guestbook is reconciled",
            generation,
        ),
    };
    if obj.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({
            "apiVersion": webappv1::Guestbook::api_version(&()),
            "kind": webappv1::Guestbook::kind(&()),
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
            note: Some(format!("Guestbook {} is available", obj.name_any())),
            action: "Reconcile".into(),
            secondary: None,
        };
        ctx.recorder.publish(&event, &obj.object_ref(&())).await?;
    }
    Ok(Action::requeue(RESYNC))
}

/// The object is being deleted: release what `apply` made outside the cluster's ownership tree.
async fn cleanup(obj: &webappv1::Guestbook) -> Result<Action> {
    // TODO(user): delete external resources here. Objects with an owner reference to this
    // Guestbook are removed by Kubernetes' garbage collector; they need no code.
    info!(name = %obj.name_any(), "cleaned up");
    Ok(Action::await_change())
}

/// Decides when to retry after `reconcile` failed: 5 s, then doubling up to 5 minutes.
pub fn error_policy(obj: Arc<webappv1::Guestbook>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.failure(CONTROLLER, err.metric_label());
    let delay = ctx.backoff.next_delay(&ObjectRef::from_obj(&*obj).erase());
    warn!(error = %err, name = %obj.name_any(), retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let rule = |resource: &str, verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![webappv1::GROUP.into()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..PolicyRule::default()
    };
    vec![
        rule("guestbooks", &["get", "list", "watch", "patch", "update"]),
        rule("guestbooks/status", &["get", "patch", "update"]),
        rule("guestbooks/finalizers", &["update"]),
    ]
}

#[cfg(test)]
mod tests {
    use http::Method;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::{Value, json};

    use super::*;
    use crate::controller::mock;

    const PATH: &str = "/apis/webapp.mock.com/v1/namespaces/default/guestbooks/test";

    fn object() -> webappv1::Guestbook {
        let mut obj = webappv1::Guestbook::new("test", webappv1::GuestbookSpec::default());
        obj.meta_mut().namespace = Some("default".into());
        obj.meta_mut().generation = Some(1);
        obj
    }

    fn finalized(mut obj: webappv1::Guestbook) -> webappv1::Guestbook {
        obj.meta_mut().finalizers = Some(vec![FINALIZER.into()]);
        obj
    }

    fn json_of(obj: &webappv1::Guestbook) -> Value {
        serde_json::to_value(obj).expect("a Guestbook serializes")
    }

    #[tokio::test]
    async fn a_new_object_gets_the_finalizer_first() {
        let (ctx, mut server) = mock::context();
        let obj = object();
        let reconciling = tokio::spawn(reconcile(Arc::new(obj.clone()), ctx));

        let patch = server
            .expect(Method::PATCH, &format!("{PATH}?"), json_of(&finalized(obj)))
            .await;
        assert_eq!(patch[1]["op"], "add");
        assert_eq!(patch[1]["path"], "/metadata/finalizers");
        assert_eq!(patch[1]["value"], json!([FINALIZER]));

        let action = reconciling
            .await
            .expect("reconcile ran")
            .expect("reconcile succeeded");
        assert_eq!(action, Action::await_change());
        server.done().await;
    }

    #[tokio::test]
    async fn a_finalized_object_gets_its_status_applied() {
        let (ctx, mut server) = mock::context();
        let obj = finalized(object());
        let metrics = ctx.metrics.clone();
        let reconciling = tokio::spawn(reconcile(Arc::new(obj.clone()), ctx));

        let path = format!("{PATH}/status?&force=true&fieldManager={FIELD_MANAGER}");
        let patch = server.expect(Method::PATCH, &path, json_of(&obj)).await;
        assert_eq!(patch["kind"], "Guestbook");
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
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"success\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn an_up_to_date_status_is_not_written_again() {
        let (ctx, server) = mock::context();
        let mut obj = finalized(object());
        let conditions = conditions::set(
            &[],
            conditions::AVAILABLE,
            true,
            "Reconciled",
            "The Guestbook is reconciled",
            Some(1),
        );
        obj.status = Some(webappv1::GuestbookStatus {
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
    async fn a_deleted_object_is_cleaned_up_and_released() {
        let (ctx, mut server) = mock::context();
        let mut obj = finalized(object());
        obj.meta_mut().deletion_timestamp = Some(Time(Timestamp::now()));
        let reconciling = tokio::spawn(reconcile(Arc::new(obj.clone()), ctx));

        let mut released = obj.clone();
        released.meta_mut().finalizers = None;
        let patch = server
            .expect(Method::PATCH, &format!("{PATH}?"), json_of(&released))
            .await;
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/finalizers/0", "value": FINALIZER})
        );
        assert_eq!(
            patch[1],
            json!({"op": "remove", "path": "/metadata/finalizers/0"})
        );

        let action = reconciling
            .await
            .expect("reconcile ran")
            .expect("reconcile succeeded");
        assert_eq!(action, Action::await_change());
        server.done().await;
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
        let counted = format!("{{controller=\"{CONTROLLER}\",error=\"invalid_object\"}} 3");
        assert!(
            ctx.metrics.encode().contains(&counted),
            "{}",
            ctx.metrics.encode()
        );
    }
}
