//! `kube-scaffold init`: lays out a new operator project in the current directory. Arguments
//! become validated `InitInputs`; the plugins turn them into a plan (`plugins::init`).

use std::path::Path;

use crate::cli::{InitArgs, License as LicenseFlag};
use crate::error::user_error;
use crate::model::gvk;
use crate::model::project::{self, Command, EditInputs, InitInputs, License, Project};
use crate::plugins;
use crate::scaffold::templates::Templates;
use crate::scaffold::tree::Tree;
use crate::ui;

pub fn run(root: &Path, args: InitArgs) -> anyhow::Result<()> {
    let dry_run = args.dry_run;
    let keys = plugins::project_plugins(root, &args.plugins, &[])?;
    let inputs = options(root, args)?;
    let templates = Templates::load()?;
    let mut tree = Tree::over(root);
    let mut report = plugins::init(plugins::BUNDLE, &inputs, &templates, &mut tree)?;
    let how = super::Finish {
        overwrite_edited: false,
        merge_edited: None,
        dry_run,
        conflict_help: "`init` writes these files: move them away, or run `init` in a new directory",
    };
    let mut project = Project::new(inputs, plugins::bundle_keys());
    // `--plugins` is recorded as the `edit --plugins` it amounts to, so that a replay adds them
    // the same way.
    if !keys.is_empty() {
        project.plugins.extend(keys.iter().cloned());
        let edit = Command::Edit(EditInputs {
            plugins: keys,
            ..EditInputs::default()
        });
        let resolved = plugins::resolve(&project)?;
        let added = plugins::command(&resolved, &project.init, &edit, &[], &templates, &mut tree)?;
        report.conflicts.extend(added.conflicts);
        project.commands.push(edit);
    }
    super::finish(root, tree, &report, project, &how)?;
    if dry_run {
        return Ok(());
    }
    ui::say(
        "\nNext: define a resource with:\n$ kube-scaffold create api --group <group> --version v1 --kind <Kind>",
    );
    Ok(())
}

/// The arguments, checked: `init`'s inputs as PROJECT records them.
fn options(root: &Path, args: InitArgs) -> anyhow::Result<InitInputs> {
    let domain = gvk::domain(&args.domain)?;
    let project_name = match args.project_name {
        Some(name) => gvk::project_name(&name)?,
        None => default_project_name(root)?,
    };
    if root.join(project::FILE).exists() {
        return Err(user_error(
            format!(
                "`{}` is already initialized: it has a {} file",
                root.display(),
                project::FILE
            ),
            "add to the project with `kube-scaffold create api`, or run `init` in a new directory",
        ));
    }
    if let Some(owner) = &args.owner {
        project::check_owner(owner)?;
    }
    if let Some(repo) = &args.repo {
        gvk::repository(repo)?;
    }
    Ok(InitInputs {
        domain,
        project_name,
        repo: args.repo,
        owner: args.owner,
        license: match args.license {
            LicenseFlag::Apache2 => License::Apache2,
            LicenseFlag::None => License::None,
        },
        license_year: super::current_year(),
    })
}

/// The directory's name, as kubebuilder takes it, checked like `--project-name`.
fn default_project_name(root: &Path) -> anyhow::Result<String> {
    let dir = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    gvk::project_name(&dir).map_err(|err| {
        user_error(
            format!("the directory name `{dir}` cannot name the project: {err:#}"),
            "pass a name with `--project-name`, e.g. `--project-name guestbook`",
        )
    })
}
