//! What `create webhook`'s templates see: the kind's hooks and conversions.

use serde::Serialize;

use crate::codegen::fields;
use crate::codegen::manifests;
use crate::model::gvk;
use crate::model::names;
use crate::model::project::{Command, EditInputs, InitInputs, WebhookInputs};
use crate::scaffold::tree::Tree;

use super::super::multigroup::hook_module;
use super::super::paths;
use super::super::policy::{builtin_of, is_adopted, is_external, project_hooks, webhook_hook};

/// Everything the `webhook` templates see, computed from `create webhook`'s inputs.
#[derive(Serialize)]
pub struct WebhookContext {
    pub crate_name: String,
    pub project_name: String,
    pub header: String,
    pub kind: String,
    /// The kind's Rust type: the kind, or kopium's name for it (types from a CRD).
    pub rust_kind: String,
    pub kind_lower: String,
    pub version: String,
    pub qualified_group: String,
    pub plural: String,
    /// The kind's Rust type: `crate::api::<group>::<version>::<Kind>`.
    pub type_path: String,
    /// The modules of this command's hooks: `<kind>_<version>_defaulter` / `..._validator`.
    pub defaulter: Option<String>,
    pub validator: Option<String>,
    /// The paths the API server posts this kind's reviews to.
    pub mutate_path: String,
    pub validate_path: String,
    /// Which kind of API the hooks are for, which chooses their templates.
    #[serde(skip)]
    pub variant: Variant,
    /// The kind's group as PROJECT spells it, and as a Rust module.
    pub group: String,
    pub group_module: String,
    /// Hooks go under their group (`edit --multigroup`).
    #[serde(skip)]
    pub multigroup: bool,
    /// The manager is sharded (`edit --sharding`): 3 replicas, not 2.
    pub sharded_manager: bool,
    /// Who makes the webhook server's certificate.
    #[serde(skip)]
    pub certificates: Certificates,
    /// This command's conversions: one per spoke.
    #[serde(skip)]
    pub conversions: Vec<ConversionContext>,
    /// `--force`: the hooks' files replace existing ones.
    #[serde(skip)]
    pub force: bool,
    /// Every hook of the project once this command ran, in the order `webhook::hooks()`
    /// lists them: what `config/webhook/manifests.yaml` registers.
    #[serde(skip)]
    pub hooks: Vec<manifests::Hook>,
}

/// Who makes the webhook server's certificate: config/certmanager's Certificate, or the manager
/// itself (`--self-signed`, config/webhookcerts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certificates {
    CertManager,
    SelfSigned,
}

/// Which kind of API a kind's hooks are for: each has a whole template of its own per hook
/// (`base/webhook/src/webhook/<hook>/<variant>.rs.tera`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The project's own kind, with the scaffolded example field `foo`.
    Own,
    /// The project's own kind made by deploy-image, whose example field is `size`.
    DeployImage,
    /// A kind Kubernetes defines (k8s-openapi's type): the hooks leave out the cluster's and
    /// the manager's namespaces, since its objects are everywhere; no example.
    Builtin,
    /// Another project's kind: left out as a built-in one; the hooks' tests draw objects from
    /// the project's copy of its CRD.
    External,
    /// A kind adopted from a CRD: the hooks' tests draw objects from its type's schema.
    Adopted,
}

impl Variant {
    /// Every variant, each with its templates.
    pub const ALL: [Self; 5] = [
        Self::Own,
        Self::DeployImage,
        Self::Builtin,
        Self::External,
        Self::Adopted,
    ];

    /// The template of `hook` (`defaulter` or `validator`) for this kind of API.
    pub fn template(self, hook: &str) -> String {
        let variant = match self {
            Self::Own => "own",
            Self::DeployImage => "deploy_image",
            Self::Builtin => "builtin",
            Self::External => "external",
            Self::Adopted => "adopted",
        };
        format!("base/webhook/src/webhook/{hook}/{variant}.rs.tera")
    }
}

/// One spoke's conversions to and from the hub, as the conversion template sees it (`item`).
#[derive(Serialize)]
pub struct ConversionContext {
    pub hub: String,
    pub spoke: String,
    /// `<kind>_conversion`, in the spoke's module.
    pub module: String,
    pub to_hub: Direction,
    pub from_hub: Direction,
}

/// The fields one conversion sets: the target version's, copied or left to the user.
#[derive(Serialize)]
pub struct Direction {
    pub spec: Vec<fields::Copied>,
    pub status: Vec<fields::Copied>,
    /// The target version has a status type; the source version has one.
    pub target_status: bool,
    pub source_status: bool,
    /// Some status field is copied.
    pub status_copied: bool,
}

impl Direction {
    /// The conversion from one version to another; an error if it would have to leave a field
    /// whose type has no `Default` to `Default::default()`.
    fn new(from: &VersionFields, to: &VersionFields) -> anyhow::Result<Self> {
        let to_status = to.status.as_deref().unwrap_or_default();
        let status = fields::copied(from.status.as_deref().unwrap_or_default(), to_status);
        let spec = fields::copied(&from.spec, &to.spec);
        let targets = to.spec.iter().chain(to_status);
        for (field, set) in targets.zip(spec.iter().chain(&status)) {
            if let (Some(ty), false) = (&field.no_default, set.copied) {
                return Err(crate::error::user_error(
                    format!(
                        "`{}` of {} {} is a `{ty}`, which has no `Default`: the conversion from {} cannot leave it to you",
                        field.name, to.kind, to.version, from.version
                    ),
                    format!(
                        "derive or implement `Default` for `{ty}` in {}, then run this command again",
                        to.file
                    ),
                ));
            }
        }
        Ok(Self {
            spec,
            status_copied: status.iter().any(|f| f.copied),
            status,
            target_status: to.status.is_some(),
            source_status: from.status.is_some(),
        })
    }
}

/// The fields of a version's spec and status (`None` without a status type).
struct VersionFields {
    kind: String,
    version: String,
    /// The version's source file.
    file: String,
    spec: Vec<fields::Field>,
    status: Option<Vec<fields::Field>>,
}

impl VersionFields {
    /// Read from the version's type in `tree`.
    fn read(
        tree: &mut Tree,
        group_module: &str,
        version: &str,
        kind: &str,
        rust_kind: &str,
    ) -> anyhow::Result<Self> {
        let file = paths::api_module(group_module, version, &names::snake(kind));
        let text = tree.read(&file)?.unwrap_or_default().to_string();
        let spec = fields::of_struct(&text, &format!("{rust_kind}Spec")).ok_or_else(|| {
            crate::error::user_error(
                format!("cannot find `struct {rust_kind}Spec` with named fields in {file}"),
                format!("the conversions copy the fields of {kind} {version}'s spec: restore that struct, then run this command again"),
            )
        })?;
        let status = fields::of_struct(&text, &format!("{rust_kind}Status"));
        Ok(Self {
            kind: kind.to_string(),
            version: version.to_string(),
            file,
            spec,
            status,
        })
    }
}

impl WebhookContext {
    /// Every name the webhook templates need; `earlier` are the commands before
    /// this one (the kind is looked up there).
    pub fn new(
        init: &InitInputs,
        webhook: &WebhookInputs,
        header: String,
        earlier: &[Command],
        tree: &mut Tree,
    ) -> anyhow::Result<Self> {
        let module = |suffix: &str| hook_module(&webhook.kind, &webhook.version, suffix);
        let mutate = webhook_hook(init, webhook, earlier, true)?;
        let validate = webhook_hook(init, webhook, earlier, false)?;
        let group_module = gvk::group_module(&webhook.group);
        let kind = &webhook.kind;
        let builtin = builtin_of(webhook, earlier);
        let external = is_external(webhook, earlier);
        let adopted = is_adopted(webhook, earlier);
        let rust_kind = match external || adopted {
            true => names::kopium_type(kind),
            false => kind.clone(),
        };
        let deploy_image = earlier.iter().filter_map(Command::api).any(|a| {
            a.resource()
                && a.deploy_image.is_some()
                && (&a.group, &a.version, &a.kind)
                    == (&webhook.group, &webhook.version, &webhook.kind)
        });
        let variant = match (builtin.is_some(), external, adopted, deploy_image) {
            (true, ..) => Variant::Builtin,
            (_, true, ..) => Variant::External,
            (_, _, true, _) => Variant::Adopted,
            (.., true) => Variant::DeployImage,
            _ => Variant::Own,
        };
        let mut conversions = Vec::new();
        if webhook.conversion {
            let hub = VersionFields::read(tree, &group_module, &webhook.version, kind, &rust_kind)?;
            for spoke_version in &webhook.spoke {
                let spoke =
                    VersionFields::read(tree, &group_module, spoke_version, kind, &rust_kind)?;
                conversions.push(ConversionContext {
                    hub: webhook.version.clone(),
                    spoke: spoke_version.clone(),
                    module: format!("{}_conversion", names::snake(kind)),
                    to_hub: Direction::new(&spoke, &hub)?,
                    from_hub: Direction::new(&hub, &spoke)?,
                });
            }
        }
        let all: Vec<Command> = earlier
            .iter()
            .cloned()
            .chain([Command::CreateWebhook(webhook.clone())])
            .collect();
        Ok(WebhookContext {
            crate_name: names::crate_name(&init.project_name),
            project_name: init.project_name.clone(),
            header,
            kind: webhook.kind.clone(),
            kind_lower: webhook.kind.to_lowercase(),
            version: webhook.version.clone(),
            qualified_group: mutate.group.clone(),
            plural: mutate.plural.clone(),
            type_path: match builtin {
                Some(builtin) => builtin.rust_path(),
                None => format!(
                    "crate::api::{}::{}::{rust_kind}",
                    gvk::group_module(&webhook.group),
                    webhook.version,
                ),
            },
            variant,
            rust_kind,
            defaulter: webhook.defaulting.then(|| module("defaulter")),
            validator: webhook.validation.then(|| module("validator")),
            group_module,
            multigroup: EditInputs::multigroup(earlier),
            sharded_manager: EditInputs::sharded_manager(earlier),
            group: webhook.group.clone(),
            certificates: match webhook.self_signed {
                true => Certificates::SelfSigned,
                false => Certificates::CertManager,
            },
            conversions,
            mutate_path: mutate.path,
            validate_path: validate.path,
            force: webhook.force,
            hooks: project_hooks(init, &all)?,
        })
    }
}
