//! The controller of `Backup` (ops.example.org/v1), a kind this project adopted from
//! a CRD (`create api --from-crd`): its types, and so its status, are yours to shape.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::ResourceExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource};
use tracing::{info, instrument, warn};

use super::{Context, Error, Result, rule};

/// The kind this controller reconciles.
pub use crate::api::ops_example_org::v1::Backup as Object;

/// The field manager this controller writes with, server-side apply.
pub const FIELD_MANAGER: &str = "backup-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "backup";
/// How long to wait before reconciling an object again.
const RESYNC: Duration = Duration::from_secs(300);
/// How many objects are reconciled at once (controller-runtime's default); one object is
/// never reconciled twice at the same time.
const MAX_CONCURRENT_RECONCILES: u16 = 1;

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`).
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    run(ctx).boxed()
}

/// Watches `Backup` objects and reconciles each one until shutdown.
pub async fn run(ctx: Arc<Context>) {
    let objects = Api::<Object>::all(ctx.client.clone());
    let config = controller::Config::default().concurrency(MAX_CONCURRENT_RECONCILES);
    // TODO(user): to watch only some objects, filter them here, e.g.
    // `watcher::Config::default().labels("app.kubernetes.io/managed-by=me")`.
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

/// Acts on a `Backup`.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, _ctx: Arc<Context>) -> Result<Action> {
    // TODO(user): your logic here: make the world match `obj.spec`, and report it in the
    // status with server-side apply as `FIELD_MANAGER` (`PatchParams::apply(FIELD_MANAGER)`
    // on `Api::patch_status`); add the verbs you use (`patch` on `<plural>/status`) to `rbac_rules`.
    if obj.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
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
    vec![rule(&group, &resource, &["get", "list", "watch", "patch"])]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{mock, observe};
    use crate::testing;

    /// An object its schema allows: kopium could not derive `Default` for its spec.
    fn object() -> Object {
        let schema = testing::schema::<Object>();
        testing::example(&schema)
    }

    #[tokio::test]
    async fn an_object_is_reconciled_without_writing_to_it() {
        let (ctx, server) = mock::context();
        let path = format!("{}/test", Object::url_path(&(), Some("default")));
        server.insert(&path, &object());
        let before = server.get(&path);
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(object()), ctx, reconcile).await;
        let action = action.expect("reconcile succeeded");
        assert_eq!(action, Action::requeue(RESYNC));
        assert_eq!(server.get(&path), before, "the object changed");
        let writes = server.writes();
        assert!(writes.is_empty(), "{writes:?}");
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"requeue_after\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
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
