//! The deploy-image plugin (kubebuilder's `deploy-image/v1-alpha`): `create api --plugins
//! deploy-image/v1-alpha --image ...` scaffolds a kind whose controller runs the image in a
//! Deployment it owns, kept at the kind's `spec.size`, with a sample that asks for one pod.
//!
//! Its flags are `cli::DeployImageFlags`, checked by `create api` into what it stores in
//! PROJECT with the command (`model::api::DeployImage`, under `deployImage`). Here are what it
//! adds to the request (`add`) and its templates (`scaffolds/v3/deploy-image/`), which take
//! the place of the base and kustomize plugins' for the kind's type, CRD and sample. The
//! controller is the base plugin's: the Deployment it owns is built from the image flags (the
//! templates' `deploy_image`).

use crate::error::user_error;
use crate::model::api::{ApiInputs, DeployImage as Options};
use crate::model::project::Project;
use crate::scaffold::plan::Plan;
use crate::scaffold::tree::Tree;

use super::{ApiContext, ApiPlan, Plugin, paths};

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "deploy-image.rust.kube-scaffold.io/v1-alpha";
/// How `--plugins` may name it: kubebuilder's short and full names, and ours.
pub const ALIASES: &[&str] = &[
    "deploy-image/v1-alpha",
    "deploy-image.go.kubebuilder.io/v1-alpha",
    KEY,
];

/// The Deployment a deploy-image kind owns, as `--owns` spells it.
const DEPLOYMENT: &str = "apps/v1/Deployment";

/// Adds `options` to the request: the kind owns the Deployment that runs the image (first of
/// what it owns), and the project is scaffolded with this plugin from now on.
pub fn add(project: &mut Project, inputs: &mut ApiInputs, options: Options) -> anyhow::Result<()> {
    if !inputs.namespaced {
        return Err(user_error(
            "the deploy-image plugin runs the image in a Deployment in its kind's namespace, and `--namespaced=false` makes a cluster-scoped kind",
            "drop `--namespaced=false`",
        ));
    }
    if inputs.owns.iter().any(|o| o == DEPLOYMENT) {
        return Err(user_error(
            "`--owns apps/v1/Deployment` and the deploy-image plugin both make the Deployment",
            "drop `--owns apps/v1/Deployment`: deploy-image owns it",
        ));
    }
    inputs.owns.insert(0, DEPLOYMENT.to_string());
    inputs.deploy_image = Some(options);
    if !project.plugins.iter().any(|p| p == KEY) {
        project.plugins.push(KEY.to_string());
    }
    Ok(())
}

/// The deploy-image plugin.
pub struct DeployImage;

impl Plugin for DeployImage {
    fn key(&self) -> &'static str {
        KEY
    }

    fn create_api(
        &self,
        plan: &mut Plan,
        _: &ApiPlan,
        c: &ApiContext,
        _: &mut Tree,
    ) -> anyhow::Result<()> {
        if c.deploy_image.is_none() {
            return Ok(());
        }
        let (group, version, kind) = (&c.group_module, &c.version, &c.kind_module);
        let ours = [
            (
                paths::api_module(group, version, kind),
                "deploy-image/src/api/kind.rs.tera",
            ),
            (
                paths::crd(&c.qualified_group, &c.plural),
                "deploy-image/config/crd/crd.json.tera",
            ),
            (
                paths::sample(&c.sample_file),
                "deploy-image/config/samples/sample.yaml.tera",
            ),
        ];
        for (dest, template) in ours {
            anyhow::ensure!(
                plan.replace_template(&dest, template),
                "the deploy-image plugin runs after the base and kustomize plugins, which plan {dest}"
            );
        }
        Ok(())
    }
}
