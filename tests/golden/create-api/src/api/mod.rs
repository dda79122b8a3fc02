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

//! API types: one module per group and version, one file per kind.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;
use kube_scaffold_runtime::manifests;

pub mod webapp;

// +kube-scaffold:scaffold:api-groups

/// The group, version, kind and plural of every kind: what the manager checks at start,
/// without building the CRDs' schemas.
pub fn resources() -> Vec<ApiResource> {
    vec![
        ApiResource::erase::<webapp::v1::Guestbook>(&()),
        // +kube-scaffold:scaffold:resources
    ]
}

/// The kinds of other projects that this project's controllers watch: their CRDs come with
/// those projects (cert-manager...), and the manager checks at start that they are installed.
pub fn external_resources() -> Vec<ApiResource> {
    vec![
        // +kube-scaffold:scaffold:external-resources
    ]
}

/// Every CustomResourceDefinition of this project, as `make manifests` writes them: the
/// versions of a kind (a type each) make one CRD (see `kube_scaffold_runtime::manifests::crds`).
pub fn crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    manifests::crds(vec![
        <webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),
        // +kube-scaffold:scaffold:crds
    ])
}
