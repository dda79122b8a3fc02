//! `kube-scaffold create api`: adds a kind (its Rust type, CRD, samples, RBAC) and its
//! controller, and wires them into the manager.

use std::path::Path;

use serde::Serialize;

use crate::cli::CreateApiArgs;
use crate::model::gvk::{self, Gvk};
use crate::model::manifests;
use crate::model::names;
use crate::model::project::{Project, Resource};
use crate::prompt;
use crate::scaffold::plan::{IfExists, Plan};
use crate::scaffold::templates::Templates;
use crate::ui::{self, user_error};

/// Where `init` put the license header that `create api` puts atop new sources.
const BOILERPLATE: &str = "hack/boilerplate.rs.txt";

/// Everything the `api` templates see.
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
    pub version: String,
    pub kind: String,
    /// The kind's Rust module name (`HTTPRoute` -> `http_route`).
    pub kind_module: String,
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
}

pub fn run(root: &Path, args: CreateApiArgs) -> anyhow::Result<()> {
    let mut project = Project::load(root)?;
    project.check_compatible()?;
    let gvk = Gvk::parse(&args.group, &args.version, &args.kind, &project.domain)?;
    let plural = resource_plural(&gvk, args.plural.as_deref(), &project.domain)?;
    check_against_project(&project, &gvk)?;
    let header = read_header(root)?;

    let resource = prompt::confirm(args.resource, "Create Resource", "--resource")?;
    let controller = prompt::confirm(args.controller, "Create Controller", "--controller")?;
    let existing = project
        .resource(&gvk.group, &gvk.version, &gvk.kind)
        .cloned();
    check_request(&gvk, existing.as_ref(), resource, controller, args.force)?;

    let mut context = ApiContext::new(&project, &gvk, plural, args.namespaced, header);
    context.finalizer = args.finalizer;
    let mut plan = Plan::default();
    if resource {
        plan_resource(&mut plan, &context);
    }
    if controller {
        plan_controller(&mut plan, &context);
        plan_role(&mut plan, root, &context)?;
    }
    let previous = existing.unwrap_or(Resource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        kind: gvk.kind.clone(),
        plural: context.plural.clone(),
        namespaced: context.namespaced,
        api: false,
        controller: false,
        finalizer: false,
    });
    project.upsert(Resource {
        plural: context.plural.clone(),
        namespaced: context.namespaced,
        api: previous.api || resource,
        controller: previous.controller || controller,
        finalizer: if controller {
            args.finalizer
        } else {
            previous.finalizer
        },
        ..previous
    });
    let how = super::Execution {
        force: args.force,
        overwrite_edited: args.overwrite_edited,
        dry_run: args.dry_run,
        track_edits: true,
        conflict_help: "pass `--force` to scaffold the kind's files again",
    };
    let templates = Templates::load()?;
    super::execute(&templates, &plan, &context, root, project, &how)?;
    if args.dry_run {
        return Ok(());
    }
    ui::say(
        "\nNext: implement your new API and generate the manifests (CRDs, RBAC) with:\n$ make manifests",
    );
    Ok(())
}

impl ApiContext {
    /// Every name the templates need, derived from validated input.
    pub fn new(
        project: &Project,
        gvk: &Gvk,
        plural: String,
        namespaced: bool,
        header: String,
    ) -> Self {
        let group_module = names::crate_name(&gvk.group);
        let kind_lower = gvk.kind.to_lowercase();
        Self {
            project_name: project.project_name.clone(),
            crate_name: names::crate_name(&project.project_name),
            domain: project.domain.clone(),
            header,
            qualified_group: gvk.qualified_group(&project.domain),
            api_alias: format!("{group_module}{}", gvk.version),
            group_module,
            kind_module: names::snake(&gvk.kind),
            sample_file: format!("{}_{}_{kind_lower}.yaml", gvk.group, gvk.version),
            sample_name: format!("{}-sample", &kind_lower[..kind_lower.len().min(56)]),
            kind_lower,
            group: gvk.group.clone(),
            version: gvk.version.clone(),
            kind: gvk.kind.clone(),
            plural,
            namespaced,
            finalizer: false,
        }
    }
}

/// The files and inserts of a kind's type, CRD entry, sample and RBAC roles.
pub fn plan_resource(plan: &mut Plan, c: &ApiContext) {
    let (group, version, kind) = (&c.group_module, &c.version, &c.kind_module);
    plan.file(
        "api/src/api/group.rs.tera",
        format!("src/api/{group}/mod.rs"),
        IfExists::Skip,
    );
    plan.file(
        "api/src/api/version.rs.tera",
        format!("src/api/{group}/{version}/mod.rs"),
        IfExists::Skip,
    );
    plan.file(
        "api/src/api/kind.rs.tera",
        format!("src/api/{group}/{version}/{kind}.rs"),
        IfExists::Error,
    );
    plan.yaml_file(
        "api/config/crd/crd.json.tera",
        format!("config/crd/{}", crd_base(c)),
        IfExists::Skip,
        manifests::HEADER,
    );
    plan.file(
        "api/config/crd/kustomization.yaml.tera",
        "config/crd/kustomization.yaml",
        IfExists::Skip,
    );
    plan.file(
        "api/config/samples/kustomization.yaml.tera",
        "config/samples/kustomization.yaml",
        IfExists::Skip,
    );
    plan.file(
        "api/config/samples/sample.yaml.tera",
        format!("config/samples/{}", c.sample_file),
        IfExists::Error,
    );
    plan.file(
        "api/config/rbac/editor_role.yaml.tera",
        format!("config/rbac/{}_editor_role.yaml", c.kind_lower),
        IfExists::Error,
    );
    plan.file(
        "api/config/rbac/viewer_role.yaml.tera",
        format!("config/rbac/{}_viewer_role.yaml", c.kind_lower),
        IfExists::Error,
    );

    plan.insert(
        "src/api/mod.rs",
        "api-groups",
        format!("pub mod {group};\n\n"),
    );
    plan.insert(
        "src/api/mod.rs",
        "resources",
        format!("ApiResource::erase::<{group}::{version}::{}>(&()),", c.kind),
    );
    plan.insert(
        "src/api/mod.rs",
        "crds",
        format!(
            "<{group}::{version}::{} as kube::CustomResourceExt>::crd(),",
            c.kind
        ),
    );
    plan.insert(
        format!("src/api/{group}/mod.rs"),
        "api-versions",
        format!("pub mod {version};\n\n"),
    );
    plan.insert(
        format!("src/api/{group}/{version}/mod.rs"),
        "api-kinds",
        format!("mod {kind};\npub use {kind}::*;"),
    );
    plan.insert("config/default/kustomization.yaml", "crd", "- ../crd");
    plan.insert(
        "config/crd/kustomization.yaml",
        "crdkustomizeresource",
        format!("- {}", crd_base(c)),
    );
    plan.insert(
        "config/samples/kustomization.yaml",
        "manifestskustomizesamples",
        format!("- {}", c.sample_file),
    );
    plan.insert(
        "config/rbac/kustomization.yaml",
        "rbac-roles",
        format!(
            "- {0}_editor_role.yaml\n- {0}_viewer_role.yaml",
            c.kind_lower
        ),
    );
}

/// The kind's CRD under `config/crd`, as `make manifests` names it.
fn crd_base(c: &ApiContext) -> String {
    format!("bases/{}_{}.yaml", c.qualified_group, c.plural)
}

/// The manager's ClusterRole with the rules of the kind's controller, if `role.yaml` is still
/// as `make manifests` wrote it; else a note, and the file is left for `make manifests`.
fn plan_role(plan: &mut Plan, root: &Path, c: &ApiContext) -> anyhow::Result<()> {
    let role = match std::fs::read_to_string(root.join(manifests::ROLE_FILE)) {
        Ok(text) => manifests::role_with(&text, &c.qualified_group, &c.plural, c.finalizer),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(
                anyhow::Error::new(err).context(format!("cannot read {}", manifests::ROLE_FILE))
            );
        }
    };
    match role {
        Some(role) => plan.computed(manifests::ROLE_FILE, role),
        None => ui::note(&format!(
            "{} is not as `make manifests` wrote it: run `make manifests` to add the rules of {}",
            manifests::ROLE_FILE,
            c.kind
        )),
    }
    Ok(())
}

/// The files and inserts of a kind's controller.
pub fn plan_controller(plan: &mut Plan, c: &ApiContext) {
    let kind = &c.kind_module;
    plan.file(
        "api/src/controller/mock.rs.tera",
        "src/controller/mock.rs",
        IfExists::Skip,
    );
    plan.insert(
        "src/controller/mod.rs",
        "controller-modules",
        "#[cfg(test)]\nmod mock;\n\n",
    );
    plan.file(
        "api/src/controller/kind.rs.tera",
        format!("src/controller/{kind}.rs"),
        IfExists::Error,
    );
    plan.insert(
        "src/controller/mod.rs",
        "controller-modules",
        format!("pub mod {kind};\n\n"),
    );
    plan.insert(
        "src/controller/mod.rs",
        "controllers",
        format!("controllers.spawn({kind}::run(ctx.clone()));"),
    );
    plan.insert(
        "src/controller/mod.rs",
        "rbac-rules",
        format!("{kind}::rbac_rules(),"),
    );
}

/// The resource's plural, `given` or the English plural of the kind, checked on its own and
/// as part of the CRD's name, `<plural>.<group>.<domain>`, which must be a DNS subdomain.
fn resource_plural(gvk: &Gvk, given: Option<&str>, domain: &str) -> anyhow::Result<String> {
    let plural = match given {
        Some(plural) => gvk::plural(plural)?,
        None => gvk::plural(&names::plural(&gvk.kind)).map_err(|err| {
            err.context(format!(
                "the plural of kind `{}` cannot name a resource",
                gvk.kind
            ))
        })?,
    };
    let name = format!("{plural}.{}", gvk.qualified_group(domain));
    match names::dns1123_subdomain_problem(&name) {
        Some(problem) => Err(user_error(
            format!("the CRD name `{name}` is invalid: {problem}"),
            "choose a shorter group, domain or `--plural`",
        )),
        None => Ok(plural),
    }
}

/// One kind per project, and no type name twice in one module.
fn check_against_project(project: &Project, gvk: &Gvk) -> anyhow::Result<()> {
    let module = names::snake(&gvk.kind);
    for other in &project.resources {
        let same_gv = other.group == gvk.group && other.version == gvk.version;
        if same_gv && other.kind == gvk.kind {
            continue;
        }
        if names::snake(&other.kind) == module {
            let what = if same_gv { "module name" } else { "name" };
            return Err(user_error(
                format!(
                    "kind `{}` clashes with `{}` ({}/{}) already in this project: they share the {what} `{module}`",
                    gvk.kind, other.kind, other.group, other.version
                ),
                "choose another kind; several versions or groups of one kind are not supported yet",
            ));
        }
        let types = |k: &str| [k.to_string(), format!("{k}Spec"), format!("{k}Status")];
        let ours = types(&gvk.kind);
        if same_gv && types(&other.kind).iter().any(|t| ours.contains(t)) {
            return Err(user_error(
                format!(
                    "kind `{}` clashes with the types of kind `{}` in {}/{}",
                    gvk.kind, other.kind, gvk.group, gvk.version
                ),
                "choose a kind whose name, `<Kind>Spec` and `<Kind>Status` are all new",
            ));
        }
    }
    Ok(())
}

fn check_request(
    gvk: &Gvk,
    existing: Option<&Resource>,
    resource: bool,
    controller: bool,
    force: bool,
) -> anyhow::Result<()> {
    let name = format!("{}/{} {}", gvk.group, gvk.version, gvk.kind);
    if !resource && !controller {
        return Err(user_error(
            "nothing to create: both `--resource` and `--controller` are false",
            "pass `--resource` and/or `--controller`",
        ));
    }
    if !resource && !existing.is_some_and(|r| r.api) {
        return Err(user_error(
            format!("no API `{name}` in this project: a controller needs its type"),
            "create the type too with `--resource` (controllers for external or core types are not supported yet)",
        ));
    }
    if let Some(r) = existing
        && !force
        && ((resource && r.api) || (controller && r.controller))
    {
        return Err(user_error(
            format!("the API `{name}` already exists; nothing was written"),
            "pass `--force` to scaffold its files again",
        ));
    }
    Ok(())
}

/// The license header for new sources: `hack/boilerplate.rs.txt` plus a blank line, or nothing.
fn read_header(root: &Path) -> anyhow::Result<String> {
    let text = match std::fs::read_to_string(root.join(BOILERPLATE)) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(err) => {
            return Err(anyhow::Error::new(err).context(format!("cannot read {BOILERPLATE}")));
        }
    };
    if let Some(line) = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.starts_with("//"))
    {
        return Err(user_error(
            format!("{BOILERPLATE} must hold only `//` comment lines, but has `{line}`"),
            format!("make every line of {BOILERPLATE} start with `//`, or delete the file"),
        ));
    }
    Ok(format!("{}\n\n", text.trim_end()))
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use proptest::prelude::*;

    use super::*;
    use crate::model::names::RUST_KEYWORDS;

    static TEMPLATES: LazyLock<Templates> = LazyLock::new(|| Templates::load().unwrap());

    fn is_identifier(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !RUST_KEYWORDS.contains(&name)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the validators accept yields Rust identifiers, Kubernetes names, and
        /// templates that render.
        #[test]
        fn accepted_names_give_valid_identifiers_names_and_renders(
            group in "[a-z][a-z0-9-]{0,70}|[a-z0-9.;_/ -]{0,12}",
            version in "v[0-9]{1,2}((alpha|beta)[0-9]{1,2})?|[A-Za-z0-9]{0,4}",
            kind in "[A-Z][A-Za-z0-9]{0,70}|[A-Za-z0-9_ -]{0,8}",
            domain in "[a-z]{1,20}(\\.[a-z]{2,10}){0,3}",
            namespaced in any::<bool>(),
        ) {
            let project = Project::new(domain, "guestbook".into());
            let Ok(gvk) = Gvk::parse(&group, &version, &kind, &project.domain) else {
                return Ok(());
            };
            let Ok(plural) = resource_plural(&gvk, None, &project.domain) else {
                return Ok(());
            };
            let c = ApiContext::new(&project, &gvk, plural, namespaced, String::new());
            for ident in [&c.group_module, &c.version, &c.kind_module, &c.api_alias, &c.kind] {
                prop_assert!(is_identifier(ident), "`{}` is no Rust identifier", ident);
            }
            prop_assert!(names::dns1123_subdomain_problem(&c.qualified_group).is_none());
            prop_assert!(names::dns1035_label_problem(&c.plural).is_none(), "plural {}", c.plural);
            for name in [&c.sample_name, &format!("{}.{}", c.plural, c.qualified_group)] {
                prop_assert!(names::dns1123_subdomain_problem(name).is_none(), "{}", name);
            }
            // RBAC names are path segments: no `/` or `%`.
            let role = format!("{}-editor-role", c.kind_lower);
            prop_assert!(!role.contains(['/', '%']), "{}", role);
            let mut plan = Plan::default();
            plan_resource(&mut plan, &c);
            plan_controller(&mut plan, &c);
            for spec in &plan.files {
                prop_assert!(TEMPLATES.render(&spec.template, &c).is_ok(), "{}", spec.template);
            }
        }
    }
}
