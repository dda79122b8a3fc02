//! What the templates see: one context per command (`init`, `create api`, `create webhook`),
//! computed from its validated inputs and the commands before it.

use serde::Serialize;

use crate::codegen::adopted;
use crate::codegen::external;
use crate::codegen::fields;
use crate::codegen::manifests;
use crate::model::api::ApiInputs;
use crate::model::gvk;
use crate::model::names;
use crate::model::owned::Owned;
use crate::model::project::{
    Command, EditInputs, InitInputs, License, Resource, WebhookInputs, resources_of, stored_version,
};
use crate::model::versions::{VERSIONS, Versions};
use crate::scaffold::rustfmt::str_const;
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;

use super::multigroup::{Moves, hook_module};
use super::policy::{
    Target, builtin_of, is_adopted, is_external, project_hooks, target, webhook_hook,
};
use super::{base, paths};

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
    /// The manager watches only its own namespace, with a Role (`edit --namespaced`).
    pub namespaced_manager: bool,
    /// `edit --multigroup`: what moves under its group.
    #[serde(skip)]
    pub moves: Option<Moves>,
}

/// Everything the `api` templates see, computed from `create api`'s inputs and the project.
#[derive(Serialize)]
pub struct ApiContext {
    pub project_name: String,
    pub crate_name: String,
    pub domain: String,
    pub header: String,
    pub group: String,
    /// The group's Rust module name (`my-app` -> `my_app`).
    pub group_module: String,
    pub qualified_group: String,
    /// The annotation and value the kind's CRD needs if its group is one of Kubernetes' own.
    pub api_approval: Option<(&'static str, &'static str)>,
    pub version: String,
    pub kind: String,
    /// The kind's Rust module name (`HTTPRoute` -> `http_route`).
    pub kind_module: String,
    /// The kind's Rust type: the kind, or kopium's name for it (types from a CRD file).
    pub rust_kind: String,
    pub kind_lower: String,
    /// The controller's name in metrics and logs, and the start of its field manager's: the
    /// kind, lowercase, after its group in a multigroup project (`webapp-guestbook`).
    pub controller_const: String,
    /// The start of the kind's editor and viewer roles' file names (`guestbook`, or
    /// `webapp_guestbook` in a multigroup project); their names are it with dashes.
    pub role_prefix: String,
    /// Controllers and hooks go under their group (`edit --multigroup`).
    #[serde(skip)]
    pub multigroup: bool,
    pub plural: String,
    pub namespaced: bool,
    /// The controller puts a finalizer on its objects and cleans up before they go.
    pub finalizer: bool,
    /// The alias controllers import the group-version under, kubebuilder style (`webappv1`).
    pub api_alias: String,
    pub sample_file: String,
    /// The sample object's name: `<kind>-sample`, the kind cut short to fit a DNS label.
    pub sample_name: String,
    /// String constants, laid out as rustfmt would for their length.
    pub group_const: String,
    pub finalizer_const: String,
    pub field_manager_const: String,
    /// The kinds the controller owns (`--owns`), and the `use` paths of them and of what their
    /// builders need, sorted.
    pub owns: Vec<OwnedContext>,
    pub child_imports: Vec<String>,
    /// A child runs pods (the controller has an `IMAGE`).
    pub workload: bool,
    /// A child reports readiness, so the kind is not available at once.
    pub waits: bool,
    /// The kind's spec has the scaffolded example field `foo` (the type is scaffolded by the
    /// same command), which children's builders use.
    pub spec_foo: bool,
    /// The deploy-image plugin's inputs, and its image and command as string constants.
    pub deploy_image: Option<DeployImageContext>,
    pub image_const: String,
    pub command_const: String,
    /// Another project's kind (`--external-api-crd`): the Rust types kopium made of its CRD,
    /// and where the project keeps the CRD.
    pub external: bool,
    /// kopium derived `Default` for the kind (its tests can build a test object).
    pub external_default: bool,
    #[serde(skip)]
    pub external_types: String,
    #[serde(skip)]
    pub external_crd: Option<(String, String)>,
    /// A kind adopted from a CRD (`--from-crd`): the types of each of its versions; where the
    /// project keeps the CRD, its text, and the manifest `config/crd/bases` starts with.
    pub adopted: bool,
    #[serde(skip)]
    pub adopted_versions: Vec<AdoptedVersion>,
    #[serde(skip)]
    pub adopted_crd: Option<(String, String, String)>,
    /// For a kind Kubernetes defines (`builtin`), another project's or an adopted one: the Rust
    /// type its controller reconciles and its `apiVersion`.
    pub builtin: bool,
    pub builtin_path: String,
    pub api_version: String,
    /// Whether the API server stores this version of the kind (its type does not say
    /// `storage = false`), whether the kind has other versions, and the one stored until this
    /// version took over (`--storage-version`), whose type now says `storage = false`.
    pub stored: bool,
    #[serde(skip)]
    pub new_version: bool,
    #[serde(skip)]
    pub previous_stored: Option<String>,
    /// The RBAC rules of every controller of the project, this one's included.
    #[serde(skip)]
    pub role_rules: Vec<manifests::Rule>,
    /// Which parts `create api` scaffolds.
    #[serde(skip)]
    pub resource: bool,
    #[serde(skip)]
    pub controller: bool,
    /// `--force`: the kind's own files replace existing ones.
    #[serde(skip)]
    pub force: bool,
}

/// One version of an adopted kind: its Rust types, and whether the API server serves it.
pub struct AdoptedVersion {
    pub version: String,
    pub types: String,
    pub served: bool,
}

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
    /// The kind's spec has the scaffolded example field `foo` (else deploy-image's `size`).
    pub spec_foo: bool,
    /// A kind Kubernetes defines (k8s-openapi's type; no example in the hooks).
    pub builtin: bool,
    /// Another project's kind: the hooks' tests draw objects from the project's copy of its
    /// CRD (no example in the hooks).
    pub external: bool,
    /// A kind adopted from a CRD: the hooks' tests draw objects from its type's schema (no
    /// example in the hooks).
    pub adopted: bool,
    /// The hooks leave out the cluster's and the manager's namespaces (a kind the project
    /// does not define: its objects are everywhere).
    pub outside: bool,
    /// The kind's group as PROJECT spells it, and as a Rust module.
    pub group: String,
    pub group_module: String,
    /// Hooks go under their group (`edit --multigroup`).
    #[serde(skip)]
    pub multigroup: bool,
    /// The manager makes the webhooks' certificates (`--self-signed`), else cert-manager.
    pub self_signed: bool,
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

/// The deploy-image plugin's inputs, as the templates see them.
#[derive(Serialize)]
pub struct DeployImageContext {
    pub image: String,
    pub command: Option<String>,
    pub port: Option<u16>,
    pub run_as_user: Option<i64>,
}

/// One kind the controller owns, as the controller's template sees it.
#[derive(Serialize)]
pub struct OwnedContext {
    pub kind: String,
    /// The name the controller calls it: the kind, or `Owned<Kind>` where the kind's name is
    /// taken in the controller's module.
    pub name: String,
    /// The path of its `use` line, with `as <name>` when it is renamed.
    pub path: String,
    /// `--owns` as PROJECT records it.
    pub flag: String,
    /// The kind in snake case, for test names.
    pub module: String,
    /// How the child is built: `deployment`, `config_map`, or `generic` (metadata only).
    pub builder: &'static str,
    /// For the ClusterRole: the API group and the resource.
    #[serde(skip)]
    pub api_group: String,
    #[serde(skip)]
    pub plural: String,
}

/// Names a controller module defines or imports; an owned kind of one of these names is
/// imported as `Owned<Kind>`.
const CONTROLLER_NAMES: &[&str] = &[
    "Action",
    "Api",
    "Applied",
    "Arc",
    "BoxFuture",
    "Child",
    "Context",
    "Controller",
    "Duration",
    "Error",
    "Event",
    "EventType",
    "FutureExt",
    "Method",
    "Object",
    "ObjectRef",
    "Owned",
    "Patch",
    "PatchParams",
    "PolicyRule",
    "Resource",
    "ResourceExt",
    "Result",
    "Spec",
    "Status",
    "StreamExt",
    "Time",
    "Timestamp",
    "Value",
];

/// The types the builders of `builder` children import.
fn builder_imports(builder: &str, spec_foo: bool, port: bool) -> Vec<&'static str> {
    match builder {
        "deployment" => {
            let mut imports = vec![
                "k8s_openapi::api::apps::v1::DeploymentSpec",
                "k8s_openapi::api::core::v1::Capabilities",
                "k8s_openapi::api::core::v1::Container",
                "k8s_openapi::api::core::v1::PodSecurityContext",
                "k8s_openapi::api::core::v1::PodSpec",
                "k8s_openapi::api::core::v1::PodTemplateSpec",
                "k8s_openapi::api::core::v1::SeccompProfile",
                "k8s_openapi::api::core::v1::SecurityContext",
                "k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector",
                "k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta",
            ];
            if spec_foo {
                imports.push("k8s_openapi::api::core::v1::EnvVar");
            }
            if port {
                imports.push("k8s_openapi::api::core::v1::ContainerPort");
            }
            imports
        }
        "config_map" if spec_foo => vec!["std::collections::BTreeMap"],
        _ => Vec::new(),
    }
}

/// Sorts `use` paths as rustfmt does within a group: segment by segment.
fn sort_imports(imports: &mut Vec<String>) {
    imports.sort_by(|a, b| a.split("::").cmp(b.split("::")));
    imports.dedup();
}

fn owned_contexts(
    api: &ApiInputs,
    domain: &str,
    known: &[Resource],
    spec_foo: bool,
) -> anyhow::Result<(Vec<OwnedContext>, Vec<String>)> {
    let mut owns = Vec::new();
    let mut imports = Vec::new();
    for flag in &api.owns {
        let owned = Owned::parse(flag, domain, known)?;
        let kind = owned.kind().to_string();
        let builder = match &owned {
            Owned::Core(k) if k.group == "apps" && k.kind == "Deployment" => "deployment",
            Owned::Core(k) if k.group.is_empty() && k.kind == "ConfigMap" => "config_map",
            _ => "generic",
        };
        let (name, path) = if CONTROLLER_NAMES.contains(&kind.as_str()) {
            let name = format!("Owned{kind}");
            let path = format!("{} as {name}", owned.rust_path());
            (name, path)
        } else {
            (kind.clone(), owned.rust_path())
        };
        imports.push(path.clone());
        let port = api
            .deploy_image
            .as_ref()
            .is_some_and(|d| d.container_port.is_some());
        let needs = builder_imports(builder, spec_foo, port);
        imports.extend(needs.into_iter().map(String::from));
        owns.push(OwnedContext {
            module: names::snake(&kind),
            kind,
            name,
            path,
            flag: owned.record(),
            builder,
            api_group: owned.api_group().to_string(),
            plural: owned.plural().to_string(),
        });
    }
    sort_imports(&mut imports);
    Ok((owns, imports))
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
            namespaced_manager: false,
            moves: None,
        };
        if context.license {
            let boilerplate = templates.render(base::BOILERPLATE_TEMPLATE, &context)?;
            context.header = format!("{boilerplate}\n");
        }
        Ok(context)
    }
}

impl ApiContext {
    /// Every name the templates need, derived from validated inputs; `earlier`
    /// are the commands before this one (owned kinds and other versions are looked up there).
    pub fn new(
        init: &InitInputs,
        api: &ApiInputs,
        header: String,
        earlier: &[Command],
    ) -> anyhow::Result<Self> {
        let known = &resources_of(earlier);
        let stored_before = stored_version(earlier, &api.group, &api.kind);
        let stored = match &stored_before {
            None => true,
            Some(version) => *version == api.version || api.storage_version(),
        };
        let previous_stored = stored_before.filter(|v| *v != api.version && api.storage_version());
        let new_version = known.iter().any(|r| {
            r.api && r.group == api.group && r.kind == api.kind && r.version != api.version
        });
        let group_module = gvk::group_module(&api.group);
        let kind_lower = api.kind.to_lowercase();
        let multigroup = EditInputs::multigroup(earlier);
        let role_prefix = match multigroup {
            true => format!("{group_module}_{kind_lower}"),
            false => kind_lower.clone(),
        };
        let controller_name = role_prefix.replace('_', "-");
        let Target {
            group: qualified_group,
            builtin,
            from_file,
            ..
        } = target(init, api, known)?;
        let external_types = match api.external() {
            Some(crd) => {
                let parsed = external::parse(&crd.text, &crd.path)?;
                external::rust_types(&parsed, &api.version)?
            }
            None => String::new(),
        };
        let (adopted_versions, adopted_crd) = match api.adopted() {
            Some((crd, _)) => {
                let (path, text) = (&crd.path, &crd.text);
                let crd = external::parse(text, path)?;
                let versions = crd
                    .spec
                    .versions
                    .iter()
                    .map(|v| {
                        Ok(AdoptedVersion {
                            version: v.name.clone(),
                            types: adopted::rust_types(
                                &crd,
                                &v.name,
                                path,
                                adopted::CONDITIONS_SCHEMA,
                            )?,
                            served: v.served,
                        })
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let manifest = adopted::manifest(crd, path)?;
                (versions, Some((path.clone(), text.clone(), manifest)))
            }
            None => (Vec::new(), None),
        };
        let stored_types = adopted_versions
            .iter()
            .find(|v| v.version == api.version)
            .map(|v| v.types.as_str());
        let api_version = match builtin {
            Some(k) if k.group.is_empty() => k.version.to_string(),
            _ => format!("{qualified_group}/{}", api.version),
        };
        let spec_foo = api.resource() && api.deploy_image.is_none();
        let deploy_image = api.deploy_image.as_ref().map(|d| DeployImageContext {
            image: d.image.clone(),
            command: d.container_command.clone(),
            port: d.container_port,
            run_as_user: d.run_as_user,
        });
        let image_const = match &deploy_image {
            Some(d) => str_const("const IMAGE: &str", &d.image),
            None => String::new(),
        };
        let command_const = match deploy_image.as_ref().and_then(|d| d.command.as_ref()) {
            Some(command) => str_const("const COMMAND: &str", command),
            None => String::new(),
        };
        let (owns, child_imports) = owned_contexts(api, &init.domain, known, spec_foo)?;
        // A Deployment child runs pods, and is not ready at once.
        let runs_pods = owns.iter().any(|o| o.builder == "deployment");
        let builtin_path = match builtin {
            Some(k) => k.rust_path(),
            None if from_file => format!(
                "crate::api::{}::{}::{}",
                gvk::group_module(&api.group),
                api.version,
                names::kopium_type(&api.kind)
            ),
            None => String::new(),
        };
        let rust_kind = match from_file {
            true => names::kopium_type(&api.kind),
            false => api.kind.clone(),
        };
        Ok(Self {
            rust_kind,
            external: api.external().is_some(),
            external_default: external::has_default(stored_types.unwrap_or(&external_types)),
            adopted: from_file && api.external().is_none(),
            adopted_versions,
            adopted_crd,
            external_types,
            external_crd: api
                .external()
                .map(|crd| (crd.path.clone(), crd.text.clone())),
            builtin_path,
            role_rules: Vec::new(),
            stored,
            new_version,
            previous_stored,
            deploy_image,
            image_const,
            command_const,
            builtin: builtin.is_some() || from_file,
            api_version,
            workload: runs_pods,
            waits: runs_pods,
            spec_foo,
            owns,
            child_imports,
            group_const: str_const("pub const GROUP: &str", &qualified_group),
            finalizer_const: str_const(
                "pub const FINALIZER: &str",
                &format!("{qualified_group}/finalizer"),
            ),
            field_manager_const: str_const(
                "pub const FIELD_MANAGER: &str",
                &format!("{controller_name}-controller"),
            ),
            project_name: init.project_name.clone(),
            crate_name: names::crate_name(&init.project_name),
            domain: init.domain.clone(),
            header,
            api_approval: gvk::is_protected(&qualified_group).then_some(gvk::API_APPROVAL),
            qualified_group,
            api_alias: format!("{group_module}{}", api.version),
            group_module,
            kind_module: names::snake(&api.kind),
            sample_file: format!("{}_{}_{kind_lower}.yaml", api.group, api.version),
            sample_name: format!("{}-sample", &kind_lower[..kind_lower.len().min(56)]),
            kind_lower,
            controller_const: str_const("pub const CONTROLLER: &str", &controller_name),
            role_prefix,
            multigroup,
            group: api.group.clone(),
            version: api.version.clone(),
            kind: api.kind.clone(),
            plural: api.plural.clone(),
            namespaced: api.namespaced,
            finalizer: api.controller && api.finalizer,
            resource: api.resource(),
            controller: api.controller,
            force: api.force,
        })
    }
}

impl ApiContext {
    /// The group whose folder holds the controller (a multigroup project's), if any.
    pub fn group_dir(&self) -> Option<&str> {
        self.multigroup.then_some(self.group_module.as_str())
    }

    /// Where the kind's controller goes.
    pub fn controller_file(&self) -> String {
        paths::controller(self.group_dir(), &self.kind_module)
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
            builtin: builtin.is_some(),
            outside: builtin.is_some() || external,
            external,
            adopted,
            rust_kind,
            defaulter: webhook.defaulting.then(|| module("defaulter")),
            validator: webhook.validation.then(|| module("validator")),
            spec_foo: !earlier.iter().filter_map(Command::api).any(|a| {
                a.resource()
                    && a.deploy_image.is_some()
                    && (&a.group, &a.version, &a.kind)
                        == (&webhook.group, &webhook.version, &webhook.kind)
            }),
            group_module,
            multigroup: EditInputs::multigroup(earlier),
            group: webhook.group.clone(),
            self_signed: webhook.self_signed,
            conversions,
            mutate_path: mutate.path,
            validate_path: validate.path,
            force: webhook.force,
            hooks: project_hooks(init, &all)?,
        })
    }
}
