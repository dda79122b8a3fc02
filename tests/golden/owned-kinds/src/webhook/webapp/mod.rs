//! The webhooks of the API group `webapp`: one module per kind, version and
//! kind of hook.

pub mod guestbook_v1_defaulter;

pub mod guestbook_v1_validator;

// +kube-scaffold:scaffold:webhook-modules
