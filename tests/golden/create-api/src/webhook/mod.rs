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

//! Webhooks: `kube-scaffold create webhook` adds a hook per kind and kind of hook, each in its
//! module, and the conversions between the versions of a kind (`conversion`). The manager
//! serves them over HTTPS; `make manifests` writes their configurations to
//! `config/webhook/manifests.yaml`. The server, certificates and reviews are
//! kube-scaffold-runtime's (its `webhooks` feature).

pub use kube_scaffold_runtime::webhook::*;

pub mod conversion;

// +kube-scaffold:scaffold:webhook-modules

/// Every webhook of the project: what the server answers, and what `make manifests` registers.
pub fn hooks() -> Vec<Hook> {
    vec![
        // +kube-scaffold:scaffold:webhooks
    ]
}
