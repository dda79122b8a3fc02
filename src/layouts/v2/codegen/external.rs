//! Another project's CRD (`create api --external-api-crd`): what the project reads of it, and
//! the Rust types kopium (kube-rs's generator) makes of its schema.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use crate::error::user_error;

/// Parses `text`, a CRD in YAML; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> anyhow::Result<CustomResourceDefinition> {
    let crd: CustomResourceDefinition = serde_saphyr::from_str(text).map_err(|err| {
        user_error(
            format!("`{file}` is not a CustomResourceDefinition: {err}"),
            "pass the CRD's YAML file, as `kubectl get crd <name> -o yaml` prints it",
        )
    })?;
    Ok(crd)
}

/// The Rust types of `version` of the CRD, as kopium writes them: a `CustomResource` without a
/// schema (no CRD of this project's is made from it), its spec, status and nested types, each
/// deriving `Default` where its fields allow it.
pub fn rust_types(crd: &CustomResourceDefinition, version: &str) -> anyhow::Result<String> {
    names_kopium_can_use(crd, version)?;
    let generator = kopium::TypeGenerator::builder()
        .api_version(Some(version.to_string()))
        .derive(kopium::Derive::all("Default"))
        .smart_derive_elision(true)
        .no_condition(!conditions_fit(crd, version))
        .build();
    let types = generator
        .generate_rust_types_for(crd, None::<String>)
        .map_err(|err| {
            user_error(
                format!("kopium cannot generate Rust types from the CRD: {err:#}"),
                "check that the CRD's version has an openAPIV3Schema",
            )
        })?;
    kind_made(&types, version)?;
    Ok(types)
}

/// Refuses kopium's `types` of `version` when they hold no kind (no `#[kube(group = ..)]`):
/// kopium makes none unless the `spec` is an object, and a project without it does not build.
pub fn kind_made(types: &str, version: &str) -> anyhow::Result<()> {
    if types.lines().any(|l| l.starts_with("#[kube(group = ")) {
        return Ok(());
    }
    Err(user_error(
        format!(
            "kopium made no Rust kind of version `{version}` of the CRD: kube's `CustomResource` needs a `spec` of `type: object`"
        ),
        "use a CRD whose `spec` is an object, or write the kind's types by hand (`create api --resource`)",
    ))
}

/// Refuses a CRD version that has a property whose name holds no letter or digit (`_`, `$`):
/// kopium names a nested type after its property, and such a name is empty, so the type
/// would take its parent's name, and kopium recurses until the stack overflows (kopium 0.24).
pub fn names_kopium_can_use(crd: &CustomResourceDefinition, version: &str) -> anyhow::Result<()> {
    fn nameless(schema: &JSONSchemaProps, path: &str) -> Option<String> {
        let properties = schema.properties.iter().flatten();
        for (name, property) in properties {
            let path = format!("{path}.{name}");
            if !name.chars().any(|c| c.is_ascii_alphanumeric()) {
                return Some(path);
            }
            if let Some(found) = nameless(property, &path) {
                return Some(found);
            }
        }
        let items = match &schema.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => Some(items.as_ref()),
            _ => None,
        };
        let values = match &schema.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(values)) => Some(values.as_ref()),
            _ => None,
        };
        items
            .into_iter()
            .chain(values)
            .find_map(|nested| nameless(nested, &format!("{path}[]")))
    }
    let schema = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref());
    match schema.and_then(|schema| nameless(schema, "")) {
        None => Ok(()),
        Some(path) => Err(user_error(
            format!(
                "version `{version}` of the CRD has the property `{}`, whose name has no letter or digit to name a Rust type or field after",
                path.trim_start_matches('.')
            ),
            "rename the property in the CRD, or adopt the CRD without it and add the field to the Rust type by hand",
        )),
    }
}

/// Whether every list of conditions in `version` of the CRD fits k8s-openapi's `Condition`,
/// which kopium gives any list of objects with metav1.Condition's five fields: `Condition`
/// needs all five, so a CRD that leaves some optional (cert-manager's Certificate does) must
/// get its own type, or an object the API server allows would not read as the Rust type.
pub fn conditions_fit(crd: &CustomResourceDefinition, version: &str) -> bool {
    crd.spec
        .versions
        .iter()
        .filter(|v| v.name == version)
        .filter_map(|v| v.schema.as_ref()?.open_api_v3_schema.as_ref())
        .all(fits)
}

/// `schema` and every schema within it: a list shaped like conditions requires all five fields.
fn fits(schema: &JSONSchemaProps) -> bool {
    const CONDITION: [&str; 5] = ["lastTransitionTime", "message", "reason", "status", "type"];
    let items = match &schema.items {
        Some(JSONSchemaPropsOrArray::Schema(items)) => Some(items.as_ref()),
        _ => None,
    };
    if let Some(item) = items {
        let properties = item.properties.as_ref();
        let shaped = CONDITION
            .iter()
            .all(|f| properties.is_some_and(|p| p.contains_key(*f)));
        let required = item.required.as_deref().unwrap_or_default();
        if shaped && !CONDITION.iter().all(|f| required.iter().any(|r| r == f)) {
            return false;
        }
    }
    let extra = match &schema.additional_properties {
        Some(JSONSchemaPropsOrBool::Schema(extra)) => Some(extra.as_ref()),
        _ => None,
    };
    schema.properties.iter().flat_map(|p| p.values()).all(fits)
        && items.into_iter().chain(extra).all(fits)
}

/// Whether kopium derived `Default` for the kind's root type (its spec allows it).
pub fn has_default(rust_types: &str) -> bool {
    rust_types.contains("#[kube(derive=\"Default\")]")
}
