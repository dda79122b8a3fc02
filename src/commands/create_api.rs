//! `kube-scaffold create api`: adds a kind (its Rust type, CRD, samples, RBAC) and its
//! controller, and wires them into the manager. Arguments become validated `ApiInputs`; the
//! plugins turn them into a plan (`plugins::create_api`).

use std::path::Path;

use crate::cli::CreateApiArgs;
use crate::error::user_error;
use crate::model::gvk::{self, Gvk};
use crate::model::names;
use crate::model::project::{ApiInputs, Command, Project, Resource};
use crate::plugins::{self, base};
use crate::prompt;
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;
use crate::ui;

pub fn run(root: &Path, args: CreateApiArgs) -> anyhow::Result<()> {
    let mut project = Project::load(root)?;
    project.check_compatible()?;
    let bundle = plugins::resolve(&project)?;
    let domain = project.init.domain.clone();
    let gvk = Gvk::parse(&args.group, &args.version, &args.kind, &domain)?;
    let plural = resource_plural(&gvk, args.plural.as_deref(), &domain)?;
    check_against_project(&project, &gvk)?;
    let mut tree = Tree::over(root);
    base::read_header(&mut tree)?;

    let resource = prompt::confirm(args.resource, "Create Resource", "--resource")?;
    let controller = prompt::confirm(args.controller, "Create Controller", "--controller")?;
    let existing = project.resource(&gvk.group, &gvk.version, &gvk.kind);
    check_request(&gvk, existing.as_ref(), resource, controller, args.force)?;
    let inputs = ApiInputs {
        group: gvk.group,
        version: gvk.version,
        kind: gvk.kind,
        plural,
        namespaced: args.namespaced,
        resource,
        controller,
        finalizer: args.finalizer,
        force: args.force,
    };

    let templates = Templates::load()?;
    let report = plugins::create_api(&bundle, &project.init, &inputs, &templates, &mut tree)?;
    project.commands.push(Command::CreateApi(inputs));
    let how = super::Finish {
        overwrite_edited: args.overwrite_edited,
        dry_run: args.dry_run,
        conflict_help: "pass `--force` to scaffold the kind's files again",
    };
    super::finish(root, tree, &report, project, &how)?;
    if args.dry_run {
        return Ok(());
    }
    ui::say(
        "\nNext: implement your new API and generate the manifests (CRDs, RBAC) with:\n$ make manifests",
    );
    Ok(())
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
    for other in &project.resources() {
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

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use proptest::prelude::*;

    use super::*;
    use crate::model::names::RUST_KEYWORDS;
    use crate::model::project::{InitInputs, License};
    use crate::plugins::{ApiContext, BUNDLE};
    use crate::scaffold::plan::Plan;

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
            finalizer in any::<bool>(),
        ) {
            let init = InitInputs {
                domain,
                project_name: "guestbook".into(),
                repo: None,
                owner: None,
                license: License::None,
                license_year: 2026,
            };
            let Ok(gvk) = Gvk::parse(&group, &version, &kind, &init.domain) else {
                return Ok(());
            };
            let Ok(plural) = resource_plural(&gvk, None, &init.domain) else {
                return Ok(());
            };
            let inputs = ApiInputs {
                group: gvk.group,
                version: gvk.version,
                kind: gvk.kind,
                plural,
                namespaced,
                resource: true,
                controller: true,
                finalizer,
                force: false,
            };
            let c = ApiContext::new(&init, &inputs, String::new());
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
            for plugin in BUNDLE {
                plugin.create_api(&mut plan, &c, &mut Tree::empty()).unwrap();
            }
            for spec in &plan.files {
                prop_assert!(TEMPLATES.render(&spec.template, &c).is_ok(), "{}", spec.template);
            }
        }
    }
}
