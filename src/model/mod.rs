//! What a project is made of: validated names (`gvk`, `names`) and the PROJECT file.

pub mod gvk;
pub mod names;
pub mod project;
pub mod versions;
