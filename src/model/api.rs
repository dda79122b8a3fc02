//! What one `create api` makes, validated: which kind of API (`ApiKind`: a kind of the
//! project's own, one Kubernetes defines, another project's CRD, a CRD adopted as the
//! project's) and the request's other inputs (`ApiInputs`).
//!
//! PROJECT keeps a request as kube-scaffold 0.2 wrote it, one flat table of flags (`Stored`);
//! reading it checks that the flags name one kind of API.

use serde::{Deserialize, Serialize};

use super::gvk::Gvk;

/// What kind of API a `create api` makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiKind {
    /// A kind of the project's own: its Rust type and CRD when `resource` (`--resource`), else
    /// a controller for the type an earlier command made. `storage_version`: this new version
    /// of the kind is the one the API server stores (`--storage-version`).
    Own {
        resource: bool,
        storage_version: bool,
    },
    /// A kind Kubernetes defines (`--group apps --kind Deployment --resource=false`): a
    /// controller, without a type or CRD of the project's.
    Builtin,
    /// Another project's kind (`--external-api-crd`): a controller, and Rust types generated
    /// from the CRD, which the project keeps a copy of.
    External(Crd),
    /// A CRD adopted as the project's own kind (`--from-crd`): every one of its `versions`,
    /// in the CRD's order, gets Rust types generated from it; the request's version is the
    /// one stored.
    Adopted { crd: Crd, versions: Vec<String> },
}

/// A CRD a command took as input: where the project keeps its copy, and its text (read from
/// there by `Project::load`; empty until then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crd {
    pub path: String,
    pub text: String,
}

/// `create api`'s inputs, validated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Stored", try_from = "Stored")]
pub struct ApiInputs {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// What kind of API it is.
    pub api: ApiKind,
    /// The controller was scaffolded (`--controller`).
    pub controller: bool,
    /// The controller has a finalizer (`--finalizer`).
    pub finalizer: bool,
    /// The kind's files were scaffolded again over existing ones (`--force`).
    pub force: bool,
    /// The kinds the controller owns (`--owns`), as `group/version/Kind` with the group
    /// Kubernetes sees: `apps/v1/Deployment`, `core/v1/ConfigMap`, `webapp.my.domain/v1/Guestbook`.
    pub owns: Vec<String>,
    /// The deploy-image plugin's inputs (`--plugins deploy-image/v1-alpha`): the kind runs
    /// this image in a Deployment it owns.
    pub deploy_image: Option<DeployImage>,
}

/// The deploy-image plugin's inputs (`plugins::deploy_image`), validated, as PROJECT records
/// them with the `create api` (`deployImage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeployImage {
    /// `--image`.
    pub image: String,
    /// `--image-container-command`, comma-separated, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_command: Option<String>,
    /// `--image-container-port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<u16>,
    /// `--run-as-user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_user: Option<i64>,
}

impl ApiInputs {
    /// A request for `api` of `gvk`, with a controller and nothing else: the only constructor;
    /// the command sets what its flags add.
    pub fn new(gvk: Gvk, plural: String, namespaced: bool, api: ApiKind) -> Self {
        Self {
            group: gvk.group,
            version: gvk.version,
            kind: gvk.kind,
            plural,
            namespaced,
            api,
            controller: true,
            finalizer: false,
            force: false,
            owns: Vec::new(),
            deploy_image: None,
        }
    }

    /// A namespaced kind of the project's own, with its type and controller: what the tests
    /// start from.
    #[cfg(test)]
    pub fn own(group: &str, version: &str, kind: &str) -> Self {
        let gvk = Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        };
        let api = ApiKind::Own {
            resource: true,
            storage_version: false,
        };
        Self::new(gvk, super::names::plural(kind), true, api)
    }

    /// The command scaffolded the kind's Rust type and CRD (its own or an adopted one).
    pub fn resource(&self) -> bool {
        match &self.api {
            ApiKind::Own { resource, .. } => *resource,
            ApiKind::Adopted { .. } => true,
            ApiKind::Builtin | ApiKind::External(_) => false,
        }
    }

    /// This new version of the kind became the one stored (`--storage-version`).
    pub fn storage_version(&self) -> bool {
        matches!(
            self.api,
            ApiKind::Own {
                storage_version: true,
                ..
            }
        )
    }

    /// The kind is one Kubernetes defines.
    pub fn builtin(&self) -> bool {
        self.api == ApiKind::Builtin
    }

    /// Another project's CRD, whose kind the controller reconciles.
    pub fn external(&self) -> Option<&Crd> {
        match &self.api {
            ApiKind::External(crd) => Some(crd),
            _ => None,
        }
    }

    /// The CRD adopted as the kind, and every version of it.
    pub fn adopted(&self) -> Option<(&Crd, &[String])> {
        match &self.api {
            ApiKind::Adopted { crd, versions } => Some((crd, versions)),
            _ => None,
        }
    }

    /// The CRD the command took as input, if any: another project's or an adopted one.
    pub fn crd_mut(&mut self) -> Option<&mut Crd> {
        match &mut self.api {
            ApiKind::External(crd) | ApiKind::Adopted { crd, .. } => Some(crd),
            _ => None,
        }
    }
}

/// A request as PROJECT stores it: a flat table of flags, as kube-scaffold 0.2 wrote it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Stored {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
    resource: bool,
    controller: bool,
    #[serde(default)]
    finalizer: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    force: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    owns: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    builtin: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    external_crd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from_crd: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    versions: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    storage_version: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deploy_image: Option<DeployImage>,
}

impl From<ApiInputs> for Stored {
    fn from(api: ApiInputs) -> Self {
        let resource = api.resource();
        let storage_version = api.storage_version();
        let (builtin, external_crd, from_crd, versions) = match api.api {
            ApiKind::Own { .. } => (false, None, None, Vec::new()),
            ApiKind::Builtin => (true, None, None, Vec::new()),
            ApiKind::External(crd) => (false, Some(crd.path), None, Vec::new()),
            ApiKind::Adopted { crd, versions } => (false, None, Some(crd.path), versions),
        };
        Self {
            group: api.group,
            version: api.version,
            kind: api.kind,
            plural: api.plural,
            namespaced: api.namespaced,
            resource,
            controller: api.controller,
            finalizer: api.finalizer,
            force: api.force,
            owns: api.owns,
            builtin,
            external_crd,
            from_crd,
            versions,
            storage_version,
            deploy_image: api.deploy_image,
        }
    }
}

impl TryFrom<Stored> for ApiInputs {
    type Error = String;

    fn try_from(s: Stored) -> Result<Self, String> {
        let crd = |path| Crd {
            path,
            text: String::new(),
        };
        let api = match (s.builtin, s.external_crd, s.from_crd) {
            (false, None, None) => ApiKind::Own {
                resource: s.resource,
                storage_version: s.storage_version,
            },
            (true, None, None) if !s.resource => ApiKind::Builtin,
            (false, Some(path), None) if !s.resource => ApiKind::External(crd(path)),
            (false, None, Some(path)) if s.resource => ApiKind::Adopted {
                crd: crd(path),
                versions: s.versions.clone(),
            },
            _ => {
                return Err(format!(
                    "the `create api` of {} names more than one kind of API (`resource`, `builtin`, `externalCrd`, `fromCrd`)",
                    s.kind
                ));
            }
        };
        let adopted = matches!(api, ApiKind::Adopted { .. });
        if (s.storage_version && !matches!(api, ApiKind::Own { .. }))
            || (!s.versions.is_empty() && !adopted)
        {
            return Err(format!(
                "the `create api` of {} has `storageVersion` or `versions`, which only a kind of the project's own or an adopted CRD has",
                s.kind
            ));
        }
        Ok(Self {
            group: s.group,
            version: s.version,
            kind: s.kind,
            plural: s.plural,
            namespaced: s.namespaced,
            api,
            controller: s.controller,
            finalizer: s.finalizer,
            force: s.force,
            owns: s.owns,
            deploy_image: s.deploy_image,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_request_names_one_kind_of_api() {
        let read = |extra: &str| {
            let text = format!(
                "group = \"webapp\"\nversion = \"v1\"\nkind = \"Guestbook\"\nplural = \"guestbooks\"\nnamespaced = true\ncontroller = true\n{extra}"
            );
            toml::from_str::<ApiInputs>(&text).map_err(|err| err.to_string())
        };
        let builtin = read("resource = false\nbuiltin = true\n").unwrap();
        assert_eq!(builtin.api, ApiKind::Builtin);
        let adopted =
            read("resource = true\nfromCrd = \"hack/crds/x.yaml\"\nversions = [\"v1\"]\n").unwrap();
        assert_eq!(adopted.adopted().unwrap().1, ["v1"]);
        for both in [
            "resource = false\nbuiltin = true\nexternalCrd = \"hack/crds/x.yaml\"\n",
            "resource = true\nbuiltin = true\n",
            "resource = false\nexternalCrd = \"a.yaml\"\nstorageVersion = true\n",
        ] {
            let err = read(both).unwrap_err();
            assert!(err.contains("Guestbook"), "{both}: {err}");
        }
    }

    #[test]
    fn every_kind_of_api_is_stored_as_it_was_read() {
        let crd = || Crd {
            path: "hack/crds/x.yaml".into(),
            text: String::new(),
        };
        for api in [
            ApiKind::Own {
                resource: false,
                storage_version: true,
            },
            ApiKind::Builtin,
            ApiKind::External(crd()),
            ApiKind::Adopted {
                crd: crd(),
                versions: vec!["v1alpha1".into(), "v1".into()],
            },
        ] {
            let mut inputs = ApiInputs::own("webapp", "v1", "Guestbook");
            inputs.api = api;
            let text = toml::to_string(&inputs).unwrap();
            assert_eq!(
                toml::from_str::<ApiInputs>(&text).unwrap(),
                inputs,
                "{text}"
            );
        }
    }
}
