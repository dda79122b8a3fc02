//! The controller of `Backup` (ops.example.org/v1), a kind this project adopted from
//! a CRD (`create api --from-crd`): its types, and so its status, are yours to shape.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use kube_scaffold_runtime::controller::{Builder, Result, rule};
use tracing::instrument;

use crate::controller::Context;

/// The kind this controller reconciles.
pub use crate::api::ops_example_org::v1::Backup as Object;

/// The field manager this controller writes with, server-side apply.
pub const FIELD_MANAGER: &str = "backup-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "backup";

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`). Every
/// `Backup` is reconciled when it changes and again about every 5 minutes; a failed
/// reconcile is retried after 5 s, then later and later up to 5 minutes.
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    // TODO(user): to watch only some objects, select them, e.g.
    // `.watcher(kube::runtime::watcher::Config::default().labels("tier=web"))`.
    Builder::new(CONTROLLER).start(ctx, reconcile)
}

/// Acts on a `Backup`.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, _ctx: Arc<Context>) -> Result<Action> {
    // TODO(user): your logic here: make the world match `obj.spec`, and report it in the
    // status with server-side apply as `FIELD_MANAGER` (`PatchParams::apply(FIELD_MANAGER)`
    // on `Api::patch_status`); add the verbs you use (`patch` on `<plural>/status`) to `rbac_rules`.
    // Reconciled again when it changes, and at the controller's resync.
    Ok(Action::await_change())
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    vec![rule(&group, &resource, &["get", "list", "watch"])]
}

#[cfg(test)]
mod tests {
    use kube_scaffold_runtime::controller::observe;
    use kube_scaffold_runtime::testing;

    use super::*;

    /// An object its schema allows: kopium could not derive `Default` for its spec.
    fn object() -> Object {
        let schema = testing::schema::<Object>();
        testing::example(&schema)
    }

    #[tokio::test]
    async fn an_object_is_reconciled_without_writing_to_it() {
        let (ctx, server) = crate::controller::mocked();
        let path = format!("{}/test", Object::url_path(&(), Some("default")));
        server.insert(&path, &object());
        let before = server.get(&path);
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(object()), ctx, reconcile).await;
        let action = action.expect("reconcile succeeded");
        assert_eq!(action, Action::await_change(), "resynced by the controller");
        assert_eq!(server.get(&path), before, "the object changed");
        let writes = server.writes();
        assert!(writes.is_empty(), "{writes:?}");
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"success\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }
}
