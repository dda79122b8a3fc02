//! The `Memcached` kind.

/// MemcachedSpec defines the desired state of Memcached.
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
    group = "example.com",
    version = "v1alpha1",
    kind = "Memcached",
    plural = "memcacheds",
    namespaced,
    status = "MemcachedStatus",
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
pub struct MemcachedSpec {
    /// How many pods run: the replicas of the Deployment the controller keeps (1 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3))]
    pub size: Option<i32>,
    /// The port the container listens on (11211 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub container_port: Option<i32>,
}

/// MemcachedStatus defines the observed state of Memcached.
#[derive(
    serde::Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct MemcachedStatus {
    /// The `metadata.generation` this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The latest observations of the object's state (`Available`, `Progressing`, `Degraded`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "kube_scaffold_runtime::conditions::schema")]
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}
