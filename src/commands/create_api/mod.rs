//! `kube-scaffold create api`: adds a kind (its Rust type, CRD, samples, RBAC) and its
//! controller, and wires them into the manager. Arguments become validated `ApiInputs`; the
//! plugins turn them into a plan (`plugins::create_api`).

use std::path::Path;

use crate::cli::CreateApiArgs;
use crate::codegen::adopted;
use crate::codegen::external::{self, External};
use crate::error::user_error;
use crate::model::api::{ApiInputs, ApiKind, Crd};
use crate::model::builtin::{self, CoreKind};
use crate::model::gvk::{self, Gvk};
use crate::model::names;
use crate::model::owned::{self, Owned};
use crate::model::project::{Command, EditInputs, Project, Resource};
use crate::plugins::{self, base, deploy_image};
use crate::prompt;
use crate::scaffold::tree::Tree;
use crate::ui;

mod deploy_image_flags;

pub fn run(root: &Path, args: CreateApiArgs) -> anyhow::Result<()> {
    let mut project = Project::load(root)?;
    project.check_compatible()?;
    plugins::resolve(&project)?;
    let domain = project.init.domain.clone();
    if let Some(file) = &args.from_crd {
        base::read_header(&mut Tree::over(root))?;
        return adopt(root, project, &args, file);
    }
    let Named {
        gvk,
        plural,
        namespaced,
        external,
        builtin,
    } = named(&args, &domain)?;
    check_against_project(&project, &gvk)?;
    base::read_header(&mut Tree::over(root))?;
    if let Some(owner) = project.resource(&gvk.group, &gvk.version, &gvk.kind)
        && owner.api
        && owner.controller
        && !args.owns.is_empty()
        && !args.write.force
        && args.resource != Some(true)
    {
        return add_owned(root, project, &args, owner);
    }
    let controlled = other_version(&project, &gvk, &plural, namespaced, &args)?;

    let resource = match builtin.is_some() || external.is_some() {
        true => false,
        false => prompt::confirm(args.resource, "Create Resource", "--resource")?,
    };
    // A kind has one controller, whatever its versions.
    let controller = match controlled {
        Some(other) if args.controller.is_none() => {
            ui::note(&format!(
                "{} has a controller ({}), which reconciles every version: none is scaffolded for {}",
                gvk.kind, other.version, gvk.version
            ));
            false
        }
        _ => prompt::confirm(args.controller, "Create Controller", "--controller")?,
    };
    if controller && !namespaced && EditInputs::namespaced_manager(&project.commands) {
        return Err(user_error(
            format!(
                "`{}/{} {}` is cluster-scoped, and the manager watches only its own namespace (`edit --namespaced`): it cannot run its controller",
                gvk.group, gvk.version, gvk.kind
            ),
            "pass `--controller=false`, or make the manager cluster-wide first with `kube-scaffold edit --namespaced=false`",
        ));
    }
    let existing = project.resource(&gvk.group, &gvk.version, &gvk.kind);
    let request = Request {
        resource,
        controller,
        builtin: builtin.is_some() || external.is_some(),
        force: args.write.force,
    };
    check_request(&gvk, existing.as_ref(), &request)?;
    let known = project.resources();
    let deploy_image =
        deploy_image_flags::checked(&args.plugins, &args.deploy_image, resource, controller)?;
    let owner = Resource {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        kind: gvk.kind.clone(),
        plural: plural.clone(),
        namespaced: args.namespaced,
        api: true,
        controller: true,
        finalizer: args.finalizer,
        adopted: false,
    };
    if !args.owns.is_empty() && !controller {
        return Err(user_error(
            "`--owns` needs a controller, and `--controller=false` was given",
            "drop `--controller=false`: the controller builds and watches what the kind owns",
        ));
    }
    let owns = owned_kinds(&args, &owner, &domain, &known)?;
    let api = match (external, builtin) {
        (Some((about, text)), _) => ApiKind::External(Crd {
            path: external::copy_path(&about.group, &about.plural),
            text,
        }),
        (None, Some(_)) => ApiKind::Builtin,
        (None, None) => ApiKind::Own {
            resource,
            storage_version: args.storage_version,
        },
    };
    let mut inputs = ApiInputs::new(gvk, plural, namespaced, api);
    inputs.controller = controller;
    inputs.finalizer = args.finalizer;
    inputs.force = args.write.force;
    inputs.owns = owns;
    if let Some(options) = deploy_image {
        deploy_image::add(&mut project, &mut inputs, options)?;
    }
    scaffold(root, project, inputs, &args)
}

/// The kind `args` name, and where its type comes from.
struct Named {
    gvk: Gvk,
    plural: String,
    namespaced: bool,
    /// Another project's CRD (`--external-api-crd`): what it says, and its text.
    external: Option<(External, String)>,
    /// A kind Kubernetes defines.
    builtin: Option<&'static CoreKind>,
}

/// The kind `args` name, checked: another project's, one Kubernetes defines, or the project's.
fn named(args: &CreateApiArgs, domain: &str) -> anyhow::Result<Named> {
    if args.external_api_path.is_some() {
        return Err(user_error(
            "`--external-api-path` is a Go import path; a Rust project takes the CRD itself",
            "pass `--external-api-crd path/to/crd.yaml` (e.g. from `kubectl get crd <name> -o yaml`)",
        ));
    }
    let external = match &args.external_api_crd {
        Some(file) => Some(external_kind(args, file, domain)?),
        None => None,
    };
    let builtin = match external {
        Some(_) => None,
        None => builtin_kind(args)?,
    };
    let (gvk, plural, namespaced) = match (&external, builtin) {
        (Some((about, _)), _) => {
            let gvk = Gvk::parse_external(args.group(), args.version(), args.kind())?;
            (gvk, about.plural.clone(), about.namespaced)
        }
        (None, Some(k)) => {
            let gvk = Gvk {
                group: builtin::spelled_group(k.group).to_string(),
                version: k.version.to_string(),
                kind: k.kind.to_string(),
            };
            (gvk, k.plural.to_string(), k.namespaced)
        }
        (None, None) => {
            let gvk = Gvk::parse(args.group(), args.version(), args.kind(), domain)?;
            let plural = resource_plural(&gvk, args.plural.as_deref(), domain)?;
            (gvk, plural, args.namespaced)
        }
    };
    Ok(Named {
        gvk,
        plural,
        namespaced,
        external,
        builtin,
    })
}

/// Plans `inputs` with the project's plugins, records the command in PROJECT and writes.
fn scaffold(
    root: &Path,
    project: Project,
    inputs: ApiInputs,
    args: &CreateApiArgs,
) -> anyhow::Result<()> {
    let how = super::Finish {
        overwrite_edited: args.write.overwrite_edited,
        merge_edited: None,
        dry_run: args.write.dry_run,
        conflict_help: "pass `--force` to scaffold the kind's files again",
    };
    let next = "\nNext: implement your new API and generate the manifests (CRDs, RBAC) with:\n$ make manifests";
    let command = Command::CreateApi(inputs);
    super::scaffold(root, Tree::over(root), project, command, &how, next)
}

/// `create api --from-crd FILE`: the CRD's kind, every version of it, adopted as the
/// project's own.
fn adopt(root: &Path, project: Project, args: &CreateApiArgs, file: &Path) -> anyhow::Result<()> {
    let name = file.display().to_string();
    refuse_beside_crd(args)?;
    let text = std::fs::read_to_string(file).map_err(|err| {
        user_error(
            format!("cannot read `--from-crd {name}`: {err}"),
            "pass the path of the CRD's YAML file, e.g. from `kubectl get crd <name> -o yaml`",
        )
    })?;
    let crd = external::parse(&text, &name)?;
    let about = adopted::describe(&crd, &name)?;
    let domain = &project.init.domain;
    // `webapp.<domain>` is the project's group `webapp`; any other group is a full group.
    let group = match about.group.strip_suffix(&format!(".{domain}")) {
        Some(short) if !short.contains('.') => short.to_string(),
        _ => about.group.clone(),
    };
    let gvks = about
        .versions
        .iter()
        .map(|version| Gvk::parse(&group, version, &about.kind, domain))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(|err| {
            user_error(
                format!("`{name}` cannot be adopted: {err}"),
                "an adopted kind becomes the project's own and follows the rules of `--group`, `--version` and `--kind`; for a controller of another project's kind, as its CRD names it, use `create api --external-api-crd <file> --controller --resource=false`",
            )
        })?;
    let plural = gvk::plural(&about.plural)?;
    if let Some(r) = project
        .resources()
        .iter()
        .find(|r| r.group == group && r.kind == about.kind)
    {
        return Err(user_error(
            format!(
                "the kind `{}` of `{}` is already in this project ({}); nothing was written",
                about.kind, about.group, r.version
            ),
            "`--from-crd` adopts a kind the project does not have yet",
        ));
    }
    for gvk in &gvks {
        check_against_project(&project, gvk)?;
    }
    let copy = external::copy_path(&about.group, &about.plural);
    for version in &about.versions {
        adopted::rust_types(&crd, version, &copy, adopted::CONDITIONS_SCHEMA)?;
    }
    let controller = prompt::confirm(args.controller, "Create Controller", "--controller")?;
    let gvk = Gvk {
        group,
        version: about.storage.clone(),
        kind: about.kind.clone(),
    };
    let api = ApiKind::Adopted {
        crd: Crd { path: copy, text },
        versions: about.versions,
    };
    let mut inputs = ApiInputs::new(gvk, plural, about.namespaced, api);
    inputs.controller = controller;
    inputs.force = args.write.force;
    scaffold(root, project, inputs, args)
}

/// An error if `args` give a flag that `--from-crd` takes from the CRD.
fn refuse_beside_crd(args: &CreateApiArgs) -> anyhow::Result<()> {
    let refused = [
        (args.group.is_some(), "--group"),
        (args.version.is_some(), "--version"),
        (args.kind.is_some(), "--kind"),
        (args.plural.is_some(), "--plural"),
        (!args.namespaced, "--namespaced=false"),
        (args.resource == Some(false), "--resource=false"),
        (args.finalizer, "--finalizer"),
        (!args.owns.is_empty(), "--owns"),
        (args.external_api_crd.is_some(), "--external-api-crd"),
        (args.external_api_path.is_some(), "--external-api-path"),
        (!args.plugins.is_empty(), "--plugins"),
        (args.storage_version, "--storage-version"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(user_error(
            format!("`{flag}` does not apply with `--from-crd`: the CRD says what the kind is"),
            format!("drop `{flag}`"),
        ));
    }
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

/// `--owns`, resolved and checked against their `owner`, as PROJECT records them.
fn owned_kinds(
    args: &CreateApiArgs,
    owner: &Resource,
    domain: &str,
    known: &[Resource],
) -> anyhow::Result<Vec<String>> {
    let owns = args
        .owns
        .iter()
        .map(|flag| Owned::parse(flag, domain, known))
        .collect::<anyhow::Result<Vec<_>>>()?;
    owned::check(owner, &owns)?;
    Ok(owns.iter().map(Owned::record).collect())
}

/// `create api --owns` for a kind whose controller exists: the controller scaffolded again
/// with the kinds it owned and those, and the user's edits merged in (three-way, PROJECT's
/// replay as the base, as `edit` does); an edit of the lines that change is refused.
fn add_owned(
    root: &Path,
    project: Project,
    args: &CreateApiArgs,
    owner: Resource,
) -> anyhow::Result<()> {
    let name = format!("{}/{} {}", owner.group, owner.version, owner.kind);
    let by_hand = "docs/commands.md, \"Owned resources\"";
    let records: Vec<&ApiInputs> = project
        .commands
        .iter()
        .filter_map(Command::api)
        .filter(|api| {
            (&api.group, &api.version, &api.kind) == (&owner.group, &owner.version, &owner.kind)
        })
        .collect();
    let deploy_image = deploy_image_flags::asked_for(&args.plugins, &args.deploy_image)?;
    if deploy_image || records.iter().any(|api| api.deploy_image.is_some()) {
        return Err(user_error(
            format!(
                "`{name}` has a controller, and the deploy-image plugin only scaffolds one; nothing was written"
            ),
            format!(
                "add the kind to the controller's `OWNED` by hand ({by_hand}), or drop `--plugins` and the image flags"
            ),
        ));
    }
    if args.finalizer && !owner.finalizer {
        return Err(user_error(
            format!(
                "`{name}` has a controller without a finalizer, and `--owns` adds to it as it is; nothing was written"
            ),
            "drop `--finalizer`, or scaffold the controller again with `--force --finalizer`",
        ));
    }
    let known = project.resources();
    let added = owned_kinds(args, &owner, &project.init.domain, &known)?;
    let controller = records.iter().rev().find(|api| api.controller);
    let mut owns = controller.map(|api| api.owns.clone()).unwrap_or_default();
    let already: Vec<&String> = added.iter().filter(|kind| owns.contains(kind)).collect();
    if let Some(kind) = already.first() {
        return Err(user_error(
            format!(
                "`{}` owns `{kind}` already; nothing was written",
                owner.kind
            ),
            "name a kind it does not own yet: its controller's `OWNED` lists those it does",
        ));
    }
    owns.extend(added);
    let gvk = Gvk {
        group: owner.group,
        version: owner.version,
        kind: owner.kind,
    };
    let api = ApiKind::Own {
        resource: false,
        storage_version: false,
    };
    let mut inputs = ApiInputs::new(gvk, owner.plural, owner.namespaced, api);
    inputs.finalizer = owner.finalizer;
    inputs.force = true;
    inputs.owns = owns;
    let merge_help = format!(
        "add the kinds by hand ({by_hand}), or move the file away, run the command again and put your changes back"
    );
    let how = super::Finish {
        overwrite_edited: false,
        merge_edited: Some(&merge_help),
        dry_run: args.write.dry_run,
        conflict_help: "move those files away, then run the command again",
    };
    let next = "\nNext: fill in each new child's `build` and `not_ready` in the controller, then update the RBAC with:\n$ make manifests";
    super::scaffold(
        root,
        Tree::over(root),
        project,
        Command::CreateApi(inputs),
        &how,
        next,
    )
}

/// Checks `gvk` against the other versions of its kind, when the project has some: then it is
/// a new version, which must agree with them (plural, scope, one controller). Returns the
/// version that has the kind's controller, if one does. `--storage-version` only applies to
/// a new version.
fn other_version(
    project: &Project,
    gvk: &Gvk,
    plural: &str,
    namespaced: bool,
    args: &CreateApiArgs,
) -> anyhow::Result<Option<Resource>> {
    let resources = project.resources();
    let others: Vec<&Resource> = resources
        .iter()
        .filter(|r| r.group == gvk.group && r.kind == gvk.kind && r.version != gvk.version)
        .collect();
    let Some(other) = others.iter().find(|r| r.api).or(others.first()) else {
        if args.storage_version {
            return Err(user_error(
                "`--storage-version` applies to a new version of a kind the project has; the first version of a kind is the stored one",
                "drop `--storage-version`",
            ));
        }
        return Ok(None);
    };
    let name = format!("{}/{} {}", gvk.group, other.version, gvk.kind);
    if other.plural != plural {
        return Err(user_error(
            format!(
                "`{name}` has the plural `{}`: every version of a kind has the same",
                other.plural
            ),
            format!("pass `--plural {}`, or drop `--plural`", other.plural),
        ));
    }
    if other.namespaced != namespaced {
        let scope = |n: bool| if n { "namespaced" } else { "cluster-scoped" };
        return Err(user_error(
            format!(
                "`{name}` is {}: every version of a kind has the same scope",
                scope(other.namespaced)
            ),
            format!("pass `--namespaced={}`", other.namespaced),
        ));
    }
    let controlled = others.iter().find(|r| r.controller);
    if args.controller == Some(true)
        && let Some(with) = controlled
    {
        return Err(user_error(
            format!(
                "{} already has a controller ({}), which reconciles every version of it",
                gvk.kind, with.version
            ),
            "drop `--controller` (the API server converts between versions)",
        ));
    }
    Ok(controlled.map(|r| (*r).clone()))
}

/// One kind per project (per group in a multigroup project), and no type name twice in one
/// module.
fn check_against_project(project: &Project, gvk: &Gvk) -> anyhow::Result<()> {
    let module = names::snake(&gvk.kind);
    let multigroup = EditInputs::multigroup(&project.commands);
    for other in &project.resources() {
        let same_gv = other.group == gvk.group && other.version == gvk.version;
        // The same kind in another version is a version of it (`other_version`).
        if other.group == gvk.group && other.kind == gvk.kind {
            continue;
        }
        // A multigroup project keeps each group's controllers and hooks apart.
        let apart = multigroup && other.group != gvk.group;
        if names::snake(&other.kind) == module && !apart {
            let what = if same_gv { "module name" } else { "name" };
            let help = match other.group == gvk.group {
                true => "choose another kind",
                false => {
                    "choose another kind, or run `kube-scaffold edit --multigroup` first: it moves controllers and webhooks under their groups, so that one kind can be in two"
                }
            };
            return Err(user_error(
                format!(
                    "kind `{}` clashes with `{}` ({}/{}) already in this project: they share the {what} `{module}`",
                    gvk.kind, other.kind, other.group, other.version
                ),
                help,
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

/// `--external-api-crd FILE`: the CRD, checked against `--group`, `--version` and `--kind`,
/// and its text.
fn external_kind(
    args: &CreateApiArgs,
    file: &Path,
    domain: &str,
) -> anyhow::Result<(External, String)> {
    let name = file.display().to_string();
    let refused = [
        (args.resource == Some(true), "--resource"),
        (args.finalizer, "--finalizer"),
        (!args.owns.is_empty(), "--owns"),
        (args.plural.is_some(), "--plural"),
        (!args.plugins.is_empty(), "--plugins"),
        (args.storage_version, "--storage-version"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(user_error(
            format!(
                "`{flag}` does not apply with `--external-api-crd`: the kind is another project's"
            ),
            format!("drop `{flag}`"),
        ));
    }
    let text = std::fs::read_to_string(file).map_err(|err| {
        user_error(
            format!("cannot read `--external-api-crd {name}`: {err}"),
            "pass the path of the CRD's YAML file, e.g. from `kubectl get crd <name> -o yaml`",
        )
    })?;
    let about = external::describe(&external::parse(&text, &name)?);
    let group = gvk::qualified_group(args.group(), domain);
    let wanted = format!("{}/{} {}", args.group(), args.version(), args.kind());
    let found = format!("{}/{} {}", about.group, about.served.join(","), about.kind);
    if about.group != group
        || about.kind != args.kind()
        || !about.served.iter().any(|v| v == args.version())
    {
        return Err(user_error(
            format!("`{name}` defines `{found}` (served versions), not `{wanted}`"),
            format!(
                "pass the CRD's own group, a served version and kind: `--group {} --version {} --kind {}`",
                about.group,
                about.served.first().map(String::as_str).unwrap_or("v1"),
                about.kind
            ),
        ));
    }
    Ok((about, text))
}

/// What `create api` is asked to scaffold.
struct Request {
    resource: bool,
    controller: bool,
    builtin: bool,
    force: bool,
}

/// A kind Kubernetes defines, when `--group` is one of Kubernetes' (`core`, `apps`,
/// `networking.k8s.io`...), the kind is one of its kinds and `--resource` is not given: then
/// the only thing to scaffold is a controller. With `--resource`, the group is the project's
/// own (`apps.<domain>`), as before.
fn builtin_kind(args: &CreateApiArgs) -> anyhow::Result<Option<&'static CoreKind>> {
    if !builtin::is_builtin_group(args.group()) || args.resource == Some(true) {
        return Ok(None);
    }
    let name = format!("{}/{} {}", args.group(), args.version(), args.kind());
    let Some(found) = builtin::find(args.group(), args.version(), args.kind()) else {
        if args.resource.is_none() {
            // A kind of the project's own group of that name, e.g. `apps.my.domain`.
            return Ok(None);
        }
        return Err(user_error(
            format!(
                "`{}` is one of Kubernetes' API groups, and it has no kind `{name}` that k8s-openapi knows",
                args.group()
            ),
            "check the spelling, e.g. `--group apps --version v1 --kind Deployment` or `--group core --version v1 --kind Pod`; for a group of your own, choose a name Kubernetes does not use",
        ));
    };
    let refused = [
        (args.finalizer, "--finalizer"),
        (!args.owns.is_empty(), "--owns"),
        (args.plural.is_some(), "--plural"),
        (args.storage_version, "--storage-version"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(user_error(
            format!("`{flag}` does not apply to `{name}`, a kind Kubernetes defines"),
            format!(
                "drop `{flag}`: `create api --group {} --version {} --kind {} --controller --resource=false` scaffolds a controller for it",
                args.group(),
                args.version(),
                args.kind()
            ),
        ));
    }
    Ok(Some(found))
}

fn check_request(gvk: &Gvk, existing: Option<&Resource>, r: &Request) -> anyhow::Result<()> {
    let name = format!("{}/{} {}", gvk.group, gvk.version, gvk.kind);
    let (resource, controller, force) = (r.resource, r.controller, r.force);
    if !resource && !controller {
        return Err(user_error(
            "nothing to create: both `--resource` and `--controller` are false",
            "pass `--resource` and/or `--controller`",
        ));
    }
    if !resource && !r.builtin && !existing.is_some_and(|r| r.api) {
        return Err(user_error(
            format!("no API `{name}` in this project: a controller needs its type"),
            "create the type too with `--resource`, or name a kind Kubernetes defines (`--group apps --version v1 --kind Deployment`)",
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
    use crate::codegen::kind_types::KindTypes;
    use crate::model::names::RUST_KEYWORDS;
    use crate::model::project::{InitInputs, License};
    use crate::plugins::{ApiContext, ApiPlan, BUNDLE, Earlier};
    use crate::scaffold::plan::Plan;
    use crate::scaffold::templates::Templates;

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
            let api = ApiKind::Own { resource: true, storage_version: false };
            let mut inputs = ApiInputs::new(gvk, plural, namespaced, api);
            inputs.finalizer = finalizer;
            let (types, before) = (KindTypes::None, Earlier::read(&inputs, &[]));
            let c = ApiContext::new(&init, &inputs, &types, String::new(), &before).unwrap();
            let p = ApiPlan::new(&inputs, &c, types, Vec::new(), &before);
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
                plugin.create_api(&mut plan, &p, &c, &mut Tree::empty()).unwrap();
            }
            for spec in &plan.files {
                prop_assert!(TEMPLATES.render(&spec.template, &c).is_ok(), "{}", spec.template);
            }
        }
    }
}
