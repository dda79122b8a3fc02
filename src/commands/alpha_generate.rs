//! `kube-scaffold alpha generate`: renders the whole project again from its PROJECT file into a
//! new or empty directory. It reads the project and never writes to it (kubebuilder's once
//! emptied the user's directory, kubebuilder PR #5957).

use std::path::Path;

use crate::cli::GenerateArgs;
use crate::error::user_error;
use crate::model::project::{self, Project};
use crate::plugins;
use crate::scaffold::apply;
use crate::scaffold::templates::Templates;
use crate::ui;

pub fn run(cwd: &Path, args: GenerateArgs) -> anyhow::Result<()> {
    let input = args
        .input_dir
        .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir));
    let output = cwd.join(&args.output_dir);
    let mut project = Project::load(&input)?;
    if project.layout != project::LAYOUT {
        return Err(user_error(
            format!(
                "this project has the layout `{}` of kube-scaffold {}; this kube-scaffold renders `{}`, so it would not reproduce it",
                project.layout,
                project.cli_version,
                project::LAYOUT
            ),
            format!(
                "run `alpha generate` with kube-scaffold {}, or bring the project to this version first (`kube-scaffold upgrade`, coming)",
                project.cli_version
            ),
        ));
    }
    check_empty(&output)?;

    let templates = Templates::load()?;
    let recorded = plugins::recorded(&project, &input)?;
    let chart_recorded = recorded
        .files()
        .any(|(path, _)| path == plugins::helm::SOURCE);
    let mut tree = plugins::replay_onto(&project, &templates, recorded.clone())?;
    project.cli_version = env!("CARGO_PKG_VERSION").into();
    project.generated = plugins::replay_digests(&tree, &recorded, &project.generated);
    tree.write(project::FILE, project.to_toml())?;
    let changes = apply::changes(&tree);
    apply::write(&output, &changes)?;
    for change in &changes {
        ui::status(change.action.label(), &change.path);
    }
    ui::say(&format!(
        "\nGenerated the project again into {}; compare it with yours, e.g. `diff -r {} {}`",
        output.display(),
        input.display(),
        output.display()
    ));
    if project.plugins.iter().any(|key| key == plugins::helm::KEY) && !chart_recorded {
        ui::note(&format!(
            "the project has no record of the manifests its helm chart was made from (dist/chart/.generated-from.yaml): in {}, run `make build-installer` and `kube-scaffold edit --plugins helm/v2-alpha` to make it",
            output.display()
        ));
    }
    Ok(())
}

/// `alpha generate` writes only into a directory that is missing or empty.
fn check_empty(output: &Path) -> anyhow::Result<()> {
    let help = "pass `--output-dir` naming a new or empty directory";
    let mut entries = match std::fs::read_dir(output) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => {
            return Err(user_error(
                format!(
                    "cannot use `{}` as the output directory: {err}",
                    output.display()
                ),
                help,
            ));
        }
    };
    if entries.next().is_some() {
        return Err(user_error(
            format!(
                "`{}` is not empty; `alpha generate` writes only into a new or empty directory, and nothing was written",
                output.display()
            ),
            help,
        ));
    }
    Ok(())
}
