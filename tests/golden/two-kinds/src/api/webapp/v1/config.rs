//! The `Config` kind.

/// ConfigSpec defines the desired state of Config.
///
/// Edit this struct to add your fields, then run `make manifests` to regenerate the CRD.
#[derive(
    kube::CustomResource,
    serde::Deserialize,
    serde::Serialize,
    Clone,
    Debug,
    Default,
    PartialEq,
    schemars::JsonSchema,
)]
#[kube(
    group = "webapp.mock.com",
    version = "v1",
    kind = "Config",
    plural = "configs",
    status = "ConfigStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Available\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSpec {
    /// An example field. Replace it with your own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foo: Option<String>,
}

/// ConfigStatus defines the observed state of Config.
#[derive(
    serde::Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ConfigStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The latest observations of the object's state (`Available`, `Progressing`, `Degraded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "kube_scaffold_runtime::conditions::schema")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}
