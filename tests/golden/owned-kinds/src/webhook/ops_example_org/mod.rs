//! The webhooks of the API group `ops.example.org`: one module per kind, version and
//! kind of hook.

pub mod backup_v1_defaulter;

// +kube-scaffold:scaffold:webhook-modules
