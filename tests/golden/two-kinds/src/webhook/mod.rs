//! Webhooks: `kube-scaffold create webhook` adds a hook per kind and kind of hook, each in its
//! module, and the conversions between the versions of a kind (`conversion`). The manager
//! serves them over HTTPS; `make manifests` writes their configurations to
//! `config/webhook/manifests.yaml`. The server, certificates and reviews are
//! kube-scaffold-runtime's (its `webhooks` feature).

use kube_scaffold_runtime::webhook::Hook;

pub mod conversion;

pub mod config_v1_validator;

pub mod pod_v1_defaulter;

// +kube-scaffold:scaffold:webhook-modules

/// Every webhook of the project: what the server answers, and what `make manifests` registers.
pub fn hooks() -> Vec<Hook> {
    vec![
        config_v1_validator::hook(),
        pod_v1_defaulter::hook(),
        // +kube-scaffold:scaffold:webhooks
    ]
}
