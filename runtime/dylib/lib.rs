//! kube-scaffold-runtime and the crates it depends on, as one shared library (see Cargo.toml).

pub use kube_scaffold_runtime;
