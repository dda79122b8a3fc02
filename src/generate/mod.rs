//! Code and manifests generated from other sources than templates: a kind's Rust types from
//! another project's CRD or an adopted one (kopium, `external`, `adopted`), the fields of Rust
//! types read back with syn (`fields`), and the manifests `create api` and `create webhook`
//! write before `make manifests` can (CRDs, RBAC rules, webhook configurations: `manifests`).

pub mod adopted;
pub mod external;
pub mod fields;
pub mod manifests;
