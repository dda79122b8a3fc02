//! The deploy-image plugin (kubebuilder's `deploy-image/v1-alpha`): `create api --plugins
//! deploy-image/v1-alpha --image ...` scaffolds a kind whose controller runs the image in a
//! Deployment it owns, kept at the kind's `spec.size`, with a sample that asks for one pod.
//!
//! Everything of it is here: its flags (`Flags`, on `create api`), their validation
//! (`options`), what it stores in PROJECT with the command (`model::api::DeployImage`, under
//! `deployImage`), and its templates (`scaffolds/v3/deploy-image/`), which take the place of
//! the base and kustomize plugins' for the kind's type, CRD, controller and sample: each
//! extends the base template it replaces (Tera blocks).

use crate::error::user_error;
use crate::model::api::{ApiInputs, DeployImage as Options};
use crate::model::project::Project;
use crate::scaffold::plan::Plan;
use crate::scaffold::tree::Tree;

use super::{ApiContext, ApiPlan, Plugin, paths};

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "deploy-image.rust.kube-scaffold.io/v1-alpha";
/// How `--plugins` may name it: kubebuilder's short and full names, and ours.
pub const ALIASES: &[&str] = &[
    "deploy-image/v1-alpha",
    "deploy-image.go.kubebuilder.io/v1-alpha",
    KEY,
];

/// Its flags on `create api`.
#[derive(Debug, Default, clap::Args)]
pub struct Flags {
    /// deploy-image: the container image the kind runs (e.g. `memcached:1.6.26-alpine3.19`).
    #[arg(long, help_heading = "deploy-image/v1-alpha")]
    pub image: Option<String>,
    /// deploy-image: the container's command, comma-separated (e.g. `memcached,-m=64,-v`).
    #[arg(long, help_heading = "deploy-image/v1-alpha")]
    pub image_container_command: Option<String>,
    /// deploy-image: the port the container listens on.
    #[arg(long, help_heading = "deploy-image/v1-alpha")]
    pub image_container_port: Option<String>,
    /// deploy-image: the user ID the container runs as.
    #[arg(long, help_heading = "deploy-image/v1-alpha")]
    pub run_as_user: Option<String>,
}

/// The Deployment a deploy-image kind owns, as `--owns` spells it.
const DEPLOYMENT: &str = "apps/v1/Deployment";

/// Adds `options` to the request: the kind owns the Deployment that runs the image (first of
/// what it owns), and the project is scaffolded with this plugin from now on.
pub fn add(project: &mut Project, inputs: &mut ApiInputs, options: Options) -> anyhow::Result<()> {
    if !inputs.namespaced {
        return Err(user_error(
            "the deploy-image plugin runs the image in a Deployment in its kind's namespace, and `--namespaced=false` makes a cluster-scoped kind",
            "drop `--namespaced=false`",
        ));
    }
    if inputs.owns.iter().any(|o| o == DEPLOYMENT) {
        return Err(user_error(
            "`--owns apps/v1/Deployment` and the deploy-image plugin both make the Deployment",
            "drop `--owns apps/v1/Deployment`: deploy-image owns it",
        ));
    }
    inputs.owns.insert(0, DEPLOYMENT.to_string());
    inputs.deploy_image = Some(options);
    if !project.plugins.iter().any(|p| p == KEY) {
        project.plugins.push(KEY.to_string());
    }
    Ok(())
}

/// Its inputs: `--plugins` (which may name no other plugin) and its flags, checked.
/// `None` when `--plugins` does not name it.
pub fn options(
    plugins: &[String],
    args: &Flags,
    resource: bool,
    controller: bool,
) -> anyhow::Result<Option<Options>> {
    let help = "e.g. `--plugins deploy-image/v1-alpha --image memcached:1.6.26-alpine3.19 --image-container-port 11211`";
    let mut wanted = false;
    for plugin in plugins {
        if !ALIASES.contains(&plugin.as_str()) {
            return Err(user_error(
                format!("unknown plugin `{plugin}` for `create api`"),
                "the plugin `create api` takes is `deploy-image/v1-alpha`",
            ));
        }
        wanted = true;
    }
    let flags = [
        ("--image", args.image.is_some()),
        (
            "--image-container-command",
            args.image_container_command.is_some(),
        ),
        (
            "--image-container-port",
            args.image_container_port.is_some(),
        ),
        ("--run-as-user", args.run_as_user.is_some()),
    ];
    if !wanted {
        return match flags.iter().find(|(_, given)| *given) {
            Some((flag, _)) => Err(user_error(
                format!("`{flag}` belongs to the deploy-image plugin, which was not asked for"),
                format!("add `--plugins deploy-image/v1-alpha`, or drop `{flag}`"),
            )),
            None => Ok(None),
        };
    }
    if !resource || !controller {
        return Err(user_error(
            "the deploy-image plugin scaffolds a kind and its controller, and `--resource=false` or `--controller=false` was given",
            "drop `--resource=false` / `--controller=false`",
        ));
    }
    let Some(image) = args.image.clone() else {
        return Err(user_error(
            "the deploy-image plugin needs the image to run: `--image` is missing",
            format!("pass `--image`, {help}"),
        ));
    };
    let literal = |flag: &str, value: &str| {
        let bad = |c: char| c.is_whitespace() || c.is_control() || c == '"' || c == '\\';
        if value.is_empty() || value.contains(bad) {
            return Err(user_error(
                format!(
                    "invalid `{flag} {value}`: it must be non-empty, without spaces, quotes or backslashes"
                ),
                format!("pass {flag} as one word, {help}"),
            ));
        }
        Ok(value.to_string())
    };
    let image = literal("--image", &image)?;
    let container_command = match &args.image_container_command {
        Some(command) if command.split(',').any(str::is_empty) => {
            return Err(user_error(
                format!("invalid `--image-container-command {command}`: it has an empty argument"),
                "separate the command's arguments with single commas, e.g. `memcached,--memory-limit=64,-v`",
            ));
        }
        Some(command) => Some(literal("--image-container-command", command)?),
        None => None,
    };
    let number = |flag: &str, value: &str, max: i64| -> anyhow::Result<i64> {
        match value.parse::<i64>() {
            Ok(n) if (0..=max).contains(&n) => Ok(n),
            _ => Err(user_error(
                format!("invalid `{flag} {value}`: it must be a whole number from 0 to {max}"),
                format!("pass e.g. `{flag} 1001`"),
            )),
        }
    };
    let container_port = match &args.image_container_port {
        Some(port) => match number("--image-container-port", port, 65535)? {
            0 => {
                return Err(user_error(
                    "invalid `--image-container-port 0`: ports start at 1",
                    "pass the port the image listens on, e.g. `--image-container-port 11211`",
                ));
            }
            n => Some(n as u16),
        },
        None => None,
    };
    let run_as_user = match &args.run_as_user {
        Some(user) => match number("--run-as-user", user, i64::from(i32::MAX))? {
            0 => {
                return Err(user_error(
                    "invalid `--run-as-user 0`: the pods run as non-root (`runAsNonRoot`)",
                    "pass the image's non-root user ID, e.g. `--run-as-user 1001`",
                ));
            }
            n => Some(n),
        },
        None => None,
    };
    Ok(Some(Options {
        image,
        container_command,
        container_port,
        run_as_user,
    }))
}

/// The deploy-image plugin.
pub struct DeployImage;

impl Plugin for DeployImage {
    fn key(&self) -> &'static str {
        KEY
    }

    fn create_api(
        &self,
        plan: &mut Plan,
        p: &ApiPlan,
        c: &ApiContext,
        _: &mut Tree,
    ) -> anyhow::Result<()> {
        if c.deploy_image.is_none() {
            return Ok(());
        }
        let (group, version, kind) = (&c.group_module, &c.version, &c.kind_module);
        let mut ours = vec![
            (
                paths::api_module(group, version, kind),
                "deploy-image/src/api/kind.rs.tera",
            ),
            (
                paths::crd(&c.qualified_group, &c.plural),
                "deploy-image/config/crd/crd.json.tera",
            ),
            (
                paths::sample(&c.sample_file),
                "deploy-image/config/samples/sample.yaml.tera",
            ),
        ];
        let controller = "deploy-image/src/controller/kind.rs.tera";
        ours.push((p.controller_file.clone(), controller));
        for (dest, template) in ours {
            anyhow::ensure!(
                plan.replace_template(&dest, template),
                "the deploy-image plugin runs after the base and kustomize plugins, which plan {dest}"
            );
        }
        Ok(())
    }
}
