//! The defaulting webhook of `Backup` v1: the API server posts every created or
//! updated object to `/mutate-ops-example-org-v1-backup` and stores what `default` makes of it.

use kube_scaffold_runtime::webhook::Hook;

/// The kind this webhook reviews.
pub use crate::api::ops_example_org::v1::Backup as Object;

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::defaulting(default)
}

/// Fills in what `obj` left unset. It must be idempotent: the API server may call it again on
/// an object it already defaulted.
pub fn default(_obj: &mut Object) {
    // TODO(user): set your defaults.
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use kube::core::DynamicObject;
    use kube::core::admission::AdmissionReview;
    use kube_scaffold_runtime::testing;
    use proptest::prelude::*;

    use super::*;

    fn review(obj: &Object) -> AdmissionReview<DynamicObject> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4b51-a3b6-6b5e1c3e0f3d",
                "kind": {"group": "ops.example.org", "version": "v1", "kind": "Backup"},
                "resource": {"group": "ops.example.org", "version": "v1", "resource": "backups"},
                "operation": "CREATE",
                "userInfo": {"username": "test"},
                "object": obj,
            }
        }))
        .expect("an AdmissionReview")
    }

    /// The schema of Backup v1, which the tests' objects follow.
    fn schema() -> JSONSchemaProps {
        testing::schema::<Object>()
    }

    #[test]
    fn the_patch_makes_of_any_object_what_default_makes_of_it() {
        testing::for_any(&schema(), |obj: Object| {
            let answer = hook().review(review(&obj));
            let response = answer.response.expect("a response");
            prop_assert!(response.allowed, "{:?}", response.result);
            let mut patched = serde_json::to_value(&obj).unwrap();
            if let Some(patch) = response.patch {
                let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
                json_patch::patch(&mut patched, &patch).unwrap();
            }
            let mut expected = obj;
            default(&mut expected);
            prop_assert_eq!(patched, serde_json::to_value(expected).unwrap());
            Ok(())
        });
    }
}
