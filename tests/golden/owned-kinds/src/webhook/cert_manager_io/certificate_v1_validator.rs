//! The validating webhook of `Certificate` v1: the API server posts every object created
//! or updated to `/validate-cert-manager-io-v1-certificate` and refuses it when a `validate_*` says why.

use kube_scaffold_runtime::webhook::{Hook, Validator, Verdict};

/// The kind this webhook reviews.
pub use crate::api::cert_manager_io::v1::Certificate as Object;

/// Another project's kind: the API server does not send its objects from these namespaces,
/// which the cluster and the manager need while the manager is down.
const LEFT_OUT: &[&str] = &[
    // The cluster's own.
    "kube-system",
    // The manager's: config/default's namespace.
    "shop-system",
];

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::validating(Validator {
        create: validate_create,
        update: validate_update,
        delete: validate_delete,
    })
    .outside(LEFT_OUT)
    .refusing(refused())
}

/// An object your checks refuse and the kind's schema allows: `make test-e2e` creates it (a
/// dry run) to see the API server ask this webhook and be refused. `None` checks nothing.
pub fn refused() -> Option<Object> {
    None
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
fn validate(_obj: &Object) -> Verdict {
    // TODO(user): your checks. Every Certificate created or updated in the cluster (but in the
    // namespaces `hook` leaves out) comes through here: keep it quick.
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::core::DynamicObject;
    use kube::core::admission::{AdmissionResponse, AdmissionReview};
    use kube_scaffold_runtime::testing;
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseResult;

    use super::*;

    fn answer(operation: &str, obj: &Object) -> AdmissionResponse {
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0df28fbd-5f5f-4b51-a3b6-6b5e1c3e0f3d",
                "kind": {"group": "cert-manager.io", "version": "v1", "kind": "Certificate"},
                "resource": {"group": "cert-manager.io", "version": "v1", "resource": "certificates"},
                "operation": operation,
                "userInfo": {"username": "test"},
                "object": obj,
                "oldObject": obj,
            }
        }))
        .expect("an AdmissionReview");
        hook().review(review).response.expect("a response")
    }
    /// The schema of Certificate v1, which the tests' objects follow.
    fn schema() -> JSONSchemaProps {
        testing::external_schema::<Object>()
    }

    /// `response` says what `verdict` says.
    fn says(response: AdmissionResponse, verdict: Verdict) -> TestCaseResult {
        match verdict {
            Ok(warnings) => {
                prop_assert!(response.allowed, "{:?}", response.result);
                prop_assert_eq!(response.warnings.unwrap_or_default(), warnings);
            }
            Err(reason) => {
                prop_assert!(!response.allowed);
                prop_assert_eq!(response.result.message, reason);
            }
        }
        Ok(())
    }

    #[test]
    fn any_object_is_answered_as_the_validate_functions_say() {
        testing::for_any(&schema(), |obj: Object| {
            says(answer("CREATE", &obj), validate_create(&obj))?;
            says(answer("UPDATE", &obj), validate_update(&obj, &obj))?;
            says(answer("DELETE", &obj), validate_delete(&obj))
        });
    }

    #[test]
    fn an_object_being_deleted_may_lose_its_finalizers_whatever_its_spec() {
        testing::for_any(&schema(), |mut obj: Object| {
            obj.metadata.deletion_timestamp = Some(Time(Default::default()));
            let response = answer("UPDATE", &obj);
            prop_assert!(response.allowed, "{:?}", response.result);
            Ok(())
        });
    }
}
