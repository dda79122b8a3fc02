//! A CRD the project adopts as its own kind (`create api --from-crd`): what `create api` checks
//! of it, and the Rust types of each of its versions, from which `make manifests` writes the
//! CRD again.
//!
//! The types are kopium's (kube-rs's generator) with their schema derived (`JsonSchema`), and
//! what kopium leaves out of the `#[kube]` attributes added here: the kind's description, which
//! version is stored and served, deprecation, printer columns, short names, categories, the
//! singular and the scale subresource. What the types cannot say (validations such as `pattern`, `minimum`,
//! `default`) is lost when `make manifests` writes the CRD; docs/commands.md lists it.

use std::fmt::Write as _;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::user_error;

/// What `create api` takes from a CRD it adopts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adopted {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Every version, in the CRD's order.
    pub versions: Vec<String>,
    /// The version the API server stores.
    pub storage: String,
}

/// The CRD's names and versions, checked: exactly one storage version, and a schema for each.
pub fn describe(crd: &CustomResourceDefinition, file: &str) -> anyhow::Result<Adopted> {
    let versions = &crd.spec.versions;
    let stored: Vec<&str> = versions
        .iter()
        .filter(|v| v.storage)
        .map(|v| v.name.as_str())
        .collect();
    let [storage] = stored[..] else {
        return Err(user_error(
            format!(
                "`{file}` has {} storage versions ({}); a CRD has exactly one",
                stored.len(),
                stored.join(", ")
            ),
            "set `storage: true` on exactly one version, as the API server requires",
        ));
    };
    if let Some(v) = versions.iter().find(|v| schema_of(v).is_none()) {
        return Err(user_error(
            format!("version `{}` of `{file}` has no openAPIV3Schema", v.name),
            "give every version a schema (`kubectl get crd <name> -o yaml` prints the installed one)",
        ));
    }
    Ok(Adopted {
        group: crd.spec.group.clone(),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
        namespaced: crd.spec.scope == "Namespaced",
        versions: versions.iter().map(|v| v.name.clone()).collect(),
        storage: storage.to_string(),
    })
}

fn schema_of(
    v: &CustomResourceDefinitionVersion,
) -> Option<&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps> {
    v.schema.as_ref()?.open_api_v3_schema.as_ref()
}

/// The function a project's kinds take `status.conditions`' schema from.
pub const CONDITIONS_SCHEMA: &str = "kube_scaffold_runtime::conditions::schema";

/// The Rust types of `version` of the CRD: a `CustomResource` whose derived schema `make
/// manifests` writes, its spec, status and nested types. `copy` names the project's copy of the
/// CRD in the file's first lines; `conditions_schema`, the function of the conditions' schema.
pub fn rust_types(
    crd: &CustomResourceDefinition,
    version: &str,
    copy: &str,
    conditions_schema: &str,
) -> anyhow::Result<String> {
    crate::codegen::external::names_kopium_can_use(crd, version)?;
    let generator = kopium::TypeGenerator::builder()
        .api_version(Some(version.to_string()))
        .derive(kopium::Derive::all("Default"))
        .derive(kopium::Derive::all("JsonSchema"))
        .schema_mode(kopium::SchemaMode::Derived)
        .emit_docs(true)
        // Conditions, object references and int-or-strings become k8s-openapi's types, whose
        // JSON schemas the project has (k8s-openapi's `schemars` feature).
        .smart_derive_elision(true)
        .no_condition(!crate::codegen::external::conditions_fit(crd, version))
        .build();
    let types = generator
        .generate_rust_types_for(crd, None::<String>)
        .map_err(|err| {
            user_error(
                format!(
                    "kopium cannot generate Rust types from version `{version}` of the CRD: {err:#}"
                ),
                "check that the version's openAPIV3Schema is a structural schema",
            )
        })?;
    crate::codegen::external::kind_made(&types, version)?;
    for (rust, why) in [
        ("DateTime<Utc>", "`type: date`"),
        ("NaiveDate", "`type: date`"),
    ] {
        if types.contains(rust) {
            return Err(user_error(
                format!(
                    "version `{version}` of the CRD has a field with {why}, whose Rust type ({rust}) has no JSON schema in a kube-scaffold project"
                ),
                "make the field `type: string` (with `format: date-time`), or adopt the CRD without it and add it to the Rust type by hand",
            ));
        }
    }
    // metav1.Condition's whole schema (list-map keys, enum, patterns), as the project's own
    // kinds have it.
    let types = types.replace(
        "    pub conditions: Option<Vec<Condition>>,\n",
        &format!("    #[schemars(schema_with = \"{conditions_schema}\")]\n    pub conditions: Option<Vec<Condition>>,\n"),
    );
    let v = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .ok_or_else(|| anyhow::anyhow!("the CRD has no version `{version}`"))?;
    let attributes = kube_attributes(crd, v);
    let mut out = String::new();
    writeln!(
        out,
        "// Generated by kopium from {copy} (`create api --from-crd`).\n\
         // These types are the project's now: edit them, then `make manifests` writes the CRD\n\
         // from them."
    )?;
    let mut attributes_written = false;
    for line in types.lines().skip_while(|l| l.starts_with("//")) {
        writeln!(out, "{line}")?;
        if !attributes_written && line.starts_with("#[kube(group = ") {
            out.push_str(&attributes);
            attributes_written = true;
        }
    }
    Ok(out)
}

/// The `#[kube]` attributes of what the CRD says of `v` and kopium does not write.
fn kube_attributes(crd: &CustomResourceDefinition, v: &CustomResourceDefinitionVersion) -> String {
    let mut out = String::new();
    let names = &crd.spec.names;
    if let Some(description) = schema_of(v).and_then(|s| s.description.as_ref()) {
        let _ = writeln!(out, "#[kube(doc = {})]", quoted(description));
    }
    if !v.storage {
        out.push_str("#[kube(storage = false)]\n");
    }
    if !v.served {
        out.push_str("#[kube(served = false)]\n");
    }
    match (v.deprecated, &v.deprecation_warning) {
        (Some(true), Some(warning)) => {
            let _ = writeln!(out, "#[kube(deprecated = {})]", quoted(warning));
        }
        (Some(true), None) => out.push_str("#[kube(deprecated)]\n"),
        _ => {}
    }
    if let Some(singular) = &names.singular
        && *singular != names.kind.to_lowercase()
    {
        let _ = writeln!(out, "#[kube(singular = {})]", quoted(singular));
    }
    for name in names.short_names.iter().flatten() {
        let _ = writeln!(out, "#[kube(shortname = {})]", quoted(name));
    }
    for name in names.categories.iter().flatten() {
        let _ = writeln!(out, "#[kube(category = {})]", quoted(name));
    }
    // As JSON: clippy's `duplicated_attributes` takes two columns of one type, written as
    // `printcolumn(type_ = "string", ...)`, for a duplicated attribute.
    for column in v.additional_printer_columns.iter().flatten() {
        let json = serde_json::json!({
            "name": column.name,
            "type": column.type_,
            "jsonPath": column.json_path,
            "description": column.description,
            "format": column.format,
            "priority": column.priority,
        });
        let fields: serde_json::Map<String, serde_json::Value> = json
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let json = serde_json::Value::Object(fields).to_string();
        let _ = writeln!(out, "#[kube(printcolumn = {})]", raw(&json));
    }
    if let Some(scale) = v.subresources.as_ref().and_then(|s| s.scale.as_ref()) {
        let mut fields = vec![
            format!("spec_replicas_path = {}", quoted(&scale.spec_replicas_path)),
            format!(
                "status_replicas_path = {}",
                quoted(&scale.status_replicas_path)
            ),
        ];
        if let Some(selector) = &scale.label_selector_path {
            fields.push(format!("label_selector_path = {}", quoted(selector)));
        }
        let _ = writeln!(out, "#[kube(scale({}))]", fields.join(", "));
    }
    out
}

/// The CRD as `config/crd/bases` holds it until `make manifests` writes it from the types: the
/// user's, without what the API server adds (status, uid, managed fields...).
pub fn manifest(mut crd: CustomResourceDefinition, copy: &str) -> anyhow::Result<String> {
    let meta = crd.metadata;
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    crd.metadata = ObjectMeta {
        name: meta.name,
        labels: meta.labels.filter(|l| !l.is_empty()),
        annotations: Some(annotations).filter(|a| !a.is_empty()),
        ..ObjectMeta::default()
    };
    crd.status = None;
    let yaml = serde_saphyr::to_string(&crd)?;
    Ok(format!(
        "# Adopted from {copy} by `kube-scaffold create api --from-crd`: `make manifests` writes\n\
         # it from the Rust types (src/bin/crdgen.rs).\n{yaml}"
    ))
}

/// `text` as a raw Rust string literal, for JSON.
fn raw(text: &str) -> String {
    match text.contains("\"#") {
        true => quoted(text),
        false => format!("r#\"{text}\"#"),
    }
}

/// `text` as a Rust string literal.
fn quoted(text: &str) -> String {
    format!("{text:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::external;

    const BACKUP: &str = include_str!("../../tests/fixtures/crds/backup.yaml");

    #[test]
    fn every_version_becomes_a_type_with_what_kopium_leaves_out() {
        let crd = external::parse(BACKUP, "backup.yaml").unwrap();
        let about = describe(&crd, "backup.yaml").unwrap();
        assert_eq!(about.versions, ["v1alpha1", "v1"]);
        assert_eq!(about.storage, "v1");
        assert_eq!(
            (about.group.as_str(), about.plural.as_str()),
            ("ops.example.org", "backups")
        );

        let old = rust_types(&crd, "v1alpha1", "hack/crds/x.yaml", CONDITIONS_SCHEMA).unwrap();
        assert!(
            old.starts_with("// Generated by kopium from hack/crds/x.yaml"),
            "{old}"
        );
        assert!(!old.contains("WARNING"), "{old}");
        assert!(old.contains("#[kube(storage = false)]\n"), "{old}");
        assert!(
            old.contains("#[kube(deprecated = \"ops.example.org/v1alpha1 Backup is deprecated; use ops.example.org/v1\")]"),
            "{old}"
        );
        assert!(!old.contains("printcolumn"), "{old}");

        let new = rust_types(&crd, "v1", "hack/crds/x.yaml", CONDITIONS_SCHEMA).unwrap();
        assert!(!new.contains("storage"), "{new}");
        assert!(!new.contains("schema = "), "the schema is derived: {new}");
        assert!(
            new.contains("JsonSchema)]\n#[kube(group = \"ops.example.org\", version = \"v1\""),
            "{new}"
        );
        assert!(
            new.contains("#[kube(shortname = \"bk\")]\n#[kube(category = \"all\")]\n"),
            "{new}"
        );
        assert!(
            new.contains(r##"#[kube(printcolumn = r#"{"description":"Where the last backup is.","jsonPath":".status.phase","name":"Phase","type":"string"}"#)]"##),
            "{new}"
        );
        assert!(
            new.contains("pub conditions: Option<Vec<Condition>>,"),
            "{new}"
        );
        assert!(
            new.contains("/// How many days a backup is kept.\n"),
            "{new}"
        );
    }

    #[test]
    fn crds_the_types_cannot_say_are_refused() {
        let two = BACKUP.replace("storage: false", "storage: true");
        let crd = external::parse(&two, "two.yaml").unwrap();
        let err = describe(&crd, "two.yaml").unwrap_err();
        assert!(
            format!("{err:#}").contains("has 2 storage versions (v1alpha1, v1)"),
            "{err:#}"
        );

        let date = BACKUP.replace(
            "in cron syntax.\n                type: string\n",
            "in cron syntax.\n                type: date\n                format: date\n",
        );
        let crd = external::parse(&date, "date.yaml").unwrap();
        let err = rust_types(&crd, "v1", "x", CONDITIONS_SCHEMA).unwrap_err();
        assert!(format!("{err:#}").contains("`type: date`"), "{err:#}");
    }
}
