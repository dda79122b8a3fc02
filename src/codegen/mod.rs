//! Code and manifests generated from other sources than templates:
//! - a kind's Rust types from another project's CRD or an adopted one (kopium: `external`,
//!   `adopted`; run once per command by `kind_types`);
//! - the fields of Rust types read back with syn (`fields`), and the user's Rust edited in
//!   place with syn (`edit`);
//! - the manifests `create api` and `create webhook` write before `make manifests` can (CRDs,
//!   RBAC rules, webhook configurations: `manifests`), and the helm chart (`chart`);
//! - the runtime crate's copy in a project, without its tests (`vendor`).

pub mod adopted;
pub mod chart;
pub mod edit;
pub mod external;
pub mod fields;
pub mod kind_types;
pub mod manifests;
pub mod vendor;
