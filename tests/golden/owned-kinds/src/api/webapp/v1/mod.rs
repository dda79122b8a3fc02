//! Version `v1` of the API group `webapp.mock.com`.

/// The API group of the kinds in this module.
pub const GROUP: &str = "webapp.mock.com";
/// The API version of the kinds in this module.
pub const VERSION: &str = "v1";

mod guestbook;
pub use guestbook::*;
mod site;
pub use site::*;
pub mod guestbook_conversion;

// +kube-scaffold:scaffold:api-kinds
