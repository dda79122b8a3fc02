//! Version `v1alpha1` of the API group `example.com`.

/// The API group of the kinds in this module.
pub const GROUP: &str = "example.com";
/// The API version of the kinds in this module.
pub const VERSION: &str = "v1alpha1";

mod memcached;
pub use memcached::*;
// +kube-scaffold:scaffold:api-kinds
