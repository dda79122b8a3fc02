//! What `create api`'s plugins see: `ApiContext` for the templates, `ApiPlan` for the planner.

use serde::Serialize;

use crate::codegen::external;
use crate::codegen::kind_types::KindTypes;
use crate::codegen::manifests;
use crate::model::api::{ApiInputs, DeployImage};
use crate::model::gvk;
use crate::model::names;
use crate::model::owned::Owned;
use crate::model::project::{Command, EditInputs, InitInputs, Resource};
use crate::model::project::{resources_of, stored_version};
use crate::scaffold::rustfmt::str_const;

use super::super::paths;
use super::super::policy::{Target, target};

/// Where a kind's Rust type comes from, which decides its controller's template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A template: the project's own kind.
    Own,
    /// k8s-openapi: a kind Kubernetes defines.
    Builtin,
    /// kopium, from another project's CRD.
    External,
    /// kopium, from a CRD the project adopted as its own.
    Adopted,
}

impl Source {
    /// Where the type of `api`'s kind comes from; a later version of an adopted kind is
    /// adopted too.
    fn of(target: &Target, api: &ApiInputs) -> Self {
        match (target.builtin, target.from_file, api.external()) {
            (Some(_), ..) => Self::Builtin,
            (None, true, Some(_)) => Self::External,
            (None, true, None) => Self::Adopted,
            (None, false, _) => Self::Own,
        }
    }

    /// kopium made the kind's Rust types from a CRD.
    pub fn from_crd(self) -> bool {
        matches!(self, Self::External | Self::Adopted)
    }
}

/// Everything the `api` templates see, computed from `create api`'s inputs and the project.
#[derive(Serialize)]
pub struct ApiContext {
    pub project_name: String,
    pub crate_name: String,
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
    pub source: Source,
    /// The controller's name in metrics and logs, and the start of its field manager's: the
    /// kind, lowercase, after its group in a multigroup project (`webapp-guestbook`).
    pub controller_const: String,
    /// The start of the kind's editor and viewer roles' file names (`guestbook`, or
    /// `webapp_guestbook` in a multigroup project); their names are it with dashes.
    pub role_prefix: String,
    pub plural: String,
    pub scope: Scope,
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
    /// A child runs pods (the controller has an `IMAGE`), so the kind is not available at once.
    pub runs_pods: bool,
    /// The kind's spec has the scaffolded example field `foo` (the type is scaffolded by the
    /// same command), which children's builders use.
    pub spec_foo: bool,
    /// The deploy-image plugin's inputs.
    pub deploy_image: Option<DeployImageContext>,
    /// How the kind's tests make an object of it.
    pub test_object: TestObject,
    /// For a kind the project does not scaffold from a template: the Rust type its controller
    /// reconciles and its `apiVersion`.
    pub builtin_path: String,
    pub api_version: String,
    /// Whether the API server stores this version of the kind (its type does not say
    /// `storage = false`).
    pub version_role: VersionRole,
}

/// The scope of a kind's objects, as its CRD names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// What a version of a kind is to the API server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionRole {
    /// The version objects are stored in.
    Storage,
    /// Served, and converted to and from the storage version.
    Served,
}

/// How a controller's tests make an object of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestObject {
    /// From its type's `Default`.
    Default,
    /// One its schema allows (`testing::example`): kopium derived no `Default` for its spec.
    Schema,
}

/// What `create api`'s plugins plan from beside the templates' context: which parts the
/// command makes, where they go, and what was generated for them.
pub struct ApiPlan {
    /// The kind's Rust type and CRD (`--resource`), its controller (`--controller`), and
    /// whether they replace existing files (`--force`).
    pub resource: bool,
    pub controller: bool,
    pub force: bool,
    /// The kind has other versions (their roles exist).
    pub new_version: bool,
    /// The version stored until this one took over (`--storage-version`): its type now says
    /// `storage = false`.
    pub previous_stored: Option<String>,
    /// The group whose folder holds the controller (a multigroup project's), if any.
    pub group_dir: Option<String>,
    /// Where the kind's controller goes.
    pub controller_file: String,
    /// The RBAC rules of every controller of the project, this one's included.
    pub role_rules: Vec<manifests::Rule>,
    /// The kind's Rust types, when kopium made them from a CRD.
    pub types: KindTypes,
}

/// The deploy-image plugin's inputs, as the templates see them.
#[derive(Serialize)]
pub struct DeployImageContext {
    pub image: String,
    pub command: Option<String>,
    pub port: Option<u16>,
    pub run_as_user: Option<i64>,
    /// The image and the command as string constants.
    pub image_const: String,
    pub command_const: String,
}

impl DeployImageContext {
    fn new(d: &DeployImage) -> Self {
        let command_const = match &d.container_command {
            Some(command) => str_const("const COMMAND: &str", command),
            None => String::new(),
        };
        Self {
            image: d.image.clone(),
            command: d.container_command.clone(),
            port: d.container_port,
            run_as_user: d.run_as_user,
            image_const: str_const("const IMAGE: &str", &d.image),
            command_const,
        }
    }
}

/// How the controller builds an owned kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Builder {
    /// A Deployment running the kind's image.
    Deployment,
    /// A ConfigMap with the kind's data.
    ConfigMap,
    /// Metadata only.
    Generic,
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
    pub builder: Builder,
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
fn builder_imports(builder: Builder, spec_foo: bool, port: bool) -> Vec<&'static str> {
    match builder {
        Builder::Deployment => {
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
        Builder::ConfigMap if spec_foo => vec!["std::collections::BTreeMap"],
        _ => Vec::new(),
    }
}

/// Sorts `use` paths as rustfmt does within a group: segment by segment.
fn sort_imports(imports: &mut Vec<String>) {
    imports.sort_by(|a, b| a.split("::").cmp(b.split("::")));
    imports.dedup();
}

/// The kinds `api` owns as the controller's template sees them, and the `use` paths they
/// need, sorted.
fn owned_contexts(
    api: &ApiInputs,
    domain: &str,
    known: &[Resource],
    spec_foo: bool,
) -> anyhow::Result<(Vec<OwnedContext>, Vec<String>)> {
    let mut owns = Vec::new();
    let mut imports = Vec::new();
    let port = api
        .deploy_image
        .as_ref()
        .is_some_and(|d| d.container_port.is_some());
    for flag in &api.owns {
        let owned = Owned::parse(flag, domain, known)?;
        let kind = owned.kind().to_string();
        let builder = match &owned {
            Owned::Core(k) if k.group == "apps" && k.kind == "Deployment" => Builder::Deployment,
            Owned::Core(k) if k.group.is_empty() && k.kind == "ConfigMap" => Builder::ConfigMap,
            _ => Builder::Generic,
        };
        let (name, path) = if CONTROLLER_NAMES.contains(&kind.as_str()) {
            let name = format!("Owned{kind}");
            let path = format!("{} as {name}", owned.rust_path());
            (name, path)
        } else {
            (kind.clone(), owned.rust_path())
        };
        imports.push(path.clone());
        imports.extend(
            builder_imports(builder, spec_foo, port)
                .into_iter()
                .map(String::from),
        );
        owns.push(OwnedContext {
            module: names::snake(&kind),
            kind,
            name,
            path,
            flag: owned.record(),
            builder,
        });
    }
    sort_imports(&mut imports);
    Ok((owns, imports))
}

/// What the commands before a `create api` say about its kind, read once for both of its
/// views (`ApiContext`, `ApiPlan`).
pub struct Earlier {
    /// The kinds they made.
    known: Vec<Resource>,
    /// The version of the kind the API server stored until now, if the kind has one.
    stored: Option<String>,
    /// Controllers go under their group (`edit --multigroup`).
    multigroup: bool,
    /// The manager is sharded (`edit --sharding`).
    sharded: bool,
}

impl Earlier {
    /// What `commands`, those before `api`, say about its kind.
    pub fn read(api: &ApiInputs, commands: &[Command]) -> Self {
        Self {
            known: resources_of(commands),
            stored: stored_version(commands, &api.group, &api.kind),
            multigroup: EditInputs::multigroup(commands),
            sharded: EditInputs::sharded_manager(commands),
        }
    }
}

impl ApiContext {
    /// Every name the templates need, derived from validated inputs and the types generated
    /// for them, after `earlier` commands (owned kinds are looked up there).
    pub fn new(
        init: &InitInputs,
        api: &ApiInputs,
        types: &KindTypes,
        header: String,
        earlier: &Earlier,
    ) -> anyhow::Result<Self> {
        let known = &earlier.known;
        let stored = match &earlier.stored {
            None => true,
            Some(version) => *version == api.version || api.storage_version(),
        };
        let group_module = gvk::group_module(&api.group);
        let kind_lower = api.kind.to_lowercase();
        let role_prefix = match earlier.multigroup {
            true => format!("{group_module}_{kind_lower}"),
            false => kind_lower.clone(),
        };
        let controller_name = role_prefix.replace('_', "-");
        let target = target(init, api, known)?;
        let (source, builtin) = (Source::of(&target, api), target.builtin);
        let qualified_group = target.group;
        let rust_kind = match source.from_crd() {
            true => names::kopium_type(&api.kind),
            false => api.kind.clone(),
        };
        let api_version = match builtin {
            Some(k) if k.group.is_empty() => k.version.to_string(),
            _ => format!("{qualified_group}/{}", api.version),
        };
        let builtin_path = match (builtin, source) {
            (Some(k), _) => k.rust_path(),
            (None, Source::Own) => String::new(),
            (None, _) => format!("crate::api::{group_module}::{}::{rust_kind}", api.version),
        };
        let spec_foo = api.resource() && api.deploy_image.is_none();
        let (owns, child_imports) = owned_contexts(api, &init.domain, known, spec_foo)?;
        let finalizer = format!("{qualified_group}/finalizer");
        Ok(Self {
            test_object: match source {
                Source::Builtin | Source::Own => TestObject::Default,
                _ if types.of(&api.version).is_some_and(external::has_default) => {
                    TestObject::Default
                }
                _ => TestObject::Schema,
            },
            runs_pods: owns.iter().any(|o| o.builder == Builder::Deployment),
            source,
            rust_kind,
            builtin_path,
            version_role: match stored {
                true => VersionRole::Storage,
                false => VersionRole::Served,
            },
            deploy_image: api.deploy_image.as_ref().map(DeployImageContext::new),
            api_version,
            spec_foo,
            owns,
            child_imports,
            group_const: str_const("pub const GROUP: &str", &qualified_group),
            finalizer_const: str_const("pub const FINALIZER: &str", &finalizer),
            field_manager_const: str_const(
                "pub const FIELD_MANAGER: &str",
                &format!("{controller_name}-controller"),
            ),
            project_name: init.project_name.clone(),
            crate_name: names::crate_name(&init.project_name),
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
            group: api.group.clone(),
            version: api.version.clone(),
            kind: api.kind.clone(),
            plural: api.plural.clone(),
            scope: match api.namespaced {
                true => Scope::Namespaced,
                false => Scope::Cluster,
            },
            finalizer: api.controller && api.finalizer,
        })
    }
}

impl ApiPlan {
    /// What the plugins plan `api` from, after `earlier` commands: the names its templates'
    /// context `c` has, `types` generated by the command for it, and `role_rules` of every
    /// controller once it ran.
    pub fn new(
        api: &ApiInputs,
        c: &ApiContext,
        types: KindTypes,
        mut role_rules: Vec<manifests::Rule>,
        earlier: &Earlier,
    ) -> Self {
        if earlier.sharded {
            manifests::sharded(&mut role_rules);
        }
        let previous_stored = (earlier.stored.as_ref())
            .filter(|v| **v != api.version && api.storage_version())
            .cloned();
        let new_version = earlier.known.iter().any(|r| {
            r.api && r.group == api.group && r.kind == api.kind && r.version != api.version
        });
        let group_dir = earlier.multigroup.then(|| c.group_module.clone());
        Self {
            resource: api.resource(),
            controller: api.controller,
            force: api.force,
            new_version,
            previous_stored,
            controller_file: paths::controller(group_dir.as_deref(), &c.kind_module),
            group_dir,
            role_rules,
            types,
        }
    }
}
