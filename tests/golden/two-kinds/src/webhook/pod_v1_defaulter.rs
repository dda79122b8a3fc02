//! The defaulting webhook of `Pod` v1: the API server posts every created or
//! updated object to `/mutate--v1-pod` and stores what `default` makes of it.

use kube_scaffold_runtime::webhook::Hook;

/// The kind this webhook reviews.
pub use k8s_openapi::api::core::v1::Pod as Object;

/// Kubernetes' own kind: the API server does not send its objects from these namespaces,
/// which the cluster and the manager need while the manager is down.
const LEFT_OUT: &[&str] = &[
    // The cluster's own.
    "kube-system",
    // The manager's: config/default's namespace.
    "guestbook-system",
];

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::defaulting(default).outside(LEFT_OUT)
}

/// Fills in what `obj` left unset. It must be idempotent: the API server may call it again on
/// an object it already defaulted.
pub fn default(_obj: &mut Object) {
    // TODO(user): set your defaults. Every Pod created or updated in the cluster (but in
    // the namespaces `hook` leaves out) comes through here: keep it quick.
}

#[cfg(test)]
mod tests {
    use kube::core::DynamicObject;
    use kube::core::admission::AdmissionReview;

    use super::*;

    fn review(obj: &Object) -> AdmissionReview<DynamicObject> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4b51-a3b6-6b5e1c3e0f3d",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "CREATE",
                "userInfo": {"username": "test"},
                "object": obj,
            }
        }))
        .expect("an AdmissionReview")
    }

    fn object() -> Object {
        Object {
            metadata: kube::api::ObjectMeta {
                name: Some("test".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Object::default()
        }
    }

    #[test]
    fn the_patch_makes_of_an_object_what_default_makes_of_it() {
        let answer = hook().review(review(&object()));
        let response = answer.response.expect("a response");
        assert!(response.allowed, "{:?}", response.result);
        let mut patched = serde_json::to_value(object()).unwrap();
        if let Some(patch) = response.patch {
            let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
            json_patch::patch(&mut patched, &patch).unwrap();
        }
        let mut expected = object();
        default(&mut expected);
        assert_eq!(patched, serde_json::to_value(expected).unwrap());
    }
}
