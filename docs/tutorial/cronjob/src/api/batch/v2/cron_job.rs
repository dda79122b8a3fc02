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

//! The `CronJob` kind: version 2 of kubebuilder's CronJob tutorial, whose schedule is a struct.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// CronJobSpec defines the desired state of CronJob: when to run a Job, and which.
#[derive(
    kube::CustomResource,
    serde::Deserialize,
    serde::Serialize,
    Clone,
    Debug,
    Default,
    PartialEq,
    schemars::JsonSchema,
)]
#[kube(
    group = "batch.tutorial.kubebuilder.io",
    version = "v2",
    storage = false,
    kind = "CronJob",
    plural = "cronjobs",
    namespaced,
    status = "CronJobStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    /// schedule, field by field: a field left out is `*`.
    pub schedule: CronSchedule,

    /// startingDeadlineSeconds defines in seconds for starting the job if it misses scheduled
    /// time for any reason. Missed jobs executions will be counted as failed ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub starting_deadline_seconds: Option<i64>,

    /// concurrencyPolicy specifies how to treat concurrent executions of a Job.
    /// Valid values are:
    /// - "Allow" (default): allows CronJobs to run concurrently;
    /// - "Forbid": forbids concurrent runs, skipping next run if previous run hasn't finished yet;
    /// - "Replace": cancels currently running job and replaces it with a new one
    #[serde(default)]
    pub concurrency_policy: ConcurrencyPolicy,

    /// suspend tells the controller to suspend subsequent executions, it does
    /// not apply to already started executions. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,

    /// jobTemplate defines the job that will be created when executing a CronJob.
    pub job_template: JobTemplateSpec,

    /// successfulJobsHistoryLimit defines the number of successful finished jobs to retain.
    /// This is an option to distinguish between explicit zero and not specified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub successful_jobs_history_limit: Option<i32>,

    /// failedJobsHistoryLimit defines the number of failed finished jobs to retain.
    /// This is an option to distinguish between explicit zero and not specified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub failed_jobs_history_limit: Option<i32>,
}

/// CronSchedule describes a Cron schedule.
#[derive(
    serde::Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct CronSchedule {
    /// minute specifies the minute during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minute: Option<String>,
    /// hour specifies the hour during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hour: Option<String>,
    /// dayOfMonth specifies the day of the month during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_month: Option<String>,
    /// month specifies the month during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub month: Option<String>,
    /// dayOfWeek specifies the day of the week during which the job executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day_of_week: Option<String>,
}

/// ConcurrencyPolicy describes how the job will be handled.
/// Only one of the following concurrent policies may be specified.
/// If none of the following policies is specified, the default one
/// is AllowConcurrent.
#[derive(
    serde::Deserialize,
    serde::Serialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    schemars::JsonSchema,
)]
pub enum ConcurrencyPolicy {
    // Allow allows CronJobs to run concurrently.
    #[default]
    Allow,
    // Forbid forbids concurrent runs, skipping next run if previous hasn't finished yet.
    Forbid,
    // Replace cancels currently running job and replaces it with a new one.
    Replace,
}

/// CronJobStatus defines the observed state of CronJob.
#[derive(
    serde::Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct CronJobStatus {
    /// active defines a list of pointers to currently running jobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 10), extend("x-kubernetes-list-type" = "atomic"))]
    pub active: Vec<ObjectReference>,

    /// lastScheduleTime defines when was the last time the job was successfully scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,

    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// conditions represent the current state of the CronJob resource (`Available`,
    /// `Progressing`, `Degraded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "kube_scaffold_runtime::conditions::schema")]
    pub conditions: Vec<Condition>,
}
