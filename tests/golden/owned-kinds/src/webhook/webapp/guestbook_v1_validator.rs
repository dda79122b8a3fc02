//! The validating webhook of `Guestbook` v1: the API server posts every object created
//! or updated to `/validate-webapp-mock-com-v1-guestbook` and refuses it when a `validate_*` says why.

use kube_scaffold_runtime::webhook::{Hook, Validator, Verdict};

/// The kind this webhook reviews.
pub use crate::api::webapp::v1::Guestbook as Object;

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::validating(Validator {
        create: validate_create,
        update: validate_update,
        delete: validate_delete,
    })
    .refusing(refused())
}

/// An object your checks refuse and the kind's schema allows: `make test-e2e` creates it (a
/// dry run) to see the API server ask this webhook and be refused. `None` checks nothing.
pub fn refused() -> Option<Object> {
    let mut obj = Object::new("refused", Default::default());
    obj.spec.foo = Some(String::new());
    Some(obj)
}

/// A new object: `Ok` with warnings for whoever sent it (often none), or `Err` with the
/// reason it is refused.
pub fn validate_create(obj: &Object) -> Verdict {
    validate(obj)
}

/// A changed object.
pub fn validate_update(_old: &Object, new: &Object) -> Verdict {
    // TODO(user): refuse changes to fields that must not change, comparing `_old` and `new`.
    validate(new)
}

/// An object to delete; asked only if `DELETE` is in the hook's operations.
pub fn validate_delete(_obj: &Object) -> Verdict {
    Ok(Vec::new())
}
fn validate(obj: &Object) -> Verdict {
    // TODO(user): your checks, e.g.:
    if obj.spec.foo.as_deref() == Some("") {
        return Err("spec.foo must not be empty".into());
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::core::DynamicObject;
    use kube::core::admission::{AdmissionResponse, AdmissionReview};

    use super::*;

    fn answer(operation: &str, obj: &Object) -> AdmissionResponse {
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4b51-a3b6-6b5e1c3e0f3d",
                "kind": {"group": "webapp.mock.com", "version": "v1", "kind": "Guestbook"},
                "resource": {"group": "webapp.mock.com", "version": "v1", "resource": "guestbooks"},
                "operation": operation,
                "userInfo": {"username": "test"},
                "object": obj,
                "oldObject": obj,
            }
        }))
        .expect("an AdmissionReview");
        hook().review(review).response.expect("a response")
    }
    fn valid(valid: bool) -> Object {
        let mut obj = Object::new("test", Default::default());
        obj.spec.foo = Some(if valid { "bar" } else { "" }.into());
        obj
    }

    #[test]
    fn a_valid_object_is_allowed() {
        for operation in ["CREATE", "UPDATE"] {
            let response = answer(operation, &valid(true));
            assert!(response.allowed, "{operation}: {:?}", response.result);
        }
    }

    #[test]
    fn an_invalid_object_is_refused_with_the_reason() {
        for operation in ["CREATE", "UPDATE"] {
            let response = answer(operation, &valid(false));
            assert!(!response.allowed, "{operation}");
            assert_eq!(response.result.message, "spec.foo must not be empty");
        }
    }

    #[test]
    fn the_example_for_the_end_to_end_test_is_refused() {
        let response = answer("CREATE", &refused().expect("an example"));
        assert!(!response.allowed);
    }

    #[test]
    fn an_object_being_deleted_may_lose_its_finalizers_whatever_its_spec() {
        let mut obj = valid(false);
        obj.metadata.deletion_timestamp = Some(Time(Default::default()));
        let response = answer("UPDATE", &obj);
        assert!(response.allowed, "{:?}", response.result);
    }

    #[test]
    fn a_delete_is_allowed() {
        let response = answer("DELETE", &valid(false));
        assert!(response.allowed, "{:?}", response.result);
    }
}
