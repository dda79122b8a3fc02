//! A finalizer around a reconcile, in one pass: kube's `finalizer`, except that the reconcile
//! that adds the finalizer goes on to apply the object instead of waiting for the watch event
//! of its own patch.

use std::fmt::Debug;
use std::str::FromStr;
use std::sync::Arc;

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
/// controller's watch takes the patch's event as its own write (`Context::writes`).
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
    let obj =
        if obj.meta().deletion_timestamp.is_none() && !obj.finalizers().iter().any(|f| f == name) {
            let added = add(api, name, &obj).await.map_err(wrap)?;
            ctx.writes.wrote_self(&added);
            Arc::new(added)
        } else {
            obj
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
    let current = obj.finalizers();
    let (test, add, value) = match current.is_empty() {
        true => (
            "/metadata/finalizers",
            "/metadata/finalizers",
            vec![name].into(),
        ),
        false => (
            "/metadata/finalizers",
            "/metadata/finalizers/-",
            name.into(),
        ),
    };
    let expected = match current.is_empty() {
        true => serde_json::Value::Null,
        false => current.into(),
    };
    let patch = json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: path(test)?,
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
