//! The manager: checks the cluster, serves health probes, metrics and webhooks, optionally waits to
//! lead, and runs every controller of this project until SIGTERM or Ctrl-C. It exits non-zero
//! when a controller stops on its own or leadership is lost, so that Kubernetes restarts it.

use clap::Parser;
use kube_scaffold_runtime::manager::{Options, init_tracing};

use shop::manager;

/// Runs the shop operator's controllers against the cluster of the current
/// kubeconfig (or the in-cluster config when it runs in a pod).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The manager's flags, as kubebuilder's (`--help` lists them).
    #[command(flatten)]
    manager: Options,
    // TODO(user): flags of your own go here, read below.
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing(args.manager.log_format);
    manager(args.manager).run().await
}
