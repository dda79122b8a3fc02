//! A finalizer around a reconcile, in one pass: kube's `finalizer`, except that the reconcile
//! that adds the finalizer goes on to apply the object instead of waiting for the watch event
//! of its own patch.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use json_patch::{AddOperation, PatchOperation, TestOperation, jsonptr::PointerBuf};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Context, Error, Result};

/// Runs `reconcile` on `obj` under the finalizer `name`, as `kube::runtime::finalizer` does:
/// `Event::Apply` while the object lives, with the finalizer added first; `Event::Cleanup` once
/// it is being deleted, and the finalizer removed when that succeeds. Where kube's returns after
/// adding the finalizer and leaves the rest to the watch event of that patch (a second
/// reconcile of every new object), this one applies the patched object at once, and the
/// controllers' watches take the addition of `name` as no change worth a reconcile: nor is its
/// removal by hand, which the next resync mends.
pub async fn finalizer<K, S, F, Fut>(
    ctx: &Context<S>,
    api: &Api<K>,
    name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Action>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action>>,
{
    let wrap = |err| Error::Finalizer(Box::new(err));
    // Before any patch: its watch event may come before its answer. Known from the first
    // reconcile on: an object whose change was hashed before may be reconciled once more.
    ctx.finalizers.add(name);
    let deleting = obj.meta().deletion_timestamp.is_some();
    let obj = match deleting || obj.finalizers().iter().any(|f| f == name) {
        true => obj,
        false => Arc::new(add(api, name, &obj).await.map_err(wrap)?),
    };
    finalizer::finalizer(api, name, obj, reconcile)
        .await
        .map_err(wrap)
}

/// Adds the finalizer `name` to `obj`, failing if its finalizers changed since it was read
/// (the API server does not deduplicate them): the object as patched.
async fn add<K>(api: &Api<K>, name: &str, obj: &K) -> Result<K, finalizer::Error<Error>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let path =
        |path: &str| PointerBuf::from_str(path).map_err(|_| finalizer::Error::InvalidFinalizer);
    // The finalizers as read (none: no field), then ours added: a new list, or at its end.
    let current = obj.finalizers();
    let (expected, add, value) = match current.is_empty() {
        true => (
            serde_json::Value::Null,
            "/metadata/finalizers",
            vec![name].into(),
        ),
        false => (current.into(), "/metadata/finalizers/-", name.into()),
    };
    let patch = json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: path("/metadata/finalizers")?,
            value: expected,
        }),
        PatchOperation::Add(AddOperation {
            path: path(add)?,
            value,
        }),
    ]);
    let object = obj
        .meta()
        .name
        .as_deref()
        .ok_or(finalizer::Error::UnnamedObject)?;
    api.patch(object, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .map_err(finalizer::Error::AddFinalizer)
}

/// The finalizers that [`finalizer`] adds, which the controllers' watches leave out of what
/// makes a change (`Context::finalizers`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Finalizers(Arc<Mutex<BTreeSet<String>>>);

impl Finalizers {
    /// Records that `name` is added in the reconcile that applies.
    pub(crate) fn add(&self, name: &str) {
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !names.contains(name) {
            names.insert(name.to_string());
        }
    }

    /// The finalizers of `obj` but those [`finalizer`] adds.
    pub(crate) fn others<'a, K: Resource>(&self, obj: &'a K) -> Vec<&'a str> {
        let names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let all = obj.meta().finalizers.iter().flatten();
        all.filter(|f| !names.contains(*f))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::testing::mock;

    #[tokio::test]
    async fn the_reconcile_that_adds_the_finalizer_applies_the_patched_object() {
        const NAME: &str = "example.com/cleanup";
        let path = "/api/v1/namespaces/default/configmaps/a";
        let (ctx, server) = mock::context();
        let mut obj = ConfigMap::default();
        obj.metadata.name = Some("a".into());
        obj.metadata.namespace = Some("default".into());
        obj.metadata.finalizers = Some(vec!["other.io/x".into()]);
        server.insert(path, &obj);
        let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), "default");
        let applied = Mutex::new(None);
        let action = finalizer(&ctx, &api, NAME, Arc::new(obj), |event| async {
            if let Event::Apply(obj) = event {
                *applied.lock().unwrap() = Some(obj.finalizers().to_vec());
            }
            Ok(Action::await_change())
        })
        .await;
        assert_eq!(action.expect("reconciled"), Action::await_change());
        let finalizers = ["other.io/x".to_string(), NAME.to_string()];
        assert_eq!(
            applied.into_inner().unwrap().as_deref(),
            Some(&finalizers[..])
        );
        let stored = server.get(path).expect("the object");
        assert_eq!(
            stored["metadata"]["finalizers"],
            serde_json::json!(finalizers)
        );
        let stored: ConfigMap = serde_json::from_value(stored).unwrap();
        assert_eq!(ctx.finalizers.others(&stored), ["other.io/x"]);
    }
}
