//! Code and manifests generated from other sources than templates: a kind's Rust types from
//! another project's CRD or an adopted one (kopium, `external`, `adopted`), the fields of Rust
//! types read back with syn (`fields`), the user's Rust edited in place with syn (`edit`), and the manifests `create api` and `create webhook`
//! write before `make manifests` can (CRDs, RBAC rules, webhook configurations: `manifests`).

pub mod adopted;
pub mod chart;
pub mod edit;
pub mod external;
pub mod fields;
pub mod manifests;
