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

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use kube_scaffold_runtime::conditions;
use kube_scaffold_runtime::controller::{Builder, Error, Result, rule};
use tracing::instrument;

use crate::api::webapp::v1 as webappv1;
use crate::controller::Context;

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

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`). Every
/// `Guestbook` is reconciled when its spec, labels, annotations or finalizers change (not its
/// status alone), and again about every 5 minutes (`.resync(..)`), up to 32 at once
/// (`.concurrency(..)`); a failed reconcile is retried after 5 s, then later and later up to 5
/// minutes.
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    // TODO(user): objects this kind owns (a Deployment, a ConfigMap...) go in an `OWNED` list
    // with a `Child` impl each (`kube_scaffold_runtime::children`), then `.owns(OWNED)` here:
    // `kube-scaffold create api --group webapp --version v1 --kind Guestbook
    // --owns apps/v1/Deployment` adds them, keeping your edits.
    Builder::new(CONTROLLER).start(ctx, reconcile)
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
    if obj.meta().deletion_timestamp.is_some() {
        // Being deleted (a foreground deletion waits for its children, or another's
        // finalizer): applying now would make again what the garbage collector removes.
        return Ok(Action::await_change());
    }
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
        conditions::apply_status(objects, obj, &status, CONDITIONS, FIELD_MANAGER).await?;
    }
    if available == conditions::Status::True && !was_available {
        let note = format!("{} {} is available", Object::kind(&()), obj.name_any());
        ctx.publish(obj, EventType::Normal, "Available", note).await;
    }
    Ok(Action::await_change())
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    let status = format!("{resource}/status");
    vec![
        rule(&group, &resource, &["get", "list", "watch"]),
        // Status is written with server-side apply.
        rule(&group, &status, &["get", "patch"]),
    ]
}

#[cfg(test)]
mod tests {
    use kube_scaffold_runtime::controller::observe;
    use kube_scaffold_runtime::testing::mock::ApiServer;
    use serde_json::Value;

    use super::*;
    use crate::api::webapp::v1::GuestbookSpec as Spec;

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

    /// A fake API server holding `obj`, and a context that talks to it.
    fn serving(obj: &Object) -> (Arc<Context>, ApiServer) {
        let (ctx, server) = crate::controller::mocked();
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
        let (ctx, server) = serving(&object());
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(object()), ctx, reconcile).await;
        let action = action.expect("reconcile succeeded");
        assert_eq!(action, Action::await_change(), "resynced by the controller");

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
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"success\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn an_object_becomes_available_with_an_event() {
        let (ctx, server) = serving(&object());
        reconciled(object(), &ctx).await;

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
        let (ctx, server) = serving(&object());
        reconciled(object(), &ctx).await;
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
}
