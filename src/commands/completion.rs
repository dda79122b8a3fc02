//! `kube-scaffold completion <shell>`: prints a completion script on stdout.

use clap::CommandFactory;

use crate::cli::Cli;

pub fn run(shell: clap_complete::Shell) -> anyhow::Result<()> {
    clap_complete::generate(
        shell,
        &mut Cli::command(),
        "kube-scaffold",
        &mut std::io::stdout(),
    );
    Ok(())
}
