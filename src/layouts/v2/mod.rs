//! The layout of kube-scaffold 0.2 (`rust.kube-scaffold.io/v2`), frozen: its templates are
//! `scaffolds/v2/` as that release shipped them, and this module plans them as it did (0.2's
//! `src/plugins/` and `src/model/manifests.rs`, with today's paths to the modules it shares).
//! It exists so that `upgrade` can render exactly what 0.2 generated (the base of its
//! three-way merge). Never edit it or its templates.

mod codegen;
use serde::Serialize;

use codegen::{adopted, external, fields};

use crate::model::builtin as core;
use crate::model::gvk;
use crate::model::names;
use crate::model::owned::Owned;
use crate::model::project::Resource;
use crate::model::project::{InitInputs, License, Project, WebhookInputs};
use crate::scaffold::plan::Plan;
use crate::scaffold::render::{self, Report};
use crate::scaffold::rustfmt::{Rustfmt, str_const};
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;
use inputs::{ApiInputs, Command, resources_of, stored_version};

mod base;
mod deploy_image;
mod inputs;
mod kustomize;
mod manifests;

/// The versions of the crates and of Rust that layout v2's projects name.
#[derive(Clone, Copy, Serialize)]
pub struct Versions {
    pub kube: &'static str,
    pub k8s_openapi: &'static str,
    /// The k8s-openapi feature: the oldest Kubernetes the operator supports.
    pub kubernetes_feature: &'static str,
    pub schemars: &'static str,
    pub serde_saphyr: &'static str,
    pub axum: &'static str,
    pub prometheus_client: &'static str,
    pub rust: &'static str,
}

/// kube-scaffold 0.2's versions.
const VERSIONS: Versions = Versions {
    kube: "5.0.0",
    k8s_openapi: "0.29.0",
    kubernetes_feature: "v1_33",
    schemars: "1.2",
    serde_saphyr: "2",
    axum: "0.8",
    prometheus_client: "0.25",
    rust: "1.89",
};

/// The layout's name in PROJECT.
pub const LAYOUT: &str = "rust.kube-scaffold.io/v2";

/// A plugin: what it adds to the plan of each command.
pub trait Plugin {
    /// Its key, as PROJECT and `--plugins` name it.
    fn key(&self) -> &'static str;
    /// `init`'s files and inserts.
    fn init(&self, plan: &mut Plan, c: &InitContext);
    /// `create api`'s files and inserts; `tree` holds the project as it is.
    fn create_api(&self, plan: &mut Plan, c: &ApiContext, tree: &mut Tree) -> anyhow::Result<()>;
    /// `create webhook`'s files and inserts.
    fn create_webhook(&self, _plan: &mut Plan, _c: &WebhookContext) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The plugins every project is scaffolded with.
pub const BUNDLE: &[&dyn Plugin] = &[&base::Base, &kustomize::Kustomize];

/// Every plugin this kube-scaffold has, by which PROJECT's keys are found.
const KNOWN: &[&dyn Plugin] = &[
    &base::Base,
    &kustomize::Kustomize,
    &deploy_image::DeployImage,
];

/// The keys of `BUNDLE`, as a new PROJECT records them.
pub fn bundle_keys() -> Vec<String> {
    BUNDLE.iter().map(|p| p.key().to_string()).collect()
}

/// The plugins PROJECT names; an unknown key is an error that names the release to use.
pub fn resolve(project: &Project) -> anyhow::Result<Vec<&'static dyn Plugin>> {
    project
        .plugins
        .iter()
        .map(|key| {
            KNOWN.iter().copied().find(|p| p.key() == key).ok_or_else(|| {
                crate::error::user_error(
                    format!("PROJECT names the plugin `{key}`, which this kube-scaffold does not have"),
                    format!("use kube-scaffold {} or newer, which wrote it", project.cli_version),
                )
            })
        })
        .collect()
}

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
    /// The annotation CRDs of Kubernetes' own groups need, and its value.
    pub api_approval: (&'static str, &'static str),
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
    /// The kind's group as a Rust module.
    pub group_module: String,
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
        let file = format!("src/api/{group_module}/{version}/{}.rs", names::snake(kind));
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
            api_approval: gvk::API_APPROVAL,
        };
        if context.license {
            let boilerplate = templates.render(base::BOILERPLATE_TEMPLATE, &context)?;
            context.header = format!("{boilerplate}\n");
        }
        Ok(context)
    }
}

impl ApiContext {
    /// Every name the templates need, derived from validated inputs; `earlier` are the
    /// commands before this one (owned kinds and other versions are looked up there).
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
            Some(version) => *version == api.version || api.storage_version,
        };
        let previous_stored = stored_before.filter(|v| *v != api.version && api.storage_version);
        let new_version = known.iter().any(|r| {
            r.api && r.group == api.group && r.kind == api.kind && r.version != api.version
        });
        let group_module = gvk::group_module(&api.group);
        let kind_lower = api.kind.to_lowercase();
        let Target {
            group: qualified_group,
            builtin,
            from_file,
            ..
        } = target(init, api, known)?;
        let external_types = match (&api.external_crd, &api.external_crd_text) {
            (Some(path), Some(text)) => {
                let crd = external::parse(text, path)?;
                external::rust_types(&crd, &api.version)?
            }
            (Some(path), None) => anyhow::bail!("the CRD {path} was not read"),
            _ => String::new(),
        };
        let (adopted_versions, adopted_crd) = match (&api.from_crd, &api.from_crd_text) {
            (Some(path), Some(text)) => {
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
                                "crate::api::conditions::schema",
                            )?,
                            served: v.served,
                        })
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let manifest = adopted::manifest(crd, path)?;
                (versions, Some((path.clone(), text.clone(), manifest)))
            }
            (Some(path), None) => anyhow::bail!("the CRD {path} was not read"),
            _ => (Vec::new(), None),
        };
        let stored_types = adopted_versions
            .iter()
            .find(|v| v.version == api.version)
            .map(|v| v.types.as_str());
        let api_version = match builtin {
            Some(k) if k.group.is_empty() => k.version.to_string(),
            _ => format!("{qualified_group}/{}", api.version),
        };
        let spec_foo = api.resource && api.deploy_image.is_none();
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
            external: api.external_crd.is_some(),
            external_default: external::has_default(stored_types.unwrap_or(&external_types)),
            adopted: from_file && api.external_crd.is_none(),
            adopted_versions,
            adopted_crd,
            external_types,
            external_crd: api.external_crd.clone().zip(api.external_crd_text.clone()),
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
                &format!("{kind_lower}-controller"),
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
            group: api.group.clone(),
            version: api.version.clone(),
            kind: api.kind.clone(),
            plural: api.plural.clone(),
            namespaced: api.namespaced,
            finalizer: api.controller && api.finalizer,
            resource: api.resource,
            controller: api.controller,
            force: api.force,
        })
    }
}

/// Renders `init` onto `tree`. The templates are written in rustfmt's layout for names of any
/// length (a test checks it against rustfmt), so nothing is formatted: the output does not
/// depend on the user's rustfmt, and no process is started.
pub fn init(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let context = InitContext::new(init, templates)?;
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.init(&mut plan, &context);
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// What a `create api` command is about: the API group Kubernetes sees, the built-in kind
/// (if it is one), and what its controller's rules cover.
struct Target {
    group: String,
    builtin: Option<&'static core::CoreKind>,
    /// The kind's types came from a CRD file (another project's, or adopted): its controller
    /// is the generic one, which writes no status.
    from_file: bool,
    controls: manifests::Controls,
}

/// `known`: the kinds of the commands before `api`.
fn target(init: &InitInputs, api: &ApiInputs, known: &[Resource]) -> anyhow::Result<Target> {
    if api.builtin {
        let Some(k) = core::find(&api.group, &api.version, &api.kind) else {
            return Err(crate::error::user_error(
                format!(
                    "PROJECT names the built-in kind `{}/{}/{}`, which k8s-openapi does not have",
                    api.group, api.version, api.kind
                ),
                "fix or remove that command in PROJECT",
            ));
        };
        return Ok(Target {
            group: k.group.to_string(),
            builtin: Some(k),
            from_file: false,
            controls: manifests::Controls::Builtin,
        });
    }
    let adopted_earlier = known
        .iter()
        .any(|r| r.adopted && r.group == api.group && r.kind == api.kind);
    let from_file = api.external_crd.is_some() || api.from_crd.is_some() || adopted_earlier;
    let controls = match from_file {
        true => manifests::Controls::Builtin,
        false => manifests::Controls::Kind {
            finalizer: api.finalizer,
        },
    };
    Ok(Target {
        group: gvk::qualified_group(&api.group, &init.domain),
        builtin: None,
        from_file,
        controls,
    })
}

/// The RBAC rules of every controller of the project once `api` is scaffolded after
/// `earlier`, as their `rbac_rules` declare them: the last scaffold of a kind's controller
/// counts.
fn project_rules(
    init: &InitInputs,
    earlier: &[Command],
    api: &ApiInputs,
) -> anyhow::Result<Vec<manifests::Rule>> {
    // Each `create api` with the index of the first command after it.
    let all: Vec<(usize, &ApiInputs)> = earlier
        .iter()
        .enumerate()
        .filter_map(|(i, command)| command.api().map(|a| (i + 1, a)))
        .chain([(earlier.len() + 1, api)])
        .collect();
    let same = |a: &ApiInputs, b: &ApiInputs| {
        (&a.group, &a.version, &a.kind) == (&b.group, &b.version, &b.kind)
    };
    let mut rules = Vec::new();
    for (i, (after, a)) in all.iter().enumerate() {
        if !a.controller || all[i + 1..].iter().any(|(_, b)| b.controller && same(a, b)) {
            continue;
        }
        let known = resources_of(&earlier[..(after - 1).min(earlier.len())]);
        let Target {
            group, controls, ..
        } = target(init, a, &known)?;
        let children = a
            .owns
            .iter()
            .map(|flag| {
                let owned = Owned::parse(flag, &init.domain, &known)?;
                Ok((owned.api_group().to_string(), owned.plural().to_string()))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        rules.extend(manifests::controller_rules(
            &group, &a.plural, controls, &children,
        ));
    }
    Ok(rules)
}

/// Renders `create api` onto `tree`, which holds the project as it is (formatted as `init`).
pub fn create_api(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    api: &ApiInputs,
    earlier: &[Command],
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let header = base::read_header(tree)?;
    let mut context = ApiContext::new(init, api, header, earlier)?;
    context.role_rules = project_rules(init, earlier, api)?;
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.create_api(&mut plan, &context, tree)?;
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// The hooks of `webhook` (after `earlier`), as its templates and the manifests see them.
fn webhook_hook(
    init: &InitInputs,
    webhook: &WebhookInputs,
    earlier: &[Command],
    mutating: bool,
) -> anyhow::Result<manifests::Hook> {
    if let Some(builtin) = builtin_of(webhook, earlier) {
        let mut hook = manifests::Hook::new(
            mutating,
            builtin.group,
            builtin.version,
            builtin.kind,
            builtin.plural,
        );
        hook.excluded_namespaces = excluded_namespaces(init);
        return Ok(hook);
    }
    let external = is_external(webhook, earlier);
    let resource = resources_of(earlier)
        .into_iter()
        .find(|r| {
            (r.api || external)
                && (&r.group, &r.version, &r.kind)
                    == (&webhook.group, &webhook.version, &webhook.kind)
        })
        .ok_or_else(|| {
            crate::error::user_error(
                format!(
                    "PROJECT has a webhook for `{}/{} {}`, which no `create api` made",
                    webhook.group, webhook.version, webhook.kind
                ),
                "fix or remove that command in PROJECT",
            )
        })?;
    let mut hook = manifests::Hook::new(
        mutating,
        &gvk::qualified_group(&webhook.group, &init.domain),
        &webhook.version,
        &webhook.kind,
        &resource.plural,
    );
    if external {
        hook.excluded_namespaces = excluded_namespaces(init);
    }
    Ok(hook)
}

/// Whether `webhook` is for another project's kind (`create api --external-api-crd`).
fn is_external(webhook: &WebhookInputs, earlier: &[Command]) -> bool {
    earlier.iter().filter_map(Command::api).any(|a| {
        a.external_crd.is_some()
            && (&a.group, &a.version, &a.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    })
}

/// Whether `webhook` is for a kind the project adopted from a CRD (`create api --from-crd`).
fn is_adopted(webhook: &WebhookInputs, earlier: &[Command]) -> bool {
    resources_of(earlier).into_iter().any(|r| {
        r.adopted
            && (&r.group, &r.version, &r.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    })
}

/// The kind Kubernetes defines that `webhook` is for, unless the project has a kind of that
/// name (`earlier`).
fn builtin_of(webhook: &WebhookInputs, earlier: &[Command]) -> Option<&'static core::CoreKind> {
    let own = resources_of(earlier).into_iter().any(|r| {
        r.api
            && (&r.group, &r.version, &r.kind) == (&webhook.group, &webhook.version, &webhook.kind)
    });
    match own {
        true => None,
        false => core::find(&webhook.group, &webhook.version, &webhook.kind),
    }
}

/// The namespaces a hook on a kind Kubernetes or another project defines leaves out: the
/// cluster's and the manager's (config/default's `<project>-system`), as its template lists
/// them (`LEFT_OUT`).
fn excluded_namespaces(init: &InitInputs) -> Vec<String> {
    vec![
        "kube-system".into(),
        format!("{}-system", init.project_name),
    ]
}

/// Every hook `commands` made, in the order `webhook::hooks()` lists them: a hook made again
/// (`--force`) keeps its place.
fn project_hooks(init: &InitInputs, commands: &[Command]) -> anyhow::Result<Vec<manifests::Hook>> {
    let mut hooks: Vec<manifests::Hook> = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let Some(webhook) = command.webhook() else {
            continue;
        };
        for (wanted, mutating) in [(webhook.defaulting, true), (webhook.validation, false)] {
            if !wanted {
                continue;
            }
            let hook = webhook_hook(init, webhook, &commands[..i], mutating)?;
            if !hooks.iter().any(|h| h.name == hook.name) {
                hooks.push(hook);
            }
        }
    }
    Ok(hooks)
}

impl WebhookContext {
    /// Every name the webhook templates need; `earlier` are the commands before this one (the
    /// kind is looked up there).
    pub fn new(
        init: &InitInputs,
        webhook: &WebhookInputs,
        header: String,
        earlier: &[Command],
        tree: &mut Tree,
    ) -> anyhow::Result<Self> {
        let module = |suffix: &str| {
            format!(
                "{}_{}_{suffix}",
                names::snake(&webhook.kind),
                webhook.version
            )
        };
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
                a.resource
                    && a.deploy_image.is_some()
                    && (&a.group, &a.version, &a.kind)
                        == (&webhook.group, &webhook.version, &webhook.kind)
            }),
            group_module,
            self_signed: webhook.self_signed,
            conversions,
            mutate_path: mutate.path,
            validate_path: validate.path,
            force: webhook.force,
            hooks: project_hooks(init, &all)?,
        })
    }
}

/// Renders `create webhook` onto `tree`.
pub fn create_webhook(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    webhook: &WebhookInputs,
    earlier: &[Command],
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let header = base::read_header(tree)?;
    let context = WebhookContext::new(init, webhook, header, earlier, tree)?;
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.create_webhook(&mut plan, &context)?;
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// The whole project, rendered from its PROJECT alone: `init`, then every command in order.
/// Nothing is read from disk.
pub fn replay(project: &Project, templates: &Templates) -> anyhow::Result<Tree> {
    let plugins = resolve(project)?;
    let mut tree = Tree::empty();
    init(&plugins, &project.init, templates, &mut tree)?;
    let commands = inputs::history(project);
    for (i, command) in commands.iter().enumerate() {
        match command {
            Command::CreateApi(api) => {
                let earlier = &commands[..i];
                create_api(&plugins, &project.init, api, earlier, templates, &mut tree)?;
            }
            Command::CreateWebhook(webhook) => {
                let earlier = &commands[..i];
                create_webhook(
                    &plugins,
                    &project.init,
                    webhook,
                    earlier,
                    templates,
                    &mut tree,
                )?;
            }
        }
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The base of an upgrade must be exact: rendering 0.2's projects from their PROJECT gives
    /// them back byte for byte.
    #[test]
    fn the_projects_of_0_2_are_rendered_again_byte_for_byte() {
        let templates = Templates::load().unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.2.0");
        for case in std::fs::read_dir(&fixtures).unwrap() {
            let root = case.unwrap().path();
            let project = Project::load(&root).unwrap();
            assert_eq!(project.layout, LAYOUT);
            let tree = replay(&project, &templates).unwrap();
            let mut count = 0;
            for (path, content) in tree.files() {
                let on_disk = std::fs::read_to_string(root.join(path)).unwrap();
                assert_eq!(content, on_disk, "{}: {path}", root.display());
                count += 1;
            }
            assert_eq!(
                count + 1,
                walk(&root),
                "{}: every file but PROJECT is rendered",
                root.display()
            );
        }
    }

    fn walk(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| if p.is_dir() { walk(&p) } else { 1 })
            .sum()
    }
}
