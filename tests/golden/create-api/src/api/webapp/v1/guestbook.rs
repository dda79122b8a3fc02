// Copyright 2026 The Guestbook Authors.
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

//! The `Guestbook` kind.

/// GuestbookSpec defines the desired state of Guestbook.
///
/// Edit this struct to add your fields, then run `make manifests` to regenerate the CRD.
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
    group = "webapp.mock.com",
    version = "v1",
    kind = "Guestbook",
    plural = "guestbooks",
    namespaced,
    status = "GuestbookStatus",
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
pub struct GuestbookSpec {
    /// An example field. Replace it with your own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// GuestbookStatus defines the observed state of Guestbook.
#[derive(
    serde::Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct GuestbookStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The latest observations of the object's state (`Available`, `Progressing`, `Degraded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "kube_scaffold_runtime::conditions::schema")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}
