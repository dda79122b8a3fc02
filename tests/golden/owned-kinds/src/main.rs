//! The manager: checks the cluster, serves health probes, metrics and webhooks, optionally waits to
//! lead, and runs every controller of this project until SIGTERM or Ctrl-C. It exits non-zero
//! when a controller stops on its own or leadership is lost, so that Kubernetes restarts it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use tracing_subscriber::EnvFilter;

use shop::api;
use shop::controller;
use shop::health;
use shop::leader::Elector;
use shop::leader::Lost;
use shop::leader::Timing;
use shop::metrics;
use shop::server;
use shop::server::BindAddress;
use shop::webhook;
use shop::webhook::certs::SelfSigned;

/// The default name of the leader-election Lease: `<package>-leader-election`.
const LEADER_ELECTION_ID: &str = concat!(env!("CARGO_PKG_NAME"), "-leader-election");

/// Runs the shop operator's controllers against the cluster of the current
/// kubeconfig (or the in-cluster config when it runs in a pod).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Where /metrics is served: `:8080` is every interface, IPv4 and IPv6; `0` turns it off.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8080")]
    metrics_bind_address: BindAddress,
    /// Where the health probes (/healthz, /readyz) are served.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    health_probe_bind_address: BindAddress,
    /// Where the webhooks are served (HTTPS), if the project has any; `0` turns them off.
    #[arg(long, env = "WEBHOOK_BIND_ADDRESS", default_value = ":9443")]
    webhook_bind_address: BindAddress,
    /// The directory of the webhooks' serving certificate: `tls.crt` and `tls.key`.
    #[arg(
        long,
        env = "WEBHOOK_CERT_PATH",
        default_value = "/tmp/k8s-webhook-server/serving-certs"
    )]
    webhook_cert_path: PathBuf,
    /// Make the webhooks' certificates here, without cert-manager: a CA and a serving
    /// certificate kept in this Secret of the pod's namespace, written to --webhook-cert-path,
    /// the CA injected into the webhook configurations and converted CRDs.
    #[arg(long, env = "WEBHOOK_CERT_SECRET")]
    webhook_cert_secret: Option<String>,
    /// With --webhook-cert-secret: the webhook Service, whose names the certificate carries
    /// (its prefix is the configurations').
    #[arg(long, env = "WEBHOOK_SERVICE", default_value = "webhook-service")]
    webhook_service: String,
    /// Serve the webhooks over HTTP/2 too. Off by default, as in kubebuilder: HTTP/2's rapid
    /// reset and stream cancellation attacks (CVE-2023-44487, CVE-2023-39325) stay out.
    #[arg(long)]
    enable_http2: bool,
    /// Under `make run`: serve the webhooks to the cluster at this URL (https://<host>:<port>,
    /// where its API server reaches this machine), with a certificate made for that host and
    /// configurations that fail open, deleted when the manager stops.
    #[arg(
        long,
        env = "WEBHOOK_LOCAL_URL",
        conflicts_with = "webhook_cert_secret"
    )]
    webhook_local_url: Option<String>,
    /// With --webhook-cert-secret: the namespace of the Secret and the Service.
    #[arg(long, env = "POD_NAMESPACE")]
    webhook_namespace: Option<String>,
    /// Run the controllers only while holding a Lease, so that one replica of several works.
    #[arg(long)]
    leader_elect: bool,
    /// The name of the Lease used for leader election.
    #[arg(long, default_value = LEADER_ELECTION_ID)]
    leader_election_id: String,
    /// The namespace of the Lease [default: the pod's namespace, from POD_NAMESPACE].
    #[arg(long, env = "POD_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// How long a standby waits after the leader's last renewal before it takes the lease.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading (and exits).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How long to wait between two attempts to take or renew the lease.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    leader_elect_retry_period: Duration,
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
    let timing = Timing {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
    };
    timing
        .validate()
        .map_err(|problem| anyhow::anyhow!("invalid --leader-elect-* durations: {problem}"))?;

    let client = kube::Client::try_default().await.context(
        "cannot configure a Kubernetes client from the kubeconfig or the in-cluster config",
    )?;
    check_cluster(&client).await?;

    let ctx = Arc::new(controller::Context::new(client.clone()));
    let shutdown = ctx.shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down: finishing the reconciles that run");
        shutdown.cancel();
        shutdown_signal().await;
        tracing::warn!("second signal: exiting without waiting for the reconciles that run");
        std::process::exit(130);
    });
    server::serve(
        args.health_probe_bind_address,
        health::router(ctx.health.clone()),
    )?;
    server::serve(
        args.metrics_bind_address,
        metrics::router(ctx.metrics.clone()),
    )?;
    // Every replica answers webhooks, leader or not.
    let (hooks, conversions) = (webhook::hooks(), webhook::conversion::conversions());
    let serves_webhooks = args.webhook_bind_address != BindAddress::Disabled
        && !(hooks.is_empty() && conversions.is_empty());
    let secret = args.webhook_cert_secret.as_deref();
    if let Some(secret) = secret.filter(|_| serves_webhooks) {
        let namespace = args
            .webhook_namespace
            .as_deref()
            .context("--webhook-cert-secret needs the pod's namespace: set POD_NAMESPACE or --webhook-namespace")?;
        let service = &args.webhook_service;
        let certs = SelfSigned::for_project(secret, namespace, service, &hooks, &conversions);
        certs
            .provide(&client, &args.webhook_cert_path)
            .await
            .context("cannot provide the webhook certificate (--webhook-cert-secret)")?;
        let dir = args.webhook_cert_path.clone();
        tokio::spawn(certs.keep(client.clone(), dir, ctx.shutdown.clone()));
    }
    let mut local = None;
    let url = args.webhook_local_url.as_deref();
    if let Some(url) = url.filter(|_| serves_webhooks) {
        let dir = &args.webhook_cert_path;
        let fail_open = webhook::local::FailurePolicy::Ignore;
        let registered =
            webhook::local::register(&client, url, &hooks, &conversions, dir, fail_open).await?;
        local = Some(registered);
        tracing::info!(%url, "local webhooks registered; they are deleted when the manager stops");
    }
    let converting = serves_webhooks && !conversions.is_empty();
    webhook::serve(
        args.webhook_bind_address,
        &args.webhook_cert_path,
        args.enable_http2,
        hooks,
        conversions,
        ctx.shutdown.clone(),
    )?;
    if converting {
        ctx.health.serving_conversions();
    }

    let mut elector = None;
    if args.leader_elect {
        let namespace = args.leader_election_namespace.as_deref().context(
            "--leader-elect needs the Lease's namespace: set POD_NAMESPACE or --leader-election-namespace",
        )?;
        let identity = std::env::var("POD_NAME").unwrap_or_else(|_| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
            format!("{host}-{}", std::process::id())
        });
        let id = &args.leader_election_id;
        let mut candidate = Elector::new(client, namespace, id, &identity, timing);
        ctx.metrics.set_leading(id, false);
        ctx.health.standby(timing.lease_duration);
        tokio::select! {
            () = candidate.acquire(&ctx.health) => ctx.metrics.set_leading(id, true),
            () = ctx.shutdown.cancelled() => {
                tracing::info!("stopped before becoming the leader");
                if let Some(local) = local {
                    local.unregister().await;
                }
                return Ok(());
            }
        }
        elector = Some(candidate);
    }

    tracing::info!("starting controllers; press Ctrl-C to stop");
    let outcome = tokio::select! {
        outcome = controller::run(ctx.clone()) => outcome,
        lost = keep(&mut elector) => {
            ctx.metrics.set_leading(&args.leader_election_id, false);
            ctx.health.fail(lost.to_string());
            anyhow::bail!("{lost}: stopping, so that only one replica reconciles");
        }
    };
    if let Some(elector) = &mut elector {
        elector.release().await;
    }
    if let Some(local) = local {
        local.unregister().await;
    }
    outcome
}

/// Resolves once this process stops leading; never without leader election.
async fn keep(elector: &mut Option<Elector>) -> Lost {
    match elector {
        Some(elector) => elector.keep().await,
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

fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

/// Fails fast, with the fix in the message, when the API server cannot be reached or a CRD
/// this project's controllers watch is not installed (a controller would wait for it for ever,
/// never ready), instead of retrying silently.
async fn check_cluster(client: &kube::Client) -> anyhow::Result<()> {
    let version = client
        .apiserver_version()
        .await
        .context("cannot reach the Kubernetes API server: check your kubeconfig and cluster")?;
    tracing::info!(version = %version.git_version, "connected to the API server");
    let ours = api::resources()
        .into_iter()
        .map(|r| (r, "run `make install`"));
    let theirs = api::external_resources().into_iter().map(|r| {
        let fix = "install the project that defines it first (its CRDs come with it)";
        (r, fix)
    });
    for (resource, fix) in ours.chain(theirs) {
        let installed = match client.list_api_group_resources(&resource.api_version).await {
            Ok(list) => list.resources.iter().any(|r| r.name == resource.plural),
            Err(kube::Error::Api(status)) if status.code == 404 => false,
            Err(err) => return Err(err).context("cannot list the API server's resources"),
        };
        anyhow::ensure!(
            installed,
            "the CRD {}.{} ({}) is not installed: {fix}",
            resource.plural,
            resource.group,
            resource.api_version
        );
    }
    Ok(())
}
