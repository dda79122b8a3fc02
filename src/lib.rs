//! kube-scaffold: kubebuilder's workflow for Kubernetes operators written in Rust on kube-rs.
//!
//! `cli` parses, `commands` turn arguments into a plan of files, `model` holds the validated
//! names and the PROJECT file, `plugins` say what gets generated from templates, `codegen`
//! what from CRDs and Rust sources (kopium, syn, manifests), `scaffold` renders and writes
//! plans, `ui` prints.

use std::process::ExitCode;

pub mod cli;
pub mod codegen;
pub mod commands;
pub mod error;
pub mod layouts;
pub mod model;
pub mod plugins;
pub mod prompt;
pub mod scaffold;
pub mod ui;

/// Runs one command and returns the process exit code: 0 on success, 1 on failure, 130 after
/// Ctrl-C at a prompt. (clap itself exits with 2 on a usage error.)
pub fn run(cli: cli::Cli) -> ExitCode {
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if err.is::<prompt::Interrupted>() => {
            ExitCode::from(prompt::INTERRUPTED_EXIT_CODE)
        }
        Err(err) => {
            ui::error(&err);
            ExitCode::FAILURE
        }
    }
}
