//! The controller of `Config` (webapp.mock.com/v1).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::Event;
use kube::{Resource, ResourceExt};
use kube_scaffold_runtime::conditions;
use kube_scaffold_runtime::controller::{Builder, Result, finalizer, rule};
use tracing::{info, instrument};

use crate::api::webapp::v1 as webappv1;
use crate::controller::Context;

/// The kind this controller reconciles.
pub type Object = webappv1::Config;
/// Its status.
pub type Status = webappv1::ConfigStatus;

/// The finalizer this controller puts on every `Config` so that `cleanup` runs before deletion.
pub const FINALIZER: &str = "webapp.mock.com/finalizer";
/// The field manager of the status this controller writes with server-side apply.
pub const FIELD_MANAGER: &str = "config-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "config";
/// The conditions this controller sets; others' stay theirs.
const CONDITIONS: &[&str] = &[conditions::AVAILABLE];

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`). Every
/// `Config` is reconciled when its spec, labels, annotations or finalizers change (not its
/// status alone), and again about every 5 minutes (`.resync(..)`), up to 32 at once
/// (`.concurrency(..)`); a failed reconcile is retried after 5 s, then later and later up to 5
/// minutes.
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    // TODO(user): objects this kind owns (a Deployment, a ConfigMap...) go in an `OWNED` list
    // with a `Child` impl each (`kube_scaffold_runtime::children`), then `.owns(OWNED)` here:
    // `kube-scaffold create api --group webapp --version v1 --kind Config
    // --owns apps/v1/Deployment` adds them, keeping your edits.
    Builder::new(CONTROLLER).start(ctx, reconcile)
}

/// Brings the cluster to the state a `Config` asks for.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, ctx: Arc<Context>) -> Result<Action> {
    let objects = Api::<Object>::all(ctx.client.clone());
    // The finalizer is added and the object applied in this one reconcile.
    finalizer(&ctx, &objects, FINALIZER, obj, |event| async {
        match event {
            Event::Apply(obj) => apply(&obj, &objects, &ctx).await,
            Event::Cleanup(obj) => cleanup(&obj).await,
        }
    })
    .await
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

/// The object is being deleted: release what `apply` made outside the cluster's ownership tree.
async fn cleanup(obj: &Object) -> Result<Action> {
    // TODO(user): delete external resources here. Objects with an owner reference to this
    // one are removed by Kubernetes' garbage collector; they need no code.
    info!(name = %obj.name_any(), "cleaned up");
    Ok(Action::await_change())
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    let status = format!("{resource}/status");
    let finalizers = format!("{resource}/finalizers");
    // The finalizer is added and removed with a JSON patch.
    let edit = ["get", "list", "watch", "patch"];
    vec![
        rule(&group, &resource, &edit),
        // Status is written with server-side apply.
        rule(&group, &status, &["get", "patch"]),
        rule(&group, &finalizers, &["update"]),
    ]
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kube_scaffold_runtime::controller::observe;
    use kube_scaffold_runtime::testing::mock::ApiServer;
    use serde_json::{Value, json};

    use super::*;
    use crate::api::webapp::v1::ConfigSpec as Spec;

    /// Where the test object lives on the API server.
    fn path() -> String {
        format!("{}/test", Object::url_path(&(), None))
    }

    fn object() -> Object {
        let mut obj = Object::new("test", Spec::default());
        obj.meta_mut().generation = Some(1);
        obj
    }

    /// An object as `apply` sees it: with the finalizer.
    fn ready() -> Object {
        let mut obj = object();
        obj.meta_mut().finalizers = Some(vec![FINALIZER.into()]);
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
    async fn a_new_object_gets_the_finalizer_then_its_status_in_one_reconcile() {
        let (ctx, server) = serving(&object());
        reconciled(object(), &ctx).await;

        let stored = server.get(&path()).expect("the object");
        assert_eq!(stored["metadata"]["finalizers"], json!([FINALIZER]));
        let writes = server.writes();
        assert_eq!(writes[0].path, path(), "the finalizer first: {writes:?}");
        assert_eq!(stored["status"]["observedGeneration"], 1, "{writes:?}");
    }

    #[tokio::test]
    async fn an_object_gets_its_status_applied() {
        let (ctx, server) = serving(&ready());
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(ready()), ctx, reconcile).await;
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
    async fn a_deleted_object_is_cleaned_up_and_released() {
        let mut obj = ready();
        obj.meta_mut().deletion_timestamp = Some(Time(Timestamp::now()));
        let (ctx, server) = serving(&obj);
        let action = reconcile(Arc::new(obj), ctx).await;
        assert_eq!(action.expect("reconcile succeeded"), Action::await_change());

        let stored = server.get(&path()).expect("the object");
        assert_eq!(stored["metadata"]["finalizers"], json!([]));
        let writes = server.writes();
        assert_eq!(writes.len(), 1, "only the finalizer is removed: {writes:?}");
        let checked = &writes[0].body[0];
        assert_eq!(checked["op"], "test", "the patch checks the finalizer");
    }
}
