//! Version `v2` of the API group `webapp.mock.com`.

/// The API group of the kinds in this module.
pub const GROUP: &str = "webapp.mock.com";
/// The API version of the kinds in this module.
pub const VERSION: &str = "v2";

mod guestbook;
pub use guestbook::*;
// +kube-scaffold:scaffold:api-kinds
