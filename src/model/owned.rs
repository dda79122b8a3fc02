//! The kinds a controller owns (`create api --owns`): a Kubernetes built-in kind or a kind of
//! the project, named `group/version/Kind` as kubebuilder users write GVKs.

use super::builtin::{self, CoreKind};
use super::project::Resource;
use crate::error::user_error;

/// One owned kind, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owned {
    Core(&'static CoreKind),
    /// A kind of this project; `group` is the short group (`webapp`).
    Project {
        group: String,
        qualified_group: String,
        version: String,
        kind: String,
        plural: String,
        namespaced: bool,
    },
}

impl Owned {
    /// Resolves `value` (`apps/v1/Deployment`, `core/v1/ConfigMap`, `v1/ConfigMap`,
    /// `webapp/v1/Guestbook` or `webapp.my.domain/v1/Guestbook`) against Kubernetes' built-in
    /// kinds and the project's kinds, `resources`.
    pub fn parse(value: &str, domain: &str, resources: &[Resource]) -> anyhow::Result<Self> {
        let help = "pass `--owns <group>/<version>/<Kind>`: a built-in kind such as `apps/v1/Deployment` or `core/v1/ConfigMap`, or a kind this project defines such as `webapp/v1/Guestbook`";
        let parts: Vec<&str> = value.split('/').collect();
        let (group, version, kind) = match parts.as_slice() {
            [group, version, kind] => (*group, *version, *kind),
            [version, kind] => ("core", *version, *kind),
            _ => {
                return Err(user_error(
                    format!("invalid `--owns {value}`: it is not `<group>/<version>/<Kind>`"),
                    help,
                ));
            }
        };
        if let Some(found) = builtin::find(group, version, kind) {
            return Ok(Owned::Core(found));
        }
        let ours = resources.iter().find(|r| {
            let qualified = super::gvk::qualified_group(&r.group, domain);
            (r.group == group || qualified == group)
                && r.version == version
                && r.kind == kind
                && r.api
        });
        match ours {
            Some(r) => Ok(Owned::Project {
                group: r.group.clone(),
                qualified_group: super::gvk::qualified_group(&r.group, domain),
                version: r.version.clone(),
                kind: r.kind.clone(),
                plural: r.plural.clone(),
                namespaced: r.namespaced,
            }),
            None if builtin::is_builtin_group(group) => Err(user_error(
                format!(
                    "`--owns {value}`: Kubernetes has no kind `{kind}` in `{group}/{version}` that k8s-openapi knows"
                ),
                "check the spelling: kinds are PascalCase (`Deployment`), the core group is `core` (`core/v1/Pod`)",
            )),
            None => Err(user_error(
                format!(
                    "`--owns {value}`: this project has no kind `{kind}` in `{group}/{version}`"
                ),
                format!(
                    "create it first with `kube-scaffold create api --group {group} --version {version} --kind {kind}`, or {}",
                    &help[5..]
                ),
            )),
        }
    }

    /// How PROJECT records it: `apps/v1/Deployment`, `core/v1/Pod`, `webapp.my.domain/v1/Guestbook`.
    pub fn record(&self) -> String {
        match self {
            Owned::Core(k) => k.flag(),
            Owned::Project {
                qualified_group,
                version,
                kind,
                ..
            } => {
                format!("{qualified_group}/{version}/{kind}")
            }
        }
    }

    pub fn kind(&self) -> &str {
        match self {
            Owned::Core(k) => k.kind,
            Owned::Project { kind, .. } => kind,
        }
    }

    /// The API group Kubernetes sees (`""` for core).
    pub fn api_group(&self) -> &str {
        match self {
            Owned::Core(k) => k.group,
            Owned::Project {
                qualified_group, ..
            } => qualified_group,
        }
    }

    pub fn plural(&self) -> &str {
        match self {
            Owned::Core(k) => k.plural,
            Owned::Project { plural, .. } => plural,
        }
    }

    pub fn namespaced(&self) -> bool {
        match self {
            Owned::Core(k) => k.namespaced,
            Owned::Project { namespaced, .. } => *namespaced,
        }
    }

    /// The Rust type in the generated crate.
    pub fn rust_path(&self) -> String {
        match self {
            Owned::Core(k) => k.rust_path(),
            Owned::Project {
                group,
                version,
                kind,
                ..
            } => {
                format!(
                    "crate::api::{}::{version}::{kind}",
                    super::gvk::group_module(group)
                )
            }
        }
    }
}

/// Checks the kinds a controller of `kind` (namespaced or not) owns: each once, namespaced
/// like their owner, and not the owner itself.
pub fn check(owner: &Resource, owns: &[Owned]) -> anyhow::Result<()> {
    for (i, owned) in owns.iter().enumerate() {
        if let Owned::Project {
            group,
            version,
            kind,
            ..
        } = owned
            && (group, version, kind) == (&owner.group, &owner.version, &owner.kind)
        {
            return Err(user_error(
                format!("`--owns {}`: a kind cannot own itself", owned.record()),
                "own other kinds; objects of one kind refer to each other by name in their spec",
            ));
        }
        if owns[..i].iter().any(|o| o.kind() == owned.kind()) {
            return Err(user_error(
                format!("`--owns` names the kind `{}` twice", owned.kind()),
                "own each kind once (one `--owns` per kind, and one kind of each name)",
            ));
        }
        if !owner.namespaced || !owned.namespaced() {
            return Err(user_error(
                format!(
                    "`--owns {}`: only a namespaced kind can own, and only namespaced kinds (its children live in its namespace)",
                    owned.record()
                ),
                "own namespaced kinds from a namespaced kind; for cluster-scoped objects, write the controller's logic by hand",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guestbook() -> Resource {
        Resource {
            group: "webapp".into(),
            version: "v1".into(),
            kind: "Guestbook".into(),
            plural: "guestbooks".into(),
            namespaced: true,
            api: true,
            controller: true,
            finalizer: false,
            adopted: false,
        }
    }

    #[test]
    fn owned_kinds_resolve_to_builtins_or_the_projects_kinds() {
        let kinds = [guestbook()];
        let deployment = Owned::parse("apps/v1/Deployment", "my.domain", &kinds).unwrap();
        assert_eq!(deployment.record(), "apps/v1/Deployment");
        let config_map = Owned::parse("v1/ConfigMap", "my.domain", &kinds).unwrap();
        assert_eq!(config_map.record(), "core/v1/ConfigMap");
        assert_eq!(config_map.api_group(), "");
        for spelled in ["webapp/v1/Guestbook", "webapp.my.domain/v1/Guestbook"] {
            let ours = Owned::parse(spelled, "my.domain", &kinds).unwrap();
            assert_eq!(ours.record(), "webapp.my.domain/v1/Guestbook");
            assert_eq!(ours.rust_path(), "crate::api::webapp::v1::Guestbook");
            assert_eq!(ours.plural(), "guestbooks");
        }
        for bad in [
            "apps/v1/deployment",
            "Deployment",
            "webapp/v2/Guestbook",
            "a/b/c/d",
        ] {
            let err = Owned::parse(bad, "my.domain", &kinds).unwrap_err();
            assert!(
                err.downcast_ref::<crate::error::UserError>().is_some(),
                "{bad}: {err:#}"
            );
        }
    }
}
