//! What the templates see: one context per command (`init` here, `create api` in `api`,
//! `create webhook` in `webhook`), computed from its validated inputs and the commands before
//! it.

use serde::Serialize;

use crate::model::names;
use crate::model::project::{InitInputs, License};
use crate::model::versions::{VERSIONS, Versions};
use crate::scaffold::templates::{RuntimeSource, Templates};

use super::base;
use super::multigroup::Moves;

mod api;
mod webhook;

pub use api::{ApiContext, ApiPlan, Builder, DeployImageContext, Earlier, OwnedContext, Source};
pub use webhook::{Certificates, ConversionContext, Direction, Variant, WebhookContext};

/// Everything the `init` templates see, computed from `init`'s inputs.
#[derive(Serialize)]
pub struct InitContext {
    pub project_name: String,
    pub crate_name: String,
    pub domain: String,
    pub owner: Option<String>,
    /// The repository URL for Cargo.toml, or empty.
    pub repository: String,
    pub year: i64,
    /// The license header for Rust sources, ending in a blank line, or empty.
    pub header: String,
    /// Whether `hack/boilerplate.rs.txt` is written.
    #[serde(skip)]
    pub license: bool,
    pub versions: Versions,
    /// Where the project takes the runtime crate from.
    pub runtime: RuntimeSource,
    /// The manager watches only its own namespace, with a Role (`edit --namespaced`).
    pub namespaced_manager: bool,
    /// Every replica reconciles its share of the objects (`edit --sharding`).
    pub sharded_manager: bool,
    /// `edit --multigroup`: what moves under its group.
    #[serde(skip)]
    pub moves: Option<Moves>,
}

impl InitContext {
    /// The context of `init`, its license header rendered.
    pub fn new(init: &InitInputs, templates: &Templates) -> anyhow::Result<Self> {
        let repository = match &init.repo {
            Some(repo) => crate::model::gvk::repository(repo)?,
            None => String::new(),
        };
        let mut context = Self {
            project_name: init.project_name.clone(),
            crate_name: names::crate_name(&init.project_name),
            domain: init.domain.clone(),
            owner: init.owner.clone(),
            repository,
            year: init.license_year,
            header: String::new(),
            license: init.license == License::Apache2,
            versions: VERSIONS,
            runtime: templates.runtime(),
            namespaced_manager: false,
            sharded_manager: false,
            moves: None,
        };
        if context.license {
            let boilerplate = templates.render(base::BOILERPLATE_TEMPLATE, &context)?;
            context.header = format!("{boilerplate}\n");
        }
        Ok(context)
    }
}
