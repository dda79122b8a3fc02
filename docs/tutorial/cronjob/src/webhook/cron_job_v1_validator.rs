// Copyright 2026.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The validating webhook of `CronJob` v1: the API server posts every object created or
//! updated to `/validate-batch-tutorial-kubebuilder-io-v1-cronjob` and refuses it when
//! `validate` says why. The book's `CronJobValidator`: what a schema cannot say.

use kube::ResourceExt;
use kube_scaffold_runtime::webhook::{Hook, Validator, Verdict};

/// The kind this webhook reviews.
pub use crate::api::batch::v1::CronJob as Object;

/// The longest name of a CronJob: its Jobs' names add 11 characters (`-` and a Unix time)
/// and must stay DNS labels of 63.
pub const NAME_MAX: usize = 63 - 11;

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::validating(Validator {
        create: validate_create,
        update: validate_update,
        delete: validate_delete,
    })
    .refusing(refused())
}

/// A CronJob the schema allows and these checks refuse: `make test-e2e` creates it (a dry
/// run) to see the API server ask this webhook and be refused.
pub fn refused() -> Option<Object> {
    let mut obj = Object::new("refused", Default::default());
    obj.spec.schedule = "every day".into();
    Some(obj)
}

/// A new CronJob.
pub fn validate_create(obj: &Object) -> Verdict {
    validate(obj)
}

/// A changed CronJob: the same checks as a new one.
pub fn validate_update(_old: &Object, new: &Object) -> Verdict {
    validate(new)
}

/// A CronJob to delete; asked only if `DELETE` is in the hook's operations.
pub fn validate_delete(_obj: &Object) -> Verdict {
    Ok(Vec::new())
}

/// Its name short enough for its Jobs', and a schedule that parses; every reason at once,
/// as the book's `field.ErrorList`.
fn validate(obj: &Object) -> Verdict {
    let mut invalid = Vec::new();
    let name = obj.name_any();
    if name.len() > NAME_MAX {
        let why = format!("must be no more than {NAME_MAX} characters");
        invalid.push(format!("metadata.name: Invalid value: {name:?}: {why}"));
    }
    let schedule = &obj.spec.schedule;
    if let Err(err) = obj.spec.cron() {
        invalid.push(format!("spec.schedule: Invalid value: {schedule:?}: {err}"));
    }
    match invalid.is_empty() {
        true => Ok(Vec::new()),
        false => Err(invalid.join(", ")),
    }
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
                "kind": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "kind": "CronJob"},
                "resource": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "resource": "cronjobs"},
                "operation": operation,
                "userInfo": {"username": "test"},
                "object": obj,
                "oldObject": obj,
            }
        }))
        .expect("an AdmissionReview");
        hook().review(review).response.expect("a response")
    }

    fn cronjob(name: &str, schedule: &str) -> Object {
        let mut obj = Object::new(name, Default::default());
        obj.spec.schedule = schedule.into();
        obj
    }

    #[test]
    fn a_valid_cronjob_is_allowed() {
        for operation in ["CREATE", "UPDATE"] {
            for schedule in ["*/5 * * * *", "@hourly", "*/10 * * * * *"] {
                let response = answer(operation, &cronjob("nightly", schedule));
                assert!(
                    response.allowed,
                    "{operation} {schedule}: {:?}",
                    response.result
                );
            }
        }
    }

    #[test]
    fn a_bad_schedule_and_a_long_name_are_refused_with_every_reason() {
        let long = "x".repeat(NAME_MAX + 1);
        for operation in ["CREATE", "UPDATE"] {
            let response = answer(operation, &cronjob(&long, "every day"));
            assert!(!response.allowed, "{operation}");
            let said = &response.result.message;
            assert!(said.starts_with(&format!("metadata.name: Invalid value: \"{long}\": must be no more than 52 characters, spec.schedule: Invalid value: \"every day\": ")), "{said}");
        }
        let response = answer("CREATE", &cronjob(&"x".repeat(NAME_MAX), "@daily"));
        assert!(response.allowed, "{:?}", response.result);
    }

    #[test]
    fn the_example_for_the_end_to_end_test_is_refused() {
        let response = answer("CREATE", &refused().expect("an example"));
        assert!(!response.allowed);
    }

    #[test]
    fn a_cronjob_being_deleted_may_lose_its_finalizers_whatever_its_spec() {
        let mut obj = cronjob("nightly", "every day");
        obj.metadata.deletion_timestamp = Some(Time(Default::default()));
        let response = answer("UPDATE", &obj);
        assert!(response.allowed, "{:?}", response.result);
    }
}
