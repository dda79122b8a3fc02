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

//! `make manifests`: writes each kind's CRD to `config/crd/bases/<group>_<plural>.yaml` (with
//! its conversion webhook, if it has one), the manager's role to `config/rbac/role.yaml`
//! and, if the project has admission webhooks, their configurations to
//! `config/webhook/manifests.yaml`, from the Rust code: `manifests()` in `src/lib.rs`.

use std::path::Path;

use kube_scaffold_runtime::manifests::Scope;

use guestbook::manifests;

fn main() -> anyhow::Result<()> {
    let scope = Scope::Cluster;
    manifests()?.write(Path::new("."), scope)
}
