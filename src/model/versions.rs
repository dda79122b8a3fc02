//! The versions a generated project is pinned to: the dependency set checked to compile together.

use serde::Serialize;

/// Versions written into the generated Cargo.toml and Dockerfile.
#[derive(Clone, Debug, Serialize)]
pub struct Versions {
    pub kube: &'static str,
    pub k8s_openapi: &'static str,
    /// The k8s-openapi feature: the oldest Kubernetes the operator supports.
    pub kubernetes_feature: &'static str,
    pub schemars: &'static str,
    pub serde_saphyr: &'static str,
    pub axum: &'static str,
    pub prometheus_client: &'static str,
    pub rust: &'static str,
    /// kube-scaffold-runtime, released with this version of kube-scaffold.
    pub runtime: &'static str,
}

/// The versions of this release of kube-scaffold.
pub const VERSIONS: Versions = Versions {
    kube: "5.0.0",
    k8s_openapi: "0.29.0",
    kubernetes_feature: "v1_33",
    schemars: "1.2",
    serde_saphyr: "2",
    axum: "0.8",
    prometheus_client: "0.25",
    rust: "1.89",
    runtime: env!("CARGO_PKG_VERSION"),
};
