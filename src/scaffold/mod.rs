//! The scaffold engine. It knows nothing of Kubernetes: a command hands it a `Plan` (which
//! templates go where, which fragments go before which markers) and a context; it renders
//! everything in memory, checks for conflicts, and only then writes.

pub mod apply;
pub mod marker;
pub mod merge;
pub mod plan;
pub mod render;
pub mod rustfmt;
pub mod templates;
pub mod tree;
