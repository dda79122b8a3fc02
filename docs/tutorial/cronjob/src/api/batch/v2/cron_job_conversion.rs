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

//! The conversions between `CronJob` v2 (this module's version, a spoke) and v1, the kind's
//! hub: the manager's conversion webhook converts between any two versions through the hub
//! (`crate::webhook::conversion`). The book's `ConvertTo` and `ConvertFrom`, made lossless:
//! what one version cannot say rides in an annotation of the other.

use std::collections::BTreeMap;

use kube_scaffold_runtime::webhook::conversion::Conversion;

use crate::api::batch::v1::ConcurrencyPolicy as HubPolicy;
use crate::api::batch::v1::CronJob as Hub;
use crate::api::batch::v1::CronJobSpec as HubSpec;
use crate::api::batch::v1::CronJobStatus as HubStatus;

use super::CronJob as Spoke;
use super::CronJobSpec as SpokeSpec;
use super::CronJobStatus as SpokeStatus;
use super::{ConcurrencyPolicy, CronSchedule};

/// On a v2 CronJob, the v1 schedule that is not five fields (`@hourly`, or with seconds).
pub const V1_SCHEDULE: &str = "batch.tutorial.kubebuilder.io/v1-schedule";
/// On a v1 CronJob, the v2 schedule whose fields do not read back from the v1 string (a
/// field written `*`, or with a space).
pub const V2_SCHEDULE: &str = "batch.tutorial.kubebuilder.io/v2-schedule";

/// The conversions of `CronJob` v2, as `crate::webhook::conversion::conversions` lists them.
pub fn conversion() -> Conversion {
    Conversion::between::<Hub, Spoke>()
}

impl From<Spoke> for Hub {
    fn from(spoke: Spoke) -> Self {
        let mut metadata = spoke.metadata;
        let spec = spoke.spec;
        let annotations = metadata.annotations.get_or_insert_default();
        let kept = annotations.remove(V1_SCHEDULE);
        let schedule = match kept {
            // A v1 schedule v2 could not say, and the v2 schedule it left unchanged.
            Some(v1) if spec.schedule == CronSchedule::default() => v1,
            _ => {
                let joined = joined(&spec.schedule);
                if split(&joined).as_ref() != Some(&spec.schedule) {
                    let v2 = serde_json::to_string(&spec.schedule).expect("a schedule");
                    annotations.insert(V2_SCHEDULE.into(), v2);
                }
                joined
            }
        };
        tidy(&mut metadata.annotations);
        Self {
            metadata,
            spec: HubSpec {
                schedule,
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: match spec.concurrency_policy {
                    ConcurrencyPolicy::Allow => HubPolicy::Allow,
                    ConcurrencyPolicy::Forbid => HubPolicy::Forbid,
                    ConcurrencyPolicy::Replace => HubPolicy::Replace,
                },
                suspend: spec.suspend,
                job_template: spec.job_template,
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
            status: spoke.status.map(|status| HubStatus {
                active: status.active,
                last_schedule_time: status.last_schedule_time,
                observed_generation: status.observed_generation,
                conditions: status.conditions,
            }),
        }
    }
}

impl From<Hub> for Spoke {
    fn from(hub: Hub) -> Self {
        let mut metadata = hub.metadata;
        let spec = hub.spec;
        let annotations = metadata.annotations.get_or_insert_default();
        let kept = annotations.remove(V2_SCHEDULE);
        let kept = kept.and_then(|v2| serde_json::from_str::<CronSchedule>(&v2).ok());
        let schedule = match kept {
            // A v2 schedule v1 could not say, and the v1 schedule it left unchanged.
            Some(v2) if joined(&v2) == spec.schedule => v2,
            _ => split(&spec.schedule).unwrap_or_else(|| {
                annotations.insert(V1_SCHEDULE.into(), spec.schedule.clone());
                CronSchedule::default()
            }),
        };
        tidy(&mut metadata.annotations);
        Self {
            metadata,
            spec: SpokeSpec {
                schedule,
                starting_deadline_seconds: spec.starting_deadline_seconds,
                concurrency_policy: match spec.concurrency_policy {
                    HubPolicy::Allow => ConcurrencyPolicy::Allow,
                    HubPolicy::Forbid => ConcurrencyPolicy::Forbid,
                    HubPolicy::Replace => ConcurrencyPolicy::Replace,
                },
                suspend: spec.suspend,
                job_template: spec.job_template,
                successful_jobs_history_limit: spec.successful_jobs_history_limit,
                failed_jobs_history_limit: spec.failed_jobs_history_limit,
            },
            status: hub.status.map(|status| SpokeStatus {
                active: status.active,
                last_schedule_time: status.last_schedule_time,
                observed_generation: status.observed_generation,
                conditions: status.conditions,
            }),
        }
    }
}

/// The five fields of `schedule` as v1 writes them, `*` for each left out.
fn joined(schedule: &CronSchedule) -> String {
    let fields = [
        &schedule.minute,
        &schedule.hour,
        &schedule.day_of_month,
        &schedule.month,
        &schedule.day_of_week,
    ];
    let fields = fields.map(|field| field.as_deref().unwrap_or("*"));
    fields.join(" ")
}

/// The v2 schedule of a v1 `schedule` of five fields; `None` for any other.
fn split(schedule: &str) -> Option<CronSchedule> {
    let fields: Vec<&str> = schedule.split(' ').collect();
    let [minute, hour, day_of_month, month, day_of_week] = fields[..] else {
        return None;
    };
    let field = |raw: &str| (raw != "*").then(|| raw.to_string());
    Some(CronSchedule {
        minute: field(minute),
        hour: field(hour),
        day_of_month: field(day_of_month),
        month: field(month),
        day_of_week: field(day_of_week),
    })
}

/// No annotations rather than none at all, as the object came.
fn tidy(annotations: &mut Option<BTreeMap<String, String>>) {
    if annotations.as_ref().is_some_and(BTreeMap::is_empty) {
        *annotations = None;
    }
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use kube_scaffold_runtime::testing::round_trips;

    use super::*;

    /// Any v2 object its schema allows converts to v1 and back unchanged.
    #[test]
    fn v2_to_v1_and_back_is_unchanged() {
        round_trips::<Spoke, Hub>();
    }

    /// Any v1 object its schema allows converts to v2 and back unchanged.
    #[test]
    fn v1_to_v2_and_back_is_unchanged() {
        round_trips::<Hub, Spoke>();
    }

    /// The schedules one version cannot say in the other's terms, which the proptests of
    /// `round_trips` seldom make.
    #[test]
    fn what_the_other_version_cannot_say_survives_the_trip() {
        for schedule in ["@hourly", "*/10 * * * * *", "every day"] {
            let mut hub = Hub::new("nightly", HubSpec::default());
            hub.spec.schedule = schedule.into();
            let spoke = Spoke::from(hub.clone());
            assert_eq!(spoke.annotations()[V1_SCHEDULE], schedule);
            assert_eq!(Hub::from(spoke), hub, "{schedule}");
        }
        for minute in ["*", "1 2"] {
            let mut spoke = Spoke::new("nightly", SpokeSpec::default());
            spoke.spec.schedule.minute = Some(minute.into());
            let hub = Hub::from(spoke.clone());
            assert!(hub.annotations().contains_key(V2_SCHEDULE), "{minute}");
            assert_eq!(Spoke::from(hub), spoke, "{minute}");
        }
    }

    #[test]
    fn a_schedule_of_five_fields_is_a_struct_in_v2() {
        let mut hub = Hub::new("nightly", HubSpec::default());
        hub.spec.schedule = "0 3 * * 1-5".into();
        let spoke = Spoke::from(hub);
        assert_eq!(spoke.spec.schedule.minute.as_deref(), Some("0"));
        assert_eq!(spoke.spec.schedule.hour.as_deref(), Some("3"));
        assert_eq!(spoke.spec.schedule.day_of_week.as_deref(), Some("1-5"));
        assert_eq!(spoke.spec.schedule.month, None);
        assert_eq!(spoke.metadata.annotations, None);
    }
}
