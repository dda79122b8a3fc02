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

//! Controllers: one module per kind. Each has a `reconcile` and a `start` that the manager
//! runs; each declares the RBAC rules it needs in `rbac_rules`.
//!
//! What they share comes from kube-scaffold-runtime, which each imports by name: the
//! `Error` of `controller`, its `Builder` that runs a controller (its cache, retries with
//! backoff, resync, metrics and panic recovery), `children` and `conditions`; and the
//! [`Context`] below.

use k8s_openapi::api::rbac::v1::PolicyRule;
use kube_scaffold_runtime::controller::{Start, manager_rules};
#[cfg(test)]
use kube_scaffold_runtime::testing::mock;

/// What every reconcile gets: the API client, the event recorder, the metrics and this
/// project's own state (`crate::State`, as `ctx.state`).
pub type Context = kube_scaffold_runtime::controller::Context<crate::State>;

/// The context of the controllers' unit tests, whose client talks to a fake API server, and
/// that server: give it the state your tests use once `crate::State` is yours.
#[cfg(test)]
pub fn mocked() -> (std::sync::Arc<Context>, mock::ApiServer) {
    mock::context_with(|ctx| ctx.with_state(()))
}

pub mod guestbook;

// +kube-scaffold:scaffold:controller-modules

/// Every controller of this project, as the manager runs them.
pub const CONTROLLERS: &[Start<crate::State>] = &[
    guestbook::start,
    // +kube-scaffold:scaffold:controllers
];

/// The RBAC rules the manager needs: `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    [
        manager_rules(),
        guestbook::rbac_rules(),
        // +kube-scaffold:scaffold:rbac-rules
    ]
    .concat()
}
