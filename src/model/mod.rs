//! What a project is made of: validated names (`gvk`, `names`), the PROJECT file, and the
//! manifests `create api` writes before `make manifests` can.

pub mod adopted;
pub mod core;
mod core_types;
pub mod external;
pub mod fields;
pub mod gvk;
pub mod manifests;
pub mod names;
pub mod owned;
pub mod project;
pub mod versions;
