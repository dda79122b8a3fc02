//! The deploy-image plugin (kubebuilder's `deploy-image/v1-alpha`): `create api --plugins
//! deploy-image/v1-alpha --image ...` scaffolds a kind whose controller runs the image in a
//! Deployment it owns, kept at the kind's `spec.size`, with a sample that asks for one pod.
//!
//! The kind's type and controller are the base plugin's templates, which read the context's
//! `deploy_image`; this plugin replaces the sample.

use crate::scaffold::plan::Plan;
use crate::scaffold::tree::Tree;

use super::{ApiContext, InitContext, Plugin};

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "deploy-image.rust.kube-scaffold.io/v1-alpha";

/// The deploy-image plugin.
pub struct DeployImage;

impl Plugin for DeployImage {
    fn key(&self) -> &'static str {
        KEY
    }

    fn init(&self, _: &mut Plan, _: &InitContext) {}

    fn create_api(&self, plan: &mut Plan, c: &ApiContext, _: &mut Tree) -> anyhow::Result<()> {
        if c.deploy_image.is_none() {
            return Ok(());
        }
        let sample = format!("config/samples/{}", c.sample_file);
        let template = "v2/deploy-image/config/samples/sample.yaml.tera";
        anyhow::ensure!(
            plan.replace_template(&sample, template),
            "the deploy-image plugin runs after the kustomize plugin, which plans {sample}"
        );
        Ok(())
    }
}
