// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The manager: checks the cluster, serves health probes and metrics, optionally waits to
//! lead, and runs every controller of this project until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use tracing_subscriber::EnvFilter;

use guestbook::leader::{self, Leadership};
use guestbook::{api, controller, health, metrics};

/// Runs the guestbook operator's controllers against the cluster of the current
/// kubeconfig (or the in-cluster config when it runs in a pod).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The address the metrics endpoint (/metrics) binds to.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = "0.0.0.0:8080")]
    metrics_bind_address: SocketAddr,
    /// The address the health probes (/healthz, /readyz) bind to.
    #[arg(
        long,
        env = "HEALTH_PROBE_BIND_ADDRESS",
        default_value = "0.0.0.0:8081"
    )]
    health_probe_bind_address: SocketAddr,
    /// Run the controllers only while holding a Lease, so that one replica of several works.
    #[arg(long)]
    leader_elect: bool,
    /// The name of the Lease used for leader election.
    #[arg(long, default_value = "guestbook-leader-election")]
    leader_election_id: String,
    /// The namespace of the Lease [default: the pod's namespace, from POD_NAMESPACE].
    #[arg(long, env = "POD_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// How log lines are written; RUST_LOG filters them (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing(args.log_format);

    let client = kube::Client::try_default().await.context(
        "cannot configure a Kubernetes client from the kubeconfig or the in-cluster config",
    )?;
    check_cluster(&client).await?;

    let ctx = Arc::new(controller::Context::new(client.clone()));
    serve(
        args.health_probe_bind_address,
        health::router(ctx.readiness.clone()),
    )
    .await?;
    serve(
        args.metrics_bind_address,
        metrics::router(ctx.metrics.clone()),
    )
    .await?;

    let mut leadership = match args.leader_elect {
        true => {
            let namespace = args.leader_election_namespace.as_deref().context(
                "--leader-elect needs the Lease's namespace: set POD_NAMESPACE or --leader-election-namespace",
            )?;
            let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
                let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
                format!("{host}-{}", std::process::id())
            });
            let id = &args.leader_election_id;
            ctx.readiness.standby();
            tokio::select! {
                leadership = leader::acquire(client, namespace, id, &identity) => Some(leadership?),
                () = shutdown_signal() => {
                    tracing::info!("stopped before becoming the leader");
                    return Ok(());
                }
            }
        }
        false => None,
    };

    tracing::info!("starting controllers; press Ctrl-C to stop");
    tokio::select! {
        () = controller::run(ctx) => tracing::info!("all controllers stopped"),
        () = lost(&mut leadership) => {
            anyhow::bail!("lost the leader lease: stopping so that only the new leader reconciles");
        }
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    Ok(())
}

/// Resolves when this process loses the lease; never without leader election.
async fn lost(leadership: &mut Option<Leadership>) {
    match leadership {
        Some(leadership) => leadership.lost().await,
        None => std::future::pending().await,
    }
}

/// Resolves on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Serves `router` on `addr` in the background; fails at once if the address is taken.
async fn serve(addr: SocketAddr, router: axum::Router) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(())
}

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

/// Fails fast, with the fix in the message, when the API server cannot be reached or a CRD of
/// this project is not installed, instead of retrying silently.
async fn check_cluster(client: &kube::Client) -> anyhow::Result<()> {
    let version = client
        .apiserver_version()
        .await
        .context("cannot reach the Kubernetes API server: check your kubeconfig and cluster")?;
    tracing::info!(version = %version.git_version, "connected to the API server");
    for resource in api::resources() {
        let installed = match client.list_api_group_resources(&resource.api_version).await {
            Ok(list) => list.resources.iter().any(|r| r.name == resource.plural),
            Err(kube::Error::Api(status)) if status.code == 404 => false,
            Err(err) => return Err(err).context("cannot list the API server's resources"),
        };
        anyhow::ensure!(
            installed,
            "the CRD {}.{} ({}) is not installed: run `make install`",
            resource.plural,
            resource.group,
            resource.api_version
        );
    }
    Ok(())
}
