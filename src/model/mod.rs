//! What a project is made of: validated names (`gvk`, `names`), the PROJECT file (`project`),
//! the kinds a controller may own (`owned`), Kubernetes' built-in kinds (`builtin`) and the
//! pinned versions of what generated projects depend on (`versions`).

pub mod api;
pub mod builtin;
pub mod gvk;
pub mod names;
pub mod owned;
pub mod project;
pub mod versions;
