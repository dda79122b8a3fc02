//! The defaulting webhook of `Guestbook` v1: the API server posts every created or
//! updated object to `/mutate-webapp-mock-com-v1-guestbook` and stores what `default` makes of it.

use kube_scaffold_runtime::webhook::Hook;

/// The kind this webhook reviews.
pub use crate::api::webapp::v1::Guestbook as Object;

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::defaulting(default)
}

/// Fills in what `obj` left unset. It must be idempotent: the API server may call it again on
/// an object it already defaulted.
pub fn default(obj: &mut Object) {
    // TODO(user): set your defaults, e.g.:
    if obj.spec.foo.is_none() {
        obj.spec.foo = Some("default".into());
    }
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
                "kind": {"group": "webapp.mock.com", "version": "v1", "kind": "Guestbook"},
                "resource": {"group": "webapp.mock.com", "version": "v1", "resource": "guestbooks"},
                "operation": "CREATE",
                "userInfo": {"username": "test"},
                "object": obj,
            }
        }))
        .expect("an AdmissionReview")
    }

    #[test]
    fn a_new_object_gets_its_defaults_as_a_json_patch() {
        let answer = hook().review(review(&Object::new("test", Default::default())));
        let response = answer.response.expect("a response");
        assert!(response.allowed, "{:?}", response.result);
        let patch: serde_json::Value =
            serde_json::from_slice(&response.patch.expect("a patch")).unwrap();
        let expected = serde_json::json!([{"op": "add", "path": "/spec/foo", "value": "default"}]);
        assert_eq!(patch, expected);
    }

    #[test]
    fn an_object_with_its_defaults_is_left_alone() {
        let mut obj = Object::new("test", Default::default());
        default(&mut obj);
        let answer = hook().review(review(&obj));
        let response = answer.response.expect("a response");
        assert!(response.allowed && response.patch.is_none(), "{response:?}");
    }
}
