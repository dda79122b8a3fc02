//! Version `v1` of the API group `ops.example.org`.

/// The API group of the kinds in this module.
pub const GROUP: &str = "ops.example.org";
/// The API version of the kinds in this module.
pub const VERSION: &str = "v1";

#[rustfmt::skip]
mod backup;
pub use backup::*;
// +kube-scaffold:scaffold:api-kinds
