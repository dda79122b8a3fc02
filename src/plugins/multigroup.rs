//! `edit --multigroup`: the modules and roles of the kinds a project has, which move under
//! their groups (`src/controller/<group>/`, `src/webhook/<group>/`,
//! `config/rbac/<group>_<kind>_*`), as `create api` and `create webhook` place new ones there.

use crate::model::gvk;
use crate::model::names;
use crate::model::project::Command;

/// A kind's module (a controller's, a hook's) and its group's module; `name` is the group as
/// PROJECT spells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grouped {
    pub group: String,
    pub name: String,
    pub module: String,
}

/// What `edit --multigroup` moves, from the commands before it.
#[derive(Clone, Debug, Default)]
pub struct Moves {
    /// The controllers' modules.
    pub controllers: Vec<Grouped>,
    /// The hooks' modules (`<kind>_<version>_defaulter`, `..._validator`).
    pub hooks: Vec<Grouped>,
    /// The kinds with editor and viewer roles: their group's module, and the kind lowercase.
    pub roles: Vec<Grouped>,
}

impl Moves {
    pub fn of(earlier: &[Command]) -> Self {
        let mut moves = Moves::default();
        let push = |list: &mut Vec<Grouped>, group: &str, module: String| {
            let grouped = Grouped {
                group: gvk::group_module(group),
                name: group.to_string(),
                module,
            };
            if !list.contains(&grouped) {
                list.push(grouped);
            }
        };
        for command in earlier {
            match command {
                Command::CreateApi(api) => {
                    if api.controller {
                        push(&mut moves.controllers, &api.group, names::snake(&api.kind));
                    }
                    if api.resource() {
                        push(&mut moves.roles, &api.group, api.kind.to_lowercase());
                    }
                }
                Command::CreateWebhook(hook) => {
                    let hooks = [
                        (hook.defaulting, "defaulter"),
                        (hook.validation, "validator"),
                    ];
                    for (_, suffix) in hooks.iter().filter(|(wanted, _)| *wanted) {
                        let module = hook_module(&hook.kind, &hook.version, suffix);
                        push(&mut moves.hooks, &hook.group, module);
                    }
                }
                Command::Edit(_) => {}
            }
        }
        moves
    }
}

/// A hook's module: `<kind>_<version>_<suffix>` (`guestbook_v1_defaulter`).
pub fn hook_module(kind: &str, version: &str, suffix: &str) -> String {
    format!("{}_{version}_{suffix}", names::snake(kind))
}

/// `(module, group)` pairs, as `codegen::edit::regroup` takes them.
pub fn pairs(list: &[Grouped]) -> Vec<(String, String)> {
    list.iter()
        .map(|g| (g.module.clone(), g.group.clone()))
        .collect()
}

/// What a group's module of controllers or hooks sees as `item`: the group as PROJECT spells it.
#[derive(serde::Serialize)]
pub struct GroupItem<'a> {
    pub group: &'a str,
}
