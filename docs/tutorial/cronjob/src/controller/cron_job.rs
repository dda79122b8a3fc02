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

//! The controller of `CronJob` (batch.tutorial.kubebuilder.io/v1): runs a Job at each time
//! the schedule names, as kubebuilder's CronJob tutorial does.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use kube_scaffold_runtime::children::{self, Children, Owned};
use kube_scaffold_runtime::conditions::{self, AVAILABLE, DEGRADED, PROGRESSING};
use kube_scaffold_runtime::controller::{Builder, Error, Result, rule};
use tracing::{debug, instrument};

use crate::api::batch::v1::{self as batchv1, ConcurrencyPolicy};
use crate::controller::Context;

/// The kind this controller reconciles.
pub type Object = batchv1::CronJob;
/// Its status.
pub type Status = batchv1::CronJobStatus;
/// The field manager of the status and the Jobs this controller writes with server-side apply.
pub const FIELD_MANAGER: &str = "cronjob-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "cronjob";
/// The conditions this controller sets; others' stay theirs.
const CONDITIONS: &[&str] = &[AVAILABLE, PROGRESSING, DEGRADED];
/// A `CronJob` owns a Job per scheduled time.
const OWNED: &[Owned<Object, crate::State>] = &[Owned::many::<Job>()];
/// The annotation of a Job that says which scheduled time it runs for.
pub const SCHEDULED_AT: &str = "batch.tutorial.kubebuilder.io/scheduled-at";
/// How many missed start times a CronJob may have before it is reported broken.
const MAX_MISSED: usize = 100;

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`). Every
/// `CronJob` is reconciled when it or one of its Jobs changes, and at its next scheduled time.
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Builder::new(CONTROLLER).owns(OWNED).start(ctx, reconcile)
}

/// Brings the cluster to the state a `CronJob` asks for.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = obj.namespace().ok_or_else(|| {
        Error::InvalidObject(format!(
            "a namespaced {} has no namespace",
            Object::kind(&())
        ))
    })?;
    let objects = Api::<Object>::namespaced(ctx.client.clone(), &namespace);
    if obj.meta().deletion_timestamp.is_some() {
        // Its Jobs go with it (the garbage collector): nothing to start.
        return Ok(Action::await_change());
    }
    apply(&obj, &objects, &ctx, Timestamp::now()).await
}

/// The CronJob exists and is not being deleted: trim its history, start the Job of its
/// latest missed run if it may, and say what it found in its status. `now` is the clock.
async fn apply(
    obj: &Object,
    objects: &Api<Object>,
    ctx: &Context,
    now: Timestamp,
) -> Result<Action> {
    // 1: its Jobs, active, successful or failed, and the latest time one was scheduled for.
    let jobs: Children<Job> = Children::of(ctx, obj).await?;
    let (mut active, mut successful, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for job in jobs.list() {
        match finished(job) {
            None => active.push(job.clone()),
            Some("Failed") => failed.push(job.clone()),
            Some(_) => successful.push(job.clone()),
        }
    }
    let status = obj.status.clone().unwrap_or_default();
    // The status' time too: a Job the history trimmed away keeps its time scheduled.
    let recorded = status.last_schedule_time.as_ref().map(|time| time.0);
    let mut last = jobs.list().iter().filter_map(|job| scheduled_at(job)).max();
    last = last.max(recorded);

    // 2: the history limits: the oldest finished Jobs go.
    let spec = &obj.spec;
    for (jobs_of_a_kind, limit) in [
        (&mut failed, spec.failed_jobs_history_limit),
        (&mut successful, spec.successful_jobs_history_limit),
    ] {
        let Some(limit) = limit else { continue };
        jobs_of_a_kind.sort_by_key(|job| started(job));
        let extra = jobs_of_a_kind.len().saturating_sub(limit.max(0) as usize);
        for job in jobs_of_a_kind.drain(..extra) {
            jobs.delete(&job).await?;
            debug!(job = %job.name_any(), "deleted an old Job");
        }
    }

    // 3: what the schedule asks for now, unless suspended.
    let mut report = Report::of(&active, &failed);
    let mut next = None;
    if spec.suspend == Some(true) {
        report = Report::available(false, "Suspended", "CronJob is suspended".into());
    } else {
        match runs(obj, last, now) {
            Err(why) => report.degraded = Some(("InvalidSchedule", why)),
            Ok(Runs { missed, next: at }) => {
                next = Some(at);
                match missed {
                    None => {}
                    Some(missed) if too_late(spec.starting_deadline_seconds, missed, now) => {
                        let why = format!("Missed starting deadline for run at {missed}");
                        report.degraded = Some(("MissedSchedule", why));
                    }
                    Some(_)
                        if spec.concurrency_policy == ConcurrencyPolicy::Forbid
                            && !active.is_empty() =>
                    {
                        debug!(active = active.len(), "concurrency policy forbids a run");
                    }
                    Some(missed) => {
                        if spec.concurrency_policy == ConcurrencyPolicy::Replace {
                            for job in active.drain(..) {
                                jobs.delete(&job).await?;
                            }
                        }
                        let job = job_for(obj, missed);
                        let name = job.name_any();
                        if jobs.get(&name).is_none() {
                            let job = jobs.apply(&job, FIELD_MANAGER).await?;
                            active.push(Arc::new(job));
                        }
                        last = last.max(Some(missed));
                        let created = format!("Created job {name}");
                        report.progressing = (conditions::Status::True, "JobCreated", created);
                    }
                }
            }
        }
    }

    // 4: the status: what was found, rebuilt each time.
    let generation = obj.meta().generation;
    let mut observed = status.conditions.clone();
    for (type_, (state, reason, message)) in report.conditions() {
        observed = conditions::set(&observed, type_, state, reason, &message, generation);
    }
    let new = Status {
        active: active.iter().map(|job| reference(job)).collect(),
        last_schedule_time: last.map(Time),
        observed_generation: generation,
        conditions: observed,
    };
    if obj.status.as_ref() != Some(&new) {
        conditions::apply_status(objects, obj, &new, CONDITIONS, FIELD_MANAGER).await?;
    }

    // 5: again at the next run (or sooner, when a Job or the CronJob changes).
    Ok(match next {
        Some(next) => {
            let wait = now.duration_until(next).unsigned_abs();
            Action::requeue(wait.max(Duration::from_millis(100)))
        }
        None => Action::await_change(),
    })
}

/// What the conditions say.
struct Report {
    available: (conditions::Status, &'static str, String),
    progressing: (conditions::Status, &'static str, String),
    /// Degraded, and why; none: not degraded.
    degraded: Option<(&'static str, String)>,
}

impl Report {
    /// The report of a CronJob with these active and failed Jobs.
    fn of(active: &[Arc<Job>], failed: &[Arc<Job>]) -> Self {
        if !failed.is_empty() {
            let why = format!("{} job(s) have failed", failed.len());
            let mut report = Self::available(false, "JobsFailed", why.clone());
            report.degraded = Some(("JobsFailed", why));
            return report;
        }
        if !active.is_empty() {
            let why = format!("CronJob is progressing with {} active job(s)", active.len());
            let mut report = Self::available(true, "JobsActive", why);
            let active = format!("{} job(s) are currently active", active.len());
            report.progressing = (conditions::Status::True, "JobsActive", active);
            return report;
        }
        let done = "All jobs have completed successfully".to_string();
        Self::available(true, "AllJobsCompleted", done)
    }

    fn available(available: bool, reason: &'static str, message: String) -> Self {
        let status = match available {
            true => conditions::Status::True,
            false => conditions::Status::False,
        };
        let idle = "No jobs are currently active".to_string();
        Self {
            available: (status, reason, message),
            progressing: (conditions::Status::False, "NoJobsActive", idle),
            degraded: None,
        }
    }

    fn conditions(self) -> [(&'static str, (conditions::Status, &'static str, String)); 3] {
        let degraded = match self.degraded {
            Some((reason, message)) => (conditions::Status::True, reason, message),
            None => (
                conditions::Status::False,
                "Healthy",
                "No failures".to_string(),
            ),
        };
        [
            (AVAILABLE, self.available),
            (PROGRESSING, self.progressing),
            (DEGRADED, degraded),
        ]
    }
}

/// How a Job finished ("Complete" or "Failed"); `None` while it runs.
fn finished(job: &Job) -> Option<&str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let done = conditions
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
    done.map(|c| c.type_.as_str())
}

/// The time `job` was scheduled for, from its annotation.
fn scheduled_at(job: &Job) -> Option<Timestamp> {
    job.annotations().get(SCHEDULED_AT)?.parse().ok()
}

/// When `job` started; `None` (first) before it did.
fn started(job: &Job) -> Option<Timestamp> {
    Some(job.status.as_ref()?.start_time.as_ref()?.0)
}

/// The runs a schedule asks for at `now`.
#[derive(Debug, PartialEq)]
struct Runs {
    /// The latest scheduled time since the last run that has not run yet.
    missed: Option<Timestamp>,
    /// The next scheduled time after `now`.
    next: Timestamp,
}

/// The runs of `obj`'s schedule at `now`, from its last run (or its creation), or from the
/// starting deadline if that is later. A schedule that does not parse, or more than
/// `MAX_MISSED` missed runs, is an error: the reason.
fn runs(obj: &Object, last: Option<Timestamp>, now: Timestamp) -> Result<Runs, String> {
    let schedule = &obj.spec.schedule;
    let cron =
        (obj.spec.cron()).map_err(|err| format!("unparseable schedule {schedule:?}: {err}"))?;
    let created = obj.meta().creation_timestamp.as_ref().map(|time| time.0);
    let mut earliest = last.or(created).unwrap_or(now);
    if let Some(deadline) = obj.spec.starting_deadline_seconds {
        earliest = earliest.max(now - SignedDuration::from_secs(deadline));
    }
    let after = |time: Timestamp| {
        let at = time.to_zoned(TimeZone::UTC);
        let next = cron.find_next_occurrence(&at, false);
        next.map(|next| next.timestamp())
            .map_err(|err| err.to_string())
    };
    let next = after(now)?;
    let mut missed = None;
    let mut count = 0;
    let mut time = after(earliest)?;
    while time <= now && earliest <= now {
        missed = Some(time);
        count += 1;
        if count > MAX_MISSED {
            return Err(format!(
                "too many missed start times (> {MAX_MISSED}): set or decrease \
                 .spec.startingDeadlineSeconds or check clock skew"
            ));
        }
        time = after(time)?;
    }
    Ok(Runs { missed, next })
}

/// Whether a run scheduled at `missed` is past its starting deadline at `now`.
fn too_late(deadline: Option<i64>, missed: Timestamp, now: Timestamp) -> bool {
    deadline.is_some_and(|seconds| missed + SignedDuration::from_secs(seconds) < now)
}

/// The Job of `obj`'s run scheduled at `at`: its template, named after the CronJob and the
/// time, annotated with the time, owned by the CronJob.
fn job_for(obj: &Object, at: Timestamp) -> Job {
    let template = &obj.spec.job_template;
    let name = format!("{}-{}", obj.name_any(), at.as_second());
    let mut metadata = children::named(obj, &name);
    let from = template.metadata.clone().unwrap_or_default();
    let mut annotations = from.annotations.unwrap_or_default();
    annotations.insert(SCHEDULED_AT.to_string(), at.to_string());
    metadata.annotations = Some(annotations);
    let mut labels = from.labels.unwrap_or_default();
    labels.extend(metadata.labels.take().unwrap_or_default());
    metadata.labels = Some(labels);
    Job {
        metadata,
        spec: template.spec.clone(),
        ..Job::default()
    }
}

/// A reference to `job`, as `status.active` lists it.
fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    let status = format!("{resource}/status");
    vec![
        rule(&group, &resource, &["get", "list", "watch"]),
        // Status is written with server-side apply.
        rule(&group, &status, &["get", "patch"]),
    ]
    .into_iter()
    .chain(OWNED.iter().flat_map(|owned| (owned.rules)()))
    .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::Value;

    use super::*;
    use crate::api::batch::v1::CronJobSpec as Spec;

    /// 2026-01-01T00:00:00Z and some seconds.
    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_767_225_600 + seconds).unwrap()
    }

    /// A CronJob on `schedule`, made at `at(0)`, as the API server holds it.
    fn object(schedule: &str) -> Object {
        let spec = Spec {
            schedule: schedule.into(),
            job_template: JobTemplateSpec {
                spec: Some(JobSpec::default()),
                ..JobTemplateSpec::default()
            },
            ..Spec::default()
        };
        let mut obj = Object::new("nightly", spec);
        obj.meta_mut().namespace = Some("default".into());
        obj.meta_mut().uid = Some("3b0ef0a4-0000-4000-8000-000000000001".into());
        obj.meta_mut().creation_timestamp = Some(Time(at(0)));
        obj.meta_mut().generation = Some(1);
        obj
    }

    #[test]
    fn a_run_is_due_once_its_time_has_passed() {
        let obj = object("*/5 * * * *");
        let runs = runs(&obj, None, at(60)).unwrap();
        assert_eq!(
            runs,
            Runs {
                missed: None,
                next: at(300)
            }
        );
        let runs = runs_at(&obj, None, 301);
        assert_eq!(
            runs,
            Runs {
                missed: Some(at(300)),
                next: at(600)
            }
        );
        // Several missed: the latest.
        let runs = runs_at(&obj, None, 1000);
        assert_eq!(runs.missed, Some(at(900)));
        // Already run at 900: nothing missed.
        assert_eq!(runs_at(&obj, Some(at(900)), 1000).missed, None);
    }

    fn runs_at(obj: &Object, last: Option<Timestamp>, now: i64) -> Runs {
        runs(obj, last, at(now)).unwrap()
    }

    #[test]
    fn a_starting_deadline_skips_older_runs() {
        let mut obj = object("*/5 * * * *");
        obj.spec.starting_deadline_seconds = Some(30);
        // The run of 300 was due 20 s ago: it may start.
        assert_eq!(runs_at(&obj, None, 320).missed, Some(at(300)));
        // 40 s ago: past its deadline, not started.
        assert_eq!(runs_at(&obj, None, 340).missed, None);
    }

    #[test]
    fn a_bad_schedule_or_too_many_missed_runs_are_errors() {
        let said = runs(&object("every day"), None, at(0)).unwrap_err();
        assert!(
            said.starts_with("unparseable schedule \"every day\""),
            "{said}"
        );
        let said = runs(&object("* * * * * *"), None, at(3600)).unwrap_err();
        assert!(said.starts_with("too many missed start times"), "{said}");
    }

    #[test]
    fn a_job_is_named_after_its_time_and_owned() {
        let job = job_for(&object("@hourly"), at(3600));
        assert_eq!(job.name_any(), format!("nightly-{}", at(3600).as_second()));
        assert_eq!(job.annotations()[SCHEDULED_AT], "2026-01-01T01:00:00Z");
        let owner = &job.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("CronJob", Some(true))
        );
        assert_eq!(scheduled_at(&job), Some(at(3600)));
    }

    #[tokio::test]
    async fn a_due_run_starts_a_job_and_the_status_lists_it() {
        let (ctx, server) = crate::controller::mocked();
        let obj = object("*/5 * * * *");
        let path = format!("{}/nightly", Object::url_path(&(), Some("default")));
        server.insert(&path, &obj);
        let objects = Api::<Object>::namespaced(ctx.client.clone(), "default");
        let action = apply(&obj, &objects, &ctx, at(301)).await.unwrap();
        assert_eq!(action, Action::requeue(Duration::from_secs(299)));

        let name = format!("nightly-{}", at(300).as_second());
        let jobs = Job::url_path(&(), Some("default"));
        let job = server.get(&format!("{jobs}/{name}")).expect("a Job");
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_AT],
            "2026-01-01T00:05:00Z"
        );
        let stored = server.get(&path).expect("the CronJob");
        let status = &stored["status"];
        assert_eq!(status["active"][0]["name"], Value::from(name));
        assert_eq!(status["lastScheduleTime"], "2026-01-01T00:05:00Z");
    }
}
