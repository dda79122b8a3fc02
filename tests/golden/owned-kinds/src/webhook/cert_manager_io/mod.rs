//! The webhooks of the API group `cert-manager.io`: one module per kind, version and
//! kind of hook.

// What `crate::webhook` offers its hooks (`Hook`, `Validator`, `Verdict`...), in reach of each
// hook's module here as `super::`.
use super::*;

pub mod certificate_v1_validator;

// +kube-scaffold:scaffold:webhook-modules
