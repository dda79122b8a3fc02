//! The deploy-image plugin's flags on `create api`, checked.

use crate::cli::DeployImageFlags;
use crate::error::user_error;
use crate::model::api::DeployImage;
use crate::plugins::deploy_image::ALIASES;

/// A whole example, for `help:` lines.
const EXAMPLE: &str = "e.g. `--plugins deploy-image/v1-alpha --image memcached:1.6.26-alpine3.19 --image-container-port 11211`";

/// Its inputs: `--plugins` (which may name no other plugin) and its flags, checked.
/// `None` when `--plugins` does not name it.
pub fn checked(
    plugins: &[String],
    args: &DeployImageFlags,
    resource: bool,
    controller: bool,
) -> anyhow::Result<Option<DeployImage>> {
    if !asked_for(plugins, args)? {
        return Ok(None);
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
            format!("pass `--image`, {EXAMPLE}"),
        ));
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
    let container_port = match &args.image_container_port {
        Some(port) => Some(positive(
            "--image-container-port",
            port,
            65535,
            "ports start at 1",
            "pass the port the image listens on, e.g. `--image-container-port 11211`",
        )? as u16),
        None => None,
    };
    let run_as_user = match &args.run_as_user {
        Some(user) => Some(positive(
            "--run-as-user",
            user,
            i64::from(i32::MAX),
            "the pods run as non-root (`runAsNonRoot`)",
            "pass the image's non-root user ID, e.g. `--run-as-user 1001`",
        )?),
        None => None,
    };
    Ok(Some(DeployImage {
        image,
        container_command,
        container_port,
        run_as_user,
    }))
}

/// `value` of `flag` as one word for a string constant: non-empty, without spaces, quotes or
/// backslashes.
fn literal(flag: &str, value: &str) -> anyhow::Result<String> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || c == '"' || c == '\\';
    if value.is_empty() || value.contains(bad) {
        return Err(user_error(
            format!(
                "invalid `{flag} {value}`: it must be non-empty, without spaces, quotes or backslashes"
            ),
            format!("pass {flag} as one word, {EXAMPLE}"),
        ));
    }
    Ok(value.to_string())
}

/// `value` of `flag` as a whole number from 1 to `max`; `zero` says why 0 is refused and
/// `help` what to pass instead.
fn positive(flag: &str, value: &str, max: i64, zero: &str, help: &str) -> anyhow::Result<i64> {
    match value.parse::<i64>() {
        Ok(0) => Err(user_error(format!("invalid `{flag} 0`: {zero}"), help)),
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(user_error(
            format!("invalid `{flag} {value}`: it must be a whole number from 0 to {max}"),
            format!("pass e.g. `{flag} 1001`"),
        )),
    }
}

/// Whether `--plugins` names the plugin; an error if it names another one, or if the
/// plugin's flags are given without it.
pub(super) fn asked_for(plugins: &[String], args: &DeployImageFlags) -> anyhow::Result<bool> {
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
    match flags.iter().find(|(_, given)| *given) {
        Some((flag, _)) if !wanted => Err(user_error(
            format!("`{flag}` belongs to the deploy-image plugin, which was not asked for"),
            format!("add `--plugins deploy-image/v1-alpha`, or drop `{flag}`"),
        )),
        _ => Ok(wanted),
    }
}
