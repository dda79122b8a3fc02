//! 0.2's record of a project's commands, as its planner reads them: `create api`'s flags
//! flat, as PROJECT stores them (today's `model::api::ApiInputs` names which kind of API
//! they make). `history` reads a project's commands into it.

use crate::model::api::ApiInputs as Current;
use crate::model::project::{Command as CurrentCommand, Resource, WebhookInputs};

/// 0.2's commands, read from `project`'s (0.2 had no `edit`).
pub fn history(project: &crate::model::project::Project) -> Vec<Command> {
    project
        .commands
        .iter()
        .filter_map(|command| match command {
            CurrentCommand::CreateApi(api) => Some(Command::CreateApi(ApiInputs::of(api))),
            CurrentCommand::CreateWebhook(webhook) => Some(Command::CreateWebhook(webhook.clone())),
            CurrentCommand::Edit(_) => None,
        })
        .collect()
}

impl ApiInputs {
    /// `api` as 0.2 held it.
    fn of(api: &Current) -> Self {
        let (external, adopted) = (api.external(), api.adopted());
        Self {
            group: api.group.clone(),
            version: api.version.clone(),
            kind: api.kind.clone(),
            plural: api.plural.clone(),
            namespaced: api.namespaced,
            resource: api.resource(),
            controller: api.controller,
            finalizer: api.finalizer,
            force: api.force,
            owns: api.owns.clone(),
            builtin: api.builtin(),
            external_crd: external.map(|crd| crd.path.clone()),
            external_crd_text: external.map(|crd| crd.text.clone()),
            from_crd: adopted.map(|(crd, _)| crd.path.clone()),
            from_crd_text: adopted.map(|(crd, _)| crd.text.clone()),
            versions: adopted
                .map(|(_, versions)| versions.to_vec())
                .unwrap_or_default(),
            storage_version: api.storage_version(),
            deploy_image: api.deploy_image.as_ref().map(|d| DeployImage {
                image: d.image.clone(),
                container_command: d.container_command.clone(),
                container_port: d.container_port,
                run_as_user: d.run_as_user,
            }),
        }
    }
}

/// One command of 0.2.
#[derive(Clone)]
// A project holds a few dozen commands at most: boxing the larger one would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    CreateApi(ApiInputs),
    CreateWebhook(WebhookInputs),
}

impl Command {
    /// A `create api`'s inputs.
    pub fn api(&self) -> Option<&ApiInputs> {
        match self {
            Command::CreateApi(api) => Some(api),
            Command::CreateWebhook(_) => None,
        }
    }

    /// A `create webhook`'s inputs.
    pub fn webhook(&self) -> Option<&WebhookInputs> {
        match self {
            Command::CreateWebhook(webhook) => Some(webhook),
            Command::CreateApi(_) => None,
        }
    }
}

/// `create api`'s inputs, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiInputs {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The type was scaffolded (`--resource`).
    pub resource: bool,
    /// The controller was scaffolded (`--controller`).
    pub controller: bool,
    /// The controller has a finalizer (`--finalizer`).
    pub finalizer: bool,
    /// The kind's files were scaffolded again over existing ones (`--force`).
    pub force: bool,
    /// The kinds the controller owns (`--owns`), as `group/version/Kind` with the group
    /// Kubernetes sees: `apps/v1/Deployment`, `core/v1/ConfigMap`, `webapp.my.domain/v1/Guestbook`.
    pub owns: Vec<String>,
    /// The kind is one Kubernetes defines (`--group apps --kind Deployment --resource=false`):
    /// a controller without a type or CRD of the project's.
    pub builtin: bool,
    /// Another project's CRD (`--external-api-crd`), copied into the project at this path:
    /// the controller's kind, with Rust types generated from its schema.
    pub external_crd: Option<String>,
    /// That CRD's text, read from the project by `Project::load`.
    pub external_crd_text: Option<String>,
    /// A CRD the project adopted as this kind (`--from-crd`), copied into the project at this
    /// path: the kind's types, one module per version, were generated from it.
    pub from_crd: Option<String>,
    /// That CRD's text, read from the project by `Project::load`.
    pub from_crd_text: Option<String>,
    /// Every version of the kind when this command made several (`--from-crd`), in the CRD's
    /// order; `version` is the one stored.
    pub versions: Vec<String>,
    /// This version of a kind that has others is the one stored (`--storage-version`).
    pub storage_version: bool,
    /// The deploy-image plugin's inputs (`--plugins deploy-image/v1-alpha`): the kind runs
    /// this image in a Deployment it owns.
    pub deploy_image: Option<DeployImage>,
}

/// `create api --plugins deploy-image/v1-alpha`'s inputs, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployImage {
    /// `--image`.
    pub image: String,
    /// `--image-container-command`, comma-separated, as given.
    pub container_command: Option<String>,
    /// `--image-container-port`.
    pub container_port: Option<u16>,
    /// `--run-as-user`.
    pub run_as_user: Option<i64>,
}

/// What one `create api` made of its group/version/kind.
fn resource_of(api: &ApiInputs) -> Resource {
    Resource {
        group: api.group.clone(),
        version: api.version.clone(),
        kind: api.kind.clone(),
        plural: api.plural.clone(),
        namespaced: api.namespaced,
        api: api.resource,
        controller: api.controller,
        finalizer: api.controller && api.finalizer,
        adopted: api.from_crd.is_some(),
    }
}

/// The version of `group`/`kind` that `commands` made the stored one: the first version
/// created, or the stored version of an adopted CRD, until a later version says
/// `--storage-version`.
pub fn stored_version(commands: &[Command], group: &str, kind: &str) -> Option<String> {
    let mut stored: Option<String> = None;
    for api in commands.iter().filter_map(Command::api) {
        let ours = api.group == group && api.kind == kind && api.resource;
        if ours && (stored.is_none() || api.storage_version) {
            stored = Some(api.version.clone());
        }
    }
    stored
}

/// What `commands` made of each group/version/kind, in the order each first appeared.
pub fn resources_of(commands: &[Command]) -> Vec<Resource> {
    let mut resources: Vec<Resource> = Vec::new();
    for api in commands.iter().filter_map(Command::api) {
        // An adopted CRD's other versions: types without a controller.
        for version in api.versions.iter().filter(|v| **v != api.version) {
            resources.push(Resource {
                version: version.clone(),
                controller: false,
                finalizer: false,
                ..resource_of(api)
            });
        }
        let same = |r: &&mut Resource| {
            r.group == api.group && r.version == api.version && r.kind == api.kind
        };
        match resources.iter_mut().find(same) {
            Some(existing) => {
                existing.plural = api.plural.clone();
                existing.namespaced = api.namespaced;
                existing.api |= api.resource;
                existing.adopted |= api.from_crd.is_some();
                if api.controller {
                    existing.controller = true;
                    existing.finalizer = api.finalizer;
                }
            }
            None => resources.push(resource_of(api)),
        }
    }
    resources
}
