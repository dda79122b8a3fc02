//! kube-scaffold's tests through the real binary: one module per concern.

mod alpha_generate;
mod autoupdate;
mod combinations;
mod create_api;
mod errors;
#[path = "../shared/generated_build.rs"]
mod generated_build;
mod generated_project;
mod golden;
mod grafana;
mod helm;
mod init;
mod properties;
mod published;
mod support;
mod upgrade;
