//! The webhooks of the API group `ops.example.org`: one module per kind, version and
//! kind of hook.

// What `crate::webhook` offers its hooks (`Hook`, `Validator`, `Verdict`...), in reach of each
// hook's module here as `super::`.
use super::*;

pub mod backup_v1_defaulter;

// +kube-scaffold:scaffold:webhook-modules
