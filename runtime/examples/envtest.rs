//! Starts envtest's control plane (etcd and kube-apiserver from `KUBEBUILDER_ASSETS`), prints
//! the path of its administrator's kubeconfig, and keeps it up until SIGINT or SIGTERM; then
//! stops it and removes its files. For scripts that need a real API server for a while, such as
//! kube-scaffold's `scripts/measure-reconcile`:
//!
//! ```sh
//! cargo run --release -p kube-scaffold-runtime --features envtest --example envtest
//! ```
//!
//! Its arguments go to kube-apiserver, e.g. `--feature-gates=ShardedListAndWatch=true`.
//!
//! (No `[[example]]` with `required-features` in Cargo.toml: generated projects hold a copy of
//! that manifest without this directory.)

#[cfg(feature = "envtest")]
#[tokio::main]
async fn main() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};

    let flags: Vec<String> = std::env::args().skip(1).collect();
    let environment = kube_scaffold_runtime::envtest::Environment::start_with(&flags).await?;
    println!("{}", environment.dir.join("kubeconfig").display());
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    // Dropping the environment stops etcd and kube-apiserver.
    drop(environment);
    Ok(())
}

#[cfg(not(feature = "envtest"))]
fn main() {
    eprintln!("error: this example was built without the `envtest` feature");
    eprintln!("help: cargo run -p kube-scaffold-runtime --features envtest --example envtest");
    std::process::exit(2);
}
