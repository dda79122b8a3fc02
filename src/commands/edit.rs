//! `kube-scaffold edit`: changes a project after `init`. `--plugins` adds plugins of the whole
//! project (grafana, autoupdate): each writes its files, and PROJECT records the command, so
//! `alpha generate` renders them again.

use std::path::Path;

use crate::cli::EditArgs;
use crate::error::user_error;
use crate::model::project::{Command, EditInputs, Project};
use crate::plugins;
use crate::scaffold::tree::Tree;

pub fn run(root: &Path, args: EditArgs) -> anyhow::Result<()> {
    let mut project = Project::load(root)?;
    project.check_compatible()?;
    plugins::resolve(&project)?;
    let keys = project_plugins(&args.plugins, &project.plugins)?;
    project.plugins.extend(keys.iter().cloned());
    let how = super::Finish {
        overwrite_edited: false,
        dry_run: args.dry_run,
        conflict_help: "move those files away, then run the command again",
    };
    let next = "\nNext: commit the new files; `kube-scaffold alpha generate` renders them again from PROJECT.";
    let command = Command::Edit(EditInputs { plugins: keys });
    super::scaffold(root, Tree::over(root), project, command, &how, next)
}

/// The keys of the plugins `names` asks for, checked: each a plugin of the whole project that
/// the project (whose plugins are `taken`) does not have yet, named once.
pub fn project_plugins(names: &[String], taken: &[String]) -> anyhow::Result<Vec<String>> {
    let mut keys: Vec<String> = Vec::new();
    for name in names {
        let Some(plugin) = plugins::project_plugin(name) else {
            return Err(user_error(
                format!("unknown plugin `{name}` for the whole project"),
                format!(
                    "pass one of {} (deploy-image is `create api --plugins`'s)",
                    plugins::project_plugin_names()
                ),
            ));
        };
        let key = plugin.key().to_string();
        if taken.contains(&key) || keys.contains(&key) {
            return Err(user_error(
                format!("the project has the plugin `{name}` already; nothing was written"),
                "drop it from `--plugins`",
            ));
        }
        keys.push(key);
    }
    Ok(keys)
}
