//! The `kube-scaffold` binary: parse the command line, run it, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kube_scaffold::cli::Cli::parse();
    kube_scaffold::run(cli)
}
