//! The Rust types of a kind that comes as a CRD file, generated once per `create api` by the
//! command that runs its plugins (`plugins::run`), before the templates' context is made.

use crate::model::api::{ApiInputs, Crd};

use super::{adopted, external};

/// What kopium made of the request's CRD, if it has one.
pub enum KindTypes {
    /// The kind's type comes from a template, or is k8s-openapi's: nothing to generate.
    None,
    /// Another project's kind (`--external-api-crd`): the types of the request's version.
    External { crd: Crd, types: String },
    /// An adopted kind (`--from-crd`): the types of each of its versions, and the manifest
    /// `config/crd/bases` starts with.
    Adopted {
        crd: Crd,
        versions: Vec<AdoptedVersion>,
        manifest: String,
    },
}

/// One version of an adopted kind: its Rust types, and whether the API server serves it.
pub struct AdoptedVersion {
    pub version: String,
    pub types: String,
    pub served: bool,
}

impl KindTypes {
    /// Generates the types of `api`'s CRD, if it has one.
    pub fn generate(api: &ApiInputs) -> anyhow::Result<Self> {
        if let Some(crd) = api.external() {
            let parsed = external::parse(&crd.text, &crd.path)?;
            let types = external::rust_types(&parsed, &api.version)?;
            return Ok(Self::External {
                crd: crd.clone(),
                types,
            });
        }
        let Some((crd, _)) = api.adopted() else {
            return Ok(Self::None);
        };
        let parsed = external::parse(&crd.text, &crd.path)?;
        let versions = parsed
            .spec
            .versions
            .iter()
            .map(|v| {
                let schema = adopted::CONDITIONS_SCHEMA;
                Ok(AdoptedVersion {
                    version: v.name.clone(),
                    types: adopted::rust_types(&parsed, &v.name, &crd.path, schema)?,
                    served: v.served,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self::Adopted {
            manifest: adopted::manifest(parsed, &crd.path)?,
            crd: crd.clone(),
            versions,
        })
    }

    /// The types of `version`, if they were generated.
    pub fn of(&self, version: &str) -> Option<&str> {
        match self {
            Self::None => None,
            Self::External { types, .. } => Some(types),
            Self::Adopted { versions, .. } => versions
                .iter()
                .find(|v| v.version == version)
                .map(|v| v.types.as_str()),
        }
    }
}
