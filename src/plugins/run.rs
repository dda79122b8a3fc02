//! Runs the plugins of a command onto a tree (`init`, `create api`, `create webhook`), and
//! `replay`: a whole project rendered from its PROJECT alone, in memory.

use std::collections::BTreeMap;

use crate::codegen::kind_types::KindTypes;
use crate::model::api::ApiInputs;
use crate::model::project::{Command, EditInputs, InitInputs, Project, WebhookInputs};
use crate::scaffold::plan::Plan;
use crate::scaffold::render::{self, Report};
use crate::scaffold::rustfmt::Rustfmt;
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;

use super::context::{ApiContext, ApiPlan, Earlier, InitContext, WebhookContext};
use super::policy::project_rules;
use super::{Plugin, base, resolve};

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

/// Renders `create api` onto `tree`, which holds the project as it is (formatted as `init`).
fn create_api(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    api: &ApiInputs,
    earlier: &[Command],
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let header = base::read_header(tree)?;
    let types = KindTypes::generate(api)?;
    let before = Earlier::read(api, earlier);
    let context = ApiContext::new(init, api, &types, header, &before)?;
    let p = ApiPlan::new(
        api,
        &context,
        types,
        project_rules(init, earlier, api)?,
        &before,
    );
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.create_api(&mut plan, &p, &context, tree)?;
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// Renders `create webhook` onto `tree`.
fn create_webhook(
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

/// The files of the project in `root` that its plugins made their files from, and that a
/// replay needs besides PROJECT to make them again (helm: the manifests its chart was made
/// from last), in a tree of their own.
pub fn recorded(project: &Project, root: &std::path::Path) -> anyhow::Result<Tree> {
    let mut recorded = Tree::empty();
    let plugins = super::known()
        .iter()
        .filter(|p| project.plugins.iter().any(|k| k == p.key()));
    for plugin in plugins {
        for path in plugin.recorded() {
            match std::fs::read_to_string(root.join(path)) {
                Ok(content) => recorded.write(path, content)?,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(anyhow::Error::new(err).context(format!("cannot read {path}")));
                }
            }
        }
    }
    Ok(recorded)
}

/// The digests PROJECT records for `replayed`, a replay onto `recorded`: a file the plugins
/// recorded is the user's input (grafana's list of metrics) or the tool's record of one
/// (helm's manifests), not what the replay made of it, so it keeps what `before` recorded.
pub fn replay_digests(
    replayed: &Tree,
    recorded: &Tree,
    before: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut digests = crate::scaffold::apply::digests(replayed);
    for (path, _) in recorded.files() {
        match before.get(path) {
            Some(digest) => digests.insert(path.to_string(), digest.clone()),
            None => digests.remove(path),
        };
    }
    digests
}

/// Renders `edit` onto `tree`, after the commands `earlier`: the license header as it says,
/// and the files of each plugin the project takes.
fn edit_project(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    edit: &EditInputs,
    earlier: &[Command],
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    let edits = earlier.iter().filter_map(Command::edit).chain([edit]);
    let now = EditInputs::applied(init, edits);
    let mut context = InitContext::new(&now, templates)?;
    context.namespaced_manager = edit
        .namespaced
        .unwrap_or_else(|| EditInputs::namespaced_manager(earlier));
    context.sharded_manager = edit
        .sharding
        .unwrap_or_else(|| EditInputs::sharded_manager(earlier));
    context.moves = edit
        .multigroup
        .then(|| super::multigroup::Moves::of(earlier));
    let mut plan = Plan::default();
    for plugin in plugins {
        plugin.edit(&mut plan, &context, edit, tree)?;
    }
    for key in &edit.plugins {
        let Some(plugin) = super::project_plugin(key) else {
            anyhow::bail!(
                "PROJECT's `edit` names the plugin `{key}`, which this kube-scaffold does not have"
            );
        };
        plugin.enable(&mut plan, &context, tree)?;
    }
    render::render(&plan, templates, &context, tree, &Rustfmt::none())
}

/// Renders a command onto `tree`, after the commands `earlier`.
pub fn command(
    plugins: &[&dyn Plugin],
    init: &InitInputs,
    command: &Command,
    earlier: &[Command],
    templates: &Templates,
    tree: &mut Tree,
) -> anyhow::Result<Report> {
    match command {
        Command::CreateApi(api) => create_api(plugins, init, api, earlier, templates, tree),
        Command::CreateWebhook(hook) => {
            create_webhook(plugins, init, hook, earlier, templates, tree)
        }
        Command::Edit(edit) => edit_project(plugins, init, edit, earlier, templates, tree),
    }
}

/// The whole project, rendered from its PROJECT alone: `init`, then every command in order.
/// Nothing is read from disk.
pub fn replay(project: &Project, templates: &Templates) -> anyhow::Result<Tree> {
    replay_onto(project, templates, Tree::empty())
}

/// `replay` onto `recorded`: the files, read from the project, that its plugins made their
/// files from (`recorded`), so that the replay makes those files too.
pub fn replay_onto(
    project: &Project,
    templates: &Templates,
    recorded: Tree,
) -> anyhow::Result<Tree> {
    let plugins = resolve(project)?;
    let mut tree = recorded;
    init(&plugins, &project.init, templates, &mut tree)?;
    for (i, step) in project.commands.iter().enumerate() {
        let earlier = &project.commands[..i];
        command(&plugins, &project.init, step, earlier, templates, &mut tree)?;
    }
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use std::process::Command as Process;

    use super::*;
    use crate::model::api::{ApiKind, Crd};
    use crate::model::builtin;
    use crate::model::gvk::Gvk;
    use crate::model::project::License;
    use crate::plugins::{bundle_keys, deploy_image};

    fn project(name: &str, domain: &str, kinds: &[(&str, &str, &str, bool, bool)]) -> Project {
        let mut project = Project::new(
            InitInputs {
                domain: domain.into(),
                project_name: name.into(),
                repo: None,
                owner: Some(
                    "The Very Long Name Of The Authors Of This Operator, Incorporated".into(),
                ),
                license: License::Apache2,
                license_year: 2026,
            },
            bundle_keys(),
        );
        for (group, version, kind, namespaced, finalizer) in kinds {
            let mut api = ApiInputs::own(group, version, kind);
            (api.namespaced, api.finalizer) = (*namespaced, *finalizer);
            project.commands.push(Command::CreateApi(api));
        }
        project
    }

    /// The generated Rust is what `cargo fmt` makes of it, for the shortest and the longest
    /// names the validators accept, without running rustfmt: the output does not depend on
    /// the user's rustfmt. (This test runs rustfmt, to compare.) Long: one project with every
    /// kind of command, built in the test so that each name length meets each template.
    #[test]
    fn generated_rust_is_formatted_for_any_name_length() {
        let long_kind = "MutatingWebhookConfigurationForTheVeryLongKindWithManyWordsInIt";
        let long_group = "infrastructure-automation-and-many-more-words-to-make-it-longer";
        let projects = [
            project(
                "a",
                "a.io",
                &[("a", "v1", "A", true, false), ("b", "v1", "B", false, true)],
            ),
            project(
                "guestbook",
                "mock.com",
                &[
                    ("webapp", "v1", "Guestbook", true, false),
                    ("webapp", "v1", "Config", false, true),
                ],
            ),
            project(
                "an-operator-project-name-that-is-as-long-as-a-dns-label-allows-x",
                "example.com",
                &[
                    (long_group, "v1beta1", long_kind, true, true),
                    (long_group, "v1beta1", &long_kind[..40], false, false),
                ],
            ),
        ];
        let mut projects = projects.to_vec();
        // Controllers that own kinds: built-in ones with each builder, a renamed one
        // (`Event`), and kinds of the project, the longest the validators accept.
        let owner = |group: &str, kind: &str, owns: &[&str]| {
            let mut api = ApiInputs::own(group, "v1", kind);
            api.owns = owns.iter().map(|o| o.to_string()).collect();
            api
        };
        let long_owned = format!("{long_group}.example.com/v1beta1/{long_kind}");
        projects[2].commands.push(Command::CreateApi(owner(
            long_group,
            "Site",
            &[
                "apps/v1/Deployment",
                "core/v1/ConfigMap",
                "core/v1/Event",
                &long_owned,
            ],
        )));
        let site = owner(long_group, &long_kind[..50], &[&long_owned]);
        projects[2].commands.push(Command::CreateApi(site));
        let c = owner("a", "C", &["core/v1/Secret", "a.a.io/v1/A"]);
        projects[0].commands.push(Command::CreateApi(c));
        // deploy-image kinds: every flag, and an image too long for one line.
        for (kind, image) in [
            ("Memcached", "memcached:1.6.26-alpine3.19".to_string()),
            (
                &long_kind[..30],
                format!("registry.example.com/{}:v1", "x".repeat(80)),
            ),
        ] {
            let mut api = owner("cache", kind, &["apps/v1/Deployment"]);
            api.deploy_image = Some(crate::model::api::DeployImage {
                image,
                container_command: Some("memcached,--memory-limit=64,-o,modern,-v".into()),
                container_port: Some(11211),
                run_as_user: Some(1001),
            });
            projects[1].commands.push(Command::CreateApi(api));
        }
        projects[1].plugins.push(deploy_image::KEY.into());
        // A controller for another project's kind, its types from a CRD.
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: certificates.cert-manager.io}\nspec:\n  group: cert-manager.io\n  names: {kind: Certificate, plural: certificates}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {secretName: {type: string}}}}}}\n";
        let mut certificate = owner("cert-manager.io", "Certificate", &[]);
        certificate.api = ApiKind::External(Crd {
            path: "hack/crds/cert-manager.io_certificates.yaml".into(),
            text: crd.into(),
        });
        projects[0].commands.push(Command::CreateApi(certificate));
        // Versions of one kind: v2 of Guestbook without a controller, stored from now on
        // (v1's type says `storage = false`), and a v1beta1 that is not stored.
        for (version, stored) in [("v2", true), ("v1beta1", false)] {
            let mut guestbook = owner("webapp", "Guestbook", &[]);
            guestbook.version = version.into();
            guestbook.controller = false;
            guestbook.api = ApiKind::Own {
                resource: true,
                storage_version: stored,
            };
            projects[1].commands.push(Command::CreateApi(guestbook));
        }
        // Webhooks: both kinds of hook on the longest kind, on a deploy-image kind, and a
        // validation added later to a kind with a defaulting one.
        let webhook = |group: &str, version: &str, kind: &str, defaulting, validation| {
            Command::CreateWebhook(WebhookInputs {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                defaulting,
                validation,
                conversion: false,
                spoke: Vec::new(),
                self_signed: false,
                force: false,
            })
        };
        projects[2]
            .commands
            .push(webhook(long_group, "v1beta1", long_kind, true, true));
        projects[1]
            .commands
            .push(webhook("cache", "v1", "Memcached", true, true));
        projects[1]
            .commands
            .push(webhook("webapp", "v1", "Guestbook", true, false));
        projects[1]
            .commands
            .push(webhook("webapp", "v1", "Guestbook", false, true));
        // Both kinds of hook on the shortest and the longest kinds Kubernetes defines.
        projects[0]
            .commands
            .push(webhook("core", "v1", "Pod", true, true));
        projects[2].commands.push(webhook(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            true,
            true,
        ));
        // Conversions: Guestbook's v2 and v1beta1 through v1; the longest kind's v1 through
        // v1beta1.
        let conversion = |group: &str, hub: &str, kind: &str, spokes: &[&str]| {
            Command::CreateWebhook(WebhookInputs {
                group: group.into(),
                version: hub.into(),
                kind: kind.into(),
                defaulting: false,
                validation: false,
                conversion: true,
                spoke: spokes.iter().map(|s| s.to_string()).collect(),
                self_signed: false,
                force: false,
            })
        };
        projects[1]
            .commands
            .push(conversion("webapp", "v1", "Guestbook", &["v2", "v1beta1"]));
        let mut long_v1 = owner(long_group, long_kind, &[]);
        long_v1.controller = false;
        projects[2].commands.push(Command::CreateApi(long_v1));
        projects[2]
            .commands
            .push(conversion(long_group, "v1beta1", long_kind, &["v1"]));
        // A kind adopted from a CRD, with two versions.
        let mut backup = owner("ops.example.org", "Backup", &[]);
        backup.api = ApiKind::Adopted {
            crd: Crd {
                path: "hack/crds/ops.example.org_backups.yaml".into(),
                text: include_str!("../../tests/fixtures/crds/backup.yaml").into(),
            },
            versions: vec!["v1alpha1".into(), "v1".into()],
        };
        projects[2].commands.push(Command::CreateApi(backup));
        // Controllers for kinds Kubernetes defines: the shortest and the longest names.
        for (group, kind) in [
            ("core", "Pod"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
        ] {
            let core = builtin::find(group, "v1", kind).unwrap();
            let gvk = Gvk {
                group: group.into(),
                version: "v1".into(),
                kind: kind.into(),
            };
            let api = ApiInputs::new(gvk, core.plural.into(), core.namespaced, ApiKind::Builtin);
            projects[2].commands.push(Command::CreateApi(api));
        }
        let templates = Templates::load().unwrap();
        for project in &projects {
            let tree = replay(project, &templates).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let mut files = Vec::new();
            // kopium's types keep kopium's layout: their module is `#[rustfmt::skip]` (the
            // generated-project test runs `cargo fmt --check` on one).
            let ours = |(p, c): &(&str, &str)| p.ends_with(".rs") && !c.contains("\nmod prelude {");
            for (path, content) in tree.files().filter(ours) {
                let file = dir.path().join(path);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, content).unwrap();
                files.push((path.to_string(), file));
            }
            let status = Process::new("rustfmt")
                .args(["--edition", "2024"])
                .args(files.iter().map(|(_, f)| f))
                .current_dir(dir.path())
                .status()
                .expect("rustfmt runs (this test compares with it)");
            assert!(status.success());
            let mut unformatted = Vec::new();
            for (path, file) in &files {
                let formatted = std::fs::read_to_string(file).unwrap();
                let rendered = tree.files().find(|(p, _)| p == path).unwrap().1;
                if formatted != rendered {
                    unformatted.push(diff_of(path, rendered, &formatted));
                }
            }
            assert!(
                unformatted.is_empty(),
                "{}: not as rustfmt formats it:\n{}",
                project.init.project_name,
                unformatted.join("\n")
            );
        }
    }

    fn diff_of(path: &str, rendered: &str, formatted: &str) -> String {
        similar::TextDiff::from_lines(rendered, formatted)
            .unified_diff()
            .context_radius(1)
            .header(&format!("{path} (rendered)"), &format!("{path} (rustfmt)"))
            .to_string()
    }
}
