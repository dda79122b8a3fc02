//! The autoupdate plugin (kubebuilder's `autoupdate/v1-alpha`): `init --plugins
//! autoupdate/v1-alpha` or `edit --plugins autoupdate/v1-alpha` adds a GitHub workflow that
//! runs `kube-scaffold upgrade` every week and opens a pull request with the result, or an
//! issue when it left conflicts.

use crate::scaffold::plan::{Descriptor, IfExists, Plan};

use super::{InitContext, Plugin};
use crate::scaffold::tree::Tree;

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "autoupdate.kube-scaffold.io/v1-alpha";

/// The workflow.
#[rustfmt::skip]
const FILES: &[Descriptor] = &[
    Descriptor::new("autoupdate/github/workflows/auto_update.yml.tera", ".github/workflows/auto_update.yml", IfExists::Error),
];

/// The autoupdate plugin.
pub struct AutoUpdate;

impl Plugin for AutoUpdate {
    fn key(&self) -> &'static str {
        KEY
    }

    fn aliases(&self) -> &'static [&'static str] {
        &[
            "autoupdate/v1-alpha",
            "autoupdate.kubebuilder.io/v1-alpha",
            KEY,
        ]
    }

    fn enable(&self, plan: &mut Plan, _: &InitContext, _: &mut Tree) -> anyhow::Result<()> {
        plan.add_all(FILES);
        Ok(())
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[FILES]
    }
}
