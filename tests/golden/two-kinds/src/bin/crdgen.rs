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
