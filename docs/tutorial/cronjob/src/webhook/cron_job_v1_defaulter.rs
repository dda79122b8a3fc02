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

//! The defaulting webhook of `CronJob` v1: the API server posts every created or updated
//! object to `/mutate-batch-tutorial-kubebuilder-io-v1-cronjob` and stores what `default`
//! makes of it. The book's `CronJobDefaulter`.

use kube_scaffold_runtime::webhook::Hook;

/// The kind this webhook reviews.
pub use crate::api::batch::v1::CronJob as Object;

/// How many successful Jobs a CronJob keeps when it does not say.
pub const SUCCESSFUL_JOBS_HISTORY_LIMIT: i32 = 3;
/// How many failed Jobs a CronJob keeps when it does not say.
pub const FAILED_JOBS_HISTORY_LIMIT: i32 = 1;

/// The webhook, as `super::hooks` lists it.
pub fn hook() -> Hook {
    Hook::defaulting(default)
}

/// Fills in what `obj` left unset: not suspended, and the history limits. The concurrency
/// policy's default (`Allow`) is the schema's. Idempotent: the API server may call it again on
/// an object it already defaulted.
pub fn default(obj: &mut Object) {
    let spec = &mut obj.spec;
    spec.suspend.get_or_insert(false);
    (spec.successful_jobs_history_limit).get_or_insert(SUCCESSFUL_JOBS_HISTORY_LIMIT);
    (spec.failed_jobs_history_limit).get_or_insert(FAILED_JOBS_HISTORY_LIMIT);
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
                "kind": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "kind": "CronJob"},
                "resource": {"group": "batch.tutorial.kubebuilder.io", "version": "v1", "resource": "cronjobs"},
                "operation": "CREATE",
                "userInfo": {"username": "test"},
                "object": obj,
            }
        }))
        .expect("an AdmissionReview")
    }

    #[test]
    fn a_new_cronjob_gets_its_defaults_as_a_json_patch() {
        let answer = hook().review(review(&Object::new("test", Default::default())));
        let response = answer.response.expect("a response");
        assert!(response.allowed, "{:?}", response.result);
        let patch: Vec<serde_json::Value> =
            serde_json::from_slice(&response.patch.expect("a patch")).unwrap();
        let mut added: Vec<String> = patch
            .iter()
            .map(|op| format!("{} {}", op["path"], op["value"]))
            .collect();
        added.sort();
        let expected = [
            "\"/spec/failedJobsHistoryLimit\" 1",
            "\"/spec/successfulJobsHistoryLimit\" 3",
            "\"/spec/suspend\" false",
        ];
        assert_eq!(added, expected);
    }

    #[test]
    fn what_a_cronjob_says_is_kept() {
        let mut obj = Object::new("test", Default::default());
        obj.spec.suspend = Some(true);
        obj.spec.successful_jobs_history_limit = Some(0);
        default(&mut obj);
        assert_eq!(obj.spec.suspend, Some(true));
        assert_eq!(obj.spec.successful_jobs_history_limit, Some(0));
        let answer = hook().review(review(&obj));
        let response = answer.response.expect("a response");
        assert!(response.allowed && response.patch.is_none(), "{response:?}");
    }
}
