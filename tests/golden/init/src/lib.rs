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

//! The guestbook operator: API types, their controllers and webhooks, and the manager
//! that runs them.

use kube_scaffold_runtime::manager::{Manager, Options};
use kube_scaffold_runtime::manifests::Manifests;
// With the `dynamic-linking` feature (`make run`, `make dev`), the runtime and its dependencies
// come from one shared library, and a rebuild links only this crate's code.
#[cfg(feature = "dynamic-linking")]
use kube_scaffold_runtime_dylib as _;

pub mod api;
pub mod controller;
// +kube-scaffold:scaffold:modules

/// What the controllers share beyond the API client, read as `ctx.state` in a reconcile: a
/// client of an outside service, settings from your own flags. Make it a type of yours, and
/// give its value to `Manager::with_state` below.
pub type State = ();

/// The manager of this operator, as kubebuilder's `main.go` sets it up: every kind, webhook
/// and controller of the project. `main.rs` runs it; the integration tests too.
pub fn manager(options: Options) -> Manager<State> {
    Manager::with_state(env!("CARGO_PKG_NAME"), options, ())
        .resources(api::resources(), api::external_resources())
        // +kube-scaffold:scaffold:manager
        .controllers(controller::CONTROLLERS)
}

/// What `make manifests` writes (`src/bin/crdgen.rs`) and the integration tests install: the
/// CRDs, the rules of the manager's role, and the webhooks.
pub fn manifests() -> anyhow::Result<Manifests> {
    let manifests = Manifests::new(api::crds()?, controller::rbac_rules());
    // +kube-scaffold:scaffold:manifests
    Ok(manifests)
}
