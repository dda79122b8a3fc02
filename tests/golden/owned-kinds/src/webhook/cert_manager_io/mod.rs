//! The webhooks of the API group `cert-manager.io`: one module per kind, version and
//! kind of hook.

pub mod certificate_v1_validator;

// +kube-scaffold:scaffold:webhook-modules
