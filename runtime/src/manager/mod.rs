//! The manager: checks the cluster, serves health probes, metrics and webhooks, optionally waits
//! to lead, and runs every controller of the project until SIGTERM or Ctrl-C. It fails when a
//! controller stops on its own or leadership is lost, so that Kubernetes restarts the pod.
//!
//! A project wires it in its `lib.rs`, as kubebuilder's `main.go` wires controller-runtime's
//! manager, and its `main.rs` runs it:
//!
//! ```no_run
//! # use kube_scaffold_runtime::manager::{Manager, Options};
//! # mod api { pub fn resources() -> Vec<kube::core::ApiResource> { Vec::new() }
//! #     pub fn external_resources() -> Vec<kube::core::ApiResource> { Vec::new() } }
//! # mod webhook { pub fn hooks() -> Vec<kube_scaffold_runtime::webhook::Hook> { Vec::new() }
//! #     pub mod conversion { pub fn conversions() -> Vec<kube_scaffold_runtime::webhook::conversion::Conversion> { Vec::new() } } }
//! # mod controller { pub const CONTROLLERS: &[kube_scaffold_runtime::controller::Start] = &[]; }
//! # async fn run(options: Options) -> anyhow::Result<()> {
//! Manager::new(env!("CARGO_PKG_NAME"), options)
//!     .resources(api::resources(), api::external_resources())
//!     .webhooks(webhook::hooks(), webhook::conversion::conversions())
//!     .controllers(controller::CONTROLLERS)
//!     .run()
//!     .await
//! # }
//! ```

#[cfg(feature = "sharding")]
mod replica;

#[cfg(feature = "leader-election")]
use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(feature = "leader-election")]
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, ValueEnum};
use kube::Client;
use kube::core::ApiResource;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::controller::{self, Context, Start};
use crate::server::{self, BindAddress};
use crate::{health, metrics};

#[cfg(feature = "leader-election")]
use crate::leader::{Elector, Lost, Timing};
#[cfg(feature = "webhooks")]
use crate::webhook::{self, certs::SelfSigned, local};
use crate::webhook::{Hook, conversion::Conversion};

/// The manager's flags, as kubebuilder's `main.go` names them. A project's `main.rs` flattens
/// them into its own (`#[command(flatten)]`) beside any flags of its own. The webhook flags
/// are accepted without the `webhooks` feature too (`make run` and config/manager pass them);
/// a project without webhooks serves none.
#[derive(Args, Clone, Debug)]
pub struct Options {
    /// Where /metrics is served: `:8443` is every interface, IPv4 and IPv6; `0` (the default,
    /// as kubebuilder's) turns it off. config/manager passes `:8443`.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = "0")]
    pub metrics_bind_address: BindAddress,
    /// Serve /metrics over HTTPS to the clients the API server authenticates and authorizes
    /// (`get` on /metrics: the `metrics-reader` ClusterRole); `--metrics-secure=false` serves
    /// plain HTTP to anyone who reaches it.
    #[arg(
        long,
        env = "METRICS_SECURE",
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub metrics_secure: bool,
    /// The directory of /metrics' certificate (`tls.crt`, `tls.key`), read again when they
    /// change; without it, one made at start, for scrapers that do not verify it.
    #[arg(long, env = "METRICS_CERT_PATH")]
    pub metrics_cert_path: Option<PathBuf>,
    /// Where the health probes (/healthz, /readyz) are served.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    pub health_probe_bind_address: BindAddress,
    /// Where the webhooks are served (HTTPS), if the project has any; `0` turns them off.
    #[arg(long, env = "WEBHOOK_BIND_ADDRESS", default_value = ":9443")]
    pub webhook_bind_address: BindAddress,
    /// The directory of the webhooks' serving certificate: `tls.crt` and `tls.key`.
    #[arg(
        long,
        env = "WEBHOOK_CERT_PATH",
        default_value = "/tmp/k8s-webhook-server/serving-certs"
    )]
    pub webhook_cert_path: PathBuf,
    /// Make the webhooks' certificates here, without cert-manager: a CA and a serving
    /// certificate kept in this Secret of the pod's namespace, written to --webhook-cert-path,
    /// the CA injected into the webhook configurations and converted CRDs.
    #[arg(long, env = "WEBHOOK_CERT_SECRET")]
    pub webhook_cert_secret: Option<String>,
    /// With --webhook-cert-secret: the webhook Service, whose names the certificate carries
    /// (its prefix is the configurations').
    #[arg(long, env = "WEBHOOK_SERVICE", default_value = "webhook-service")]
    pub webhook_service: String,
    /// Serve the webhooks and the secure metrics over HTTP/2 too. Off by default, as in
    /// kubebuilder: HTTP/2's rapid reset and stream cancellation attacks (CVE-2023-44487,
    /// CVE-2023-39325) stay out.
    #[arg(long)]
    pub enable_http2: bool,
    /// Under `make run`: serve the webhooks to the cluster at this URL (https://<host>:<port>,
    /// where its API server reaches this machine), with a certificate made for that host and
    /// configurations that fail open, deleted when the manager stops.
    #[arg(
        long,
        env = "WEBHOOK_LOCAL_URL",
        conflicts_with = "webhook_cert_secret"
    )]
    pub webhook_local_url: Option<String>,
    /// With --webhook-cert-secret: the namespace of the Secret and the Service.
    #[arg(long, env = "POD_NAMESPACE")]
    pub webhook_namespace: Option<String>,
    /// The one namespace the controllers watch (kubebuilder's `WATCH_NAMESPACE`); all
    /// namespaces when unset. A project made with `edit --namespaced` sets it to the manager's
    /// own namespace, where its Role grants what the controllers use.
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub watch_namespace: Option<String>,
    /// Run the controllers only while holding a Lease, so that one replica of several works.
    #[cfg(feature = "leader-election")]
    #[arg(long)]
    pub leader_elect: bool,
    /// The name of the Lease used for leader election [default: <project>-leader-election].
    #[cfg(feature = "leader-election")]
    #[arg(long)]
    pub leader_election_id: Option<String>,
    /// The namespace of the Lease [default: the pod's namespace, from POD_NAMESPACE].
    #[cfg(feature = "leader-election")]
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// How long a standby waits after the leader's last renewal before it takes the lease.
    #[cfg(feature = "leader-election")]
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading (and exits).
    #[cfg(feature = "leader-election")]
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How long to wait between two attempts to take or renew the lease.
    #[cfg(feature = "leader-election")]
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Every replica reconciles its own share of the objects (a shard), instead of the leader
    /// reconciling them all: each holds a Lease of its own, and the holder of the leader
    /// lease assigns the objects (docs/scaling.md). Needs the `sharding` feature.
    #[arg(
        long,
        env = "SHARDING",
        default_value_t = false,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub sharding: bool,
    /// With --sharding: how the replicas divide the objects; `server` needs Kubernetes 1.36+
    /// with the feature gate ShardedListAndWatch (docs/scaling.md).
    #[cfg(feature = "sharding")]
    #[arg(long, env = "SHARDING_MODE", value_enum, default_value_t)]
    pub sharding_mode: crate::sharding::Mode,
    /// With --sharding: this replica's shard, the pod's name [default: the host's name and a
    /// random suffix].
    #[arg(long, env = "POD_NAME")]
    pub shard_name: Option<String>,
    /// How log lines are written; RUST_LOG filters them (default: info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl Options {
    /// The options of a command line of the manager's flags alone (`args[0]` is its name).
    fn try_parse_from<const N: usize>(args: [&str; N]) -> Result<Self, clap::Error> {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            options: Options,
        }
        Only::try_parse_from(args).map(|only| only.options)
    }
}

impl Default for Options {
    /// Every flag at its default (and the environment's variables, as on the command line).
    fn default() -> Self {
        Self::try_parse_from(["manager"]).expect("the defaults parse")
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Sets up logging: lines of text or JSON on standard output, filtered by `RUST_LOG`.
pub fn init_tracing(format: LogFormat) {
    let (filter, invalid) = log_filter(std::env::var("RUST_LOG").ok().as_deref());
    let logs = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => logs.with(tracing_subscriber::fmt::layer()).init(),
        LogFormat::Json => logs.with(tracing_subscriber::fmt::layer().json()).init(),
    }
    if let Some(error) = invalid {
        tracing::warn!(%error, "RUST_LOG ignored: write `info,my_operator=debug` (a level, or target=level, comma-separated)");
    }
}

/// The filter `RUST_LOG` names (`info` when unset or invalid, with the parse error then):
/// a default level and `target=level` directives, comma-separated. Spans' fields are not
/// filtered on (tracing-subscriber's `EnvFilter` would, for about 0.2 MiB more binary).
fn log_filter(rust_log: Option<&str>) -> (Targets, Option<String>) {
    let info = || Targets::new().with_default(tracing::Level::INFO);
    match rust_log.map(str::parse::<Targets>) {
        None => (info(), None),
        Some(Ok(targets)) => (targets, None),
        Some(Err(error)) => (info(), Some(error.to_string())),
    }
}

/// The operator's name, as the first [`Manager::new`] of the process set it (its package's
/// name): what its children's `managed-by` label says. `operator` before that.
pub fn name() -> &'static str {
    crate::children::managed_by()
}

/// This process's identity as a leader-election candidate: its host name (the pod's) and a
/// random suffix, as client-go's; a restarted container is a new candidate, and does not take
/// back at once the lease its previous run held.
#[cfg(feature = "leader-election")]
fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
    let random = RandomState::new().hash_one(std::process::id());
    format!("{host}_{random:016x}")
}

/// This replica's shard name: `--shard-name` (the pod's name), else the host's name and a
/// random suffix, lowercase, as a label value may hold it.
#[cfg(feature = "sharding")]
fn shard_name(given: Option<&str>) -> String {
    if let Some(name) = given.filter(|name| !name.is_empty()) {
        return name.to_string();
    }
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
    let host: String = host
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(46)
        .collect();
    let random = RandomState::new().hash_one(std::process::id());
    format!("{}-{random:016x}", host.trim_matches('-'))
}

/// What a project's manager runs: its kinds, controllers and webhooks, under its flags, and the
/// project's own state `S` that every reconcile gets (none by default).
pub struct Manager<S = ()> {
    /// What its Events, Leases, certificates and local webhook configurations are named after.
    name: String,
    pub(crate) options: Options,
    resources: Vec<ApiResource>,
    external: Vec<ApiResource>,
    controllers: Vec<Start<S>>,
    hooks: Vec<Hook>,
    conversions: Vec<Conversion>,
    metrics: Vec<metrics::Register>,
    state: S,
    #[cfg(feature = "webhooks")]
    local_failure: local::FailurePolicy,
    /// How long webhooks served through a Service are still answered after the signal.
    #[cfg(feature = "webhooks")]
    drain: std::time::Duration,
}

/// How long a manager that serves webhooks through a Service keeps answering them after
/// SIGTERM, at least: the API server goes on calling a terminating pod until its endpoint is
/// removed, which takes a few seconds. The manager returns after both this and its
/// controllers' end (at most `controller::SHUTDOWN_GRACE`), within the pod's
/// `terminationGracePeriodSeconds` (10).
#[cfg(feature = "webhooks")]
pub const WEBHOOK_DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

impl Manager {
    /// A manager named `name` (the package's: `env!("CARGO_PKG_NAME")`) with `options`.
    pub fn new(name: &str, options: Options) -> Self {
        Manager::with_state(name, options, ())
    }
}

impl<S: Send + Sync + 'static> Manager<S> {
    /// A manager named `name` with `options`, whose reconciles get `state`, the project's own
    /// (a client of an outside service, a cache, settings read from its flags), as
    /// `ctx.state`: its controllers take `Arc<Context<S>>`, and the compiler checks that each
    /// does. One value for every reconcile: `S` need not be `Clone`.
    pub fn with_state(name: &str, options: Options, state: S) -> Self {
        crate::children::set_managed_by(name);
        Self {
            name: name.to_string(),
            options,
            resources: Vec::new(),
            external: Vec::new(),
            controllers: Vec::new(),
            hooks: Vec::new(),
            conversions: Vec::new(),
            metrics: Vec::new(),
            state,
            #[cfg(feature = "webhooks")]
            local_failure: local::FailurePolicy::Ignore,
            #[cfg(feature = "webhooks")]
            drain: WEBHOOK_DRAIN,
        }
    }

    /// The kinds of the project (`ours`: `make install` installs their CRDs) and those of other
    /// projects its controllers watch (`theirs`); the manager checks at start that the API
    /// server serves each, and says how to fix it if not.
    pub fn resources(mut self, ours: Vec<ApiResource>, theirs: Vec<ApiResource>) -> Self {
        self.resources = ours;
        self.external = theirs;
        self
    }

    /// The controllers to run, each its module's `start`.
    pub fn controllers(mut self, starts: &[Start<S>]) -> Self {
        self.controllers = starts.to_vec();
        self
    }

    /// The webhooks to serve, and the conversions between the versions of the project's kinds.
    /// Serving them needs the feature `webhooks`: without it, `run` refuses to start.
    pub fn webhooks(mut self, hooks: Vec<Hook>, conversions: Vec<Conversion>) -> Self {
        self.hooks = hooks;
        self.conversions = conversions;
        self
    }

    /// The project's own metrics: `register` adds them to the registry /metrics serves, beside
    /// controller-runtime's (a counter `widgets` is served as `widgets_total`, as
    /// prometheus-client names counters). A clone of a metric shares its value: register a
    /// clone from a closure and keep the metric in the project's state (`with_state`), or
    /// keep it in a `static` (`LazyLock`) and register it from a function.
    pub fn metrics(
        mut self,
        register: impl Fn(&mut metrics::prometheus_client::registry::Registry) + Send + Sync + 'static,
    ) -> Self {
        self.metrics.push(Box::new(register));
        self
    }

    /// What the API server does when a webhook registered at `--webhook-local-url` does not
    /// answer: let the request through (`make run`, the default) or refuse it (a test).
    #[cfg(feature = "webhooks")]
    pub fn local_failure_policy(mut self, policy: webhook::FailurePolicy) -> Self {
        self.local_failure = policy;
        self
    }

    /// Runs until SIGTERM or Ctrl-C (a second one exits at once), against the cluster of the
    /// current kubeconfig, or the in-cluster config in a pod.
    pub async fn run(self) -> anyhow::Result<()> {
        let client = Client::try_default().await.context(
            "cannot configure a Kubernetes client from the kubeconfig or the in-cluster config",
        )?;
        let shutdown = CancellationToken::new();
        let signalled = shutdown.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            tracing::info!("shutting down: finishing the reconciles that run");
            signalled.cancel();
            shutdown_signal().await;
            tracing::warn!("second signal: exiting without waiting for the reconciles that run");
            std::process::exit(130);
        });
        self.run_with(client, shutdown).await
    }

    /// Runs against `client` until `shutdown` is cancelled: what `run` does after reading the
    /// kubeconfig and installing the signal handlers, for tests.
    pub async fn run_with(self, client: Client, shutdown: CancellationToken) -> anyhow::Result<()> {
        let (name, options) = (self.name.as_str(), self.options);
        #[cfg(feature = "leader-election")]
        let timing = Timing {
            lease_duration: options.leader_elect_lease_duration,
            renew_deadline: options.leader_elect_renew_deadline,
            retry_period: options.leader_elect_retry_period,
        };
        #[cfg(feature = "leader-election")]
        timing
            .validate()
            .map_err(|problem| anyhow::anyhow!("invalid --leader-elect-* durations: {problem}"))?;
        #[cfg(feature = "leader-election")]
        let lease = options
            .leader_election_id
            .clone()
            .unwrap_or_else(|| format!("{name}-leader-election"));
        #[cfg(not(feature = "webhooks"))]
        anyhow::ensure!(
            self.hooks.is_empty() && self.conversions.is_empty(),
            "the project has webhooks, but kube-scaffold-runtime was built without its `webhooks` feature: add it to the features of that dependency in Cargo.toml"
        );
        #[cfg(not(feature = "sharding"))]
        anyhow::ensure!(
            !options.sharding,
            "--sharding needs kube-scaffold-runtime's `sharding` feature: run `kube-scaffold edit --sharding`, or add the feature to that dependency in Cargo.toml"
        );
        #[cfg(feature = "sharding")]
        let replica = match options.sharding {
            true => {
                let namespace = options.leader_election_namespace.as_deref().context(
                    "--sharding needs the Leases' namespace: set POD_NAMESPACE or --leader-election-namespace",
                )?;
                let shard = shard_name(options.shard_name.as_deref());
                let mode = options.sharding_mode;
                let replica = replica::Replica::new(name, &shard, namespace, &lease, timing, mode)?;
                Some(replica)
            }
            false => None,
        };
        check_cluster(&client, &self.resources, &self.external).await?;

        let mut ctx = Context::named(client.clone(), name).with_state(self.state);
        ctx.metrics = Arc::new(metrics::Metrics::with(&self.metrics));
        ctx.shutdown = shutdown;
        ctx.namespace = options.watch_namespace.clone().filter(|ns| !ns.is_empty());
        #[cfg(feature = "sharding")]
        {
            ctx.shard = replica.as_ref().map(|replica| replica.shard());
        }
        let ctx = Arc::new(ctx);
        server::serve(
            options.health_probe_bind_address,
            health::router(ctx.health.clone()),
        )?;
        // The metrics and the webhooks are served until `run_with` returns (the guard).
        let serving = CancellationToken::new();
        let _serving = serving.clone().drop_guard();
        serve_metrics(&options, &ctx, serving.clone())?;

        // Every replica answers webhooks, leader or not, until `run_with` returns, not only
        // until the signal.
        #[cfg(feature = "webhooks")]
        let (local, drain) = {
            let (hooks, conversions) = (self.hooks, self.conversions);
            let serves = options.webhook_bind_address != BindAddress::Disabled
                && !(hooks.is_empty() && conversions.is_empty());
            let dir = &options.webhook_cert_path;
            if let Some(secret) = options.webhook_cert_secret.as_deref().filter(|_| serves) {
                let namespace = options.webhook_namespace.as_deref().context(
                    "--webhook-cert-secret needs the pod's namespace: set POD_NAMESPACE or --webhook-namespace",
                )?;
                let service = &options.webhook_service;
                let certs =
                    SelfSigned::for_project(name, secret, namespace, service, &hooks, &conversions);
                certs
                    .provide(&client, dir)
                    .await
                    .context("cannot provide the webhook certificate (--webhook-cert-secret)")?;
                tokio::spawn(certs.keep(client.clone(), dir.clone(), ctx.shutdown.clone()));
            }
            let mut local = None;
            if let Some(url) = options.webhook_local_url.as_deref().filter(|_| serves) {
                let failure = self.local_failure;
                let registered =
                    local::register(&client, name, url, &hooks, &conversions, dir, failure).await?;
                local = Some(registered);
                tracing::info!(%url, "local webhooks registered; they are deleted when the manager stops");
            }
            let converting = serves && !conversions.is_empty();
            webhook::serve(
                options.webhook_bind_address,
                dir,
                options.enable_http2,
                (hooks, conversions),
                ctx.metrics.clone(),
                serving.clone(),
            )?;
            if converting {
                ctx.health.serving_conversions();
            }
            // Served through a Service (in a pod): answered for `drain` after the signal.
            // Registered locally (`make run`, tests): the registrations go first, no drain.
            let drain = (serves && local.is_none()).then(|| {
                let (shutdown, drain) = (ctx.shutdown.clone(), self.drain);
                tokio::spawn(async move {
                    shutdown.cancelled().await;
                    tracing::info!(?drain, "answering webhooks while the endpoints are removed");
                    tokio::time::sleep(drain).await;
                })
            });
            (local, drain)
        };

        #[cfg(feature = "sharding")]
        if let Some(replica) = replica {
            let outcome = replica.run(ctx.clone(), &self.controllers).await;
            #[cfg(feature = "webhooks")]
            stop_serving(local, drain, &ctx.shutdown).await;
            return outcome;
        }
        #[cfg(feature = "leader-election")]
        let mut elector = None;
        #[cfg(feature = "leader-election")]
        if options.leader_elect {
            let namespace = options.leader_election_namespace.as_deref().context(
                "--leader-elect needs the Lease's namespace: set POD_NAMESPACE or --leader-election-namespace",
            )?;
            let mut candidate = Elector::new(client, namespace, &lease, &identity(), timing);
            ctx.metrics.set_leading(&lease, false);
            ctx.health.standby(timing.lease_duration);
            tokio::select! {
                () = candidate.acquire(&ctx.health) => ctx.metrics.set_leading(&lease, true),
                () = ctx.shutdown.cancelled() => {
                    tracing::info!("stopped before becoming the leader");
                    #[cfg(feature = "webhooks")]
                    stop_serving(local, drain, &ctx.shutdown).await;
                    return Ok(());
                }
            }
            elector = Some(candidate);
        }

        tracing::info!("starting controllers; press Ctrl-C to stop");
        let controllers =
            controller::supervise(ctx.clone(), &self.controllers, controller::SHUTDOWN_GRACE);
        #[cfg(feature = "leader-election")]
        let outcome = tokio::select! {
            outcome = controllers => outcome,
            lost = keep(&mut elector) => {
                ctx.metrics.set_leading(&lease, false);
                tracing::warn!(%lost, "stopped leading");
                ctx.health.fail(lost.to_string());
                Err(anyhow::anyhow!("{lost}: stopping, so that only one replica reconciles"))
            }
        };
        #[cfg(not(feature = "leader-election"))]
        let outcome = controllers.await;
        // Not leading from here on, before a standby can take the lease: at no moment of a
        // rollout do two pods report that they lead.
        #[cfg(feature = "leader-election")]
        if let Some(elector) = &mut elector {
            ctx.metrics.set_leading(&lease, false);
            elector.release().await;
        }
        #[cfg(feature = "webhooks")]
        stop_serving(local, drain, &ctx.shutdown).await;
        outcome
    }
}

/// Before the webhook server stops: the local registrations deleted, or the drain after a
/// signal waited out.
#[cfg(feature = "webhooks")]
async fn stop_serving(
    local: Option<local::Registered>,
    drain: Option<tokio::task::JoinHandle<()>>,
    shutdown: &CancellationToken,
) {
    if let Some(local) = local {
        local.unregister().await;
    }
    if let Some(drain) = drain {
        match shutdown.is_cancelled() {
            true => drop(drain.await),
            false => drain.abort(),
        }
    }
}

/// Serves /metrics as the options say: over HTTPS to authorized clients, or plain HTTP.
fn serve_metrics<S>(
    options: &Options,
    ctx: &Context<S>,
    serving: CancellationToken,
) -> anyhow::Result<()> {
    let (address, router) = (
        options.metrics_bind_address,
        metrics::router(ctx.metrics.clone()),
    );
    if !options.metrics_secure {
        return server::serve(address, router);
    }
    #[cfg(feature = "secure-metrics")]
    {
        let cert_dir = options.metrics_cert_path.as_deref();
        let http2 = options.enable_http2;
        let client = ctx.client.clone();
        metrics::secure::serve(address, cert_dir, http2, router, client, serving)
    }
    #[cfg(not(feature = "secure-metrics"))]
    {
        let _ = serving;
        anyhow::ensure!(
            address == BindAddress::Disabled,
            "--metrics-secure needs kube-scaffold-runtime's `secure-metrics` feature: add it to that dependency's features in Cargo.toml, or pass --metrics-secure=false"
        );
        Ok(())
    }
}

/// Resolves once this process stops leading; never without leader election.
#[cfg(feature = "leader-election")]
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

/// Fails fast, with the fix in the message, when the API server cannot be reached or a CRD
/// this project's controllers watch is not installed (a controller would wait for it for ever,
/// never ready), instead of retrying silently.
async fn check_cluster(
    client: &Client,
    ours: &[ApiResource],
    theirs: &[ApiResource],
) -> anyhow::Result<()> {
    let version = client
        .apiserver_version()
        .await
        .context("cannot reach the Kubernetes API server: check your kubeconfig and cluster")?;
    tracing::info!(version = %version.git_version, "connected to the API server");
    let ours = ours.iter().map(|r| (r, "run `make install`"));
    let theirs = theirs.iter().map(|r| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_names_a_default_level_and_targets() {
        use tracing::Level;
        let (filter, invalid) = log_filter(Some("warn,my_operator=debug,kube_runtime=off"));
        assert_eq!(invalid, None);
        assert!(filter.would_enable("my_operator::controller", &Level::DEBUG));
        assert!(!filter.would_enable("my_operator", &Level::TRACE));
        assert!(!filter.would_enable("kube_runtime::controller", &Level::ERROR));
        assert!(filter.would_enable("hyper", &Level::WARN));
        assert!(!filter.would_enable("hyper", &Level::INFO));

        let (unset, invalid) = log_filter(None);
        assert_eq!(invalid, None);
        assert!(unset.would_enable("anything", &Level::INFO));
        assert!(!unset.would_enable("anything", &Level::DEBUG));

        let (bad, invalid) = log_filter(Some("my_operator=loud"));
        assert!(invalid.is_some(), "an invalid level is reported");
        assert!(bad.would_enable("my_operator", &Level::INFO));
        assert!(!bad.would_enable("my_operator", &Level::DEBUG));
    }

    #[cfg(feature = "leader-election")]
    #[test]
    fn identities_differ_between_runs_on_one_host() {
        let (a, b) = (identity(), identity());
        assert_ne!(a, b, "a restarted container must not be its previous run");
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
        assert!(a.starts_with(&format!("{host}_")), "{a}");
    }

    /// `make run` passes `--webhook-bind-address=0` to every project, with webhooks or not.
    #[test]
    fn the_webhook_flags_are_accepted_with_or_without_webhooks() {
        let args = [
            "manager",
            "--webhook-bind-address=0",
            "--webhook-local-url=https://h:9443",
        ];
        let options = Options::try_parse_from(args).expect("accepted");
        assert_eq!(options.webhook_bind_address, BindAddress::Disabled);
    }

    /// Finding 9 of the review: the webhook listener closed at SIGTERM, while the API server
    /// still called the terminating pod. Served through a Service, webhooks are now answered
    /// after the signal until the drain is over and the manager returns, then no more.
    #[cfg(feature = "webhooks")]
    #[tokio::test]
    async fn webhooks_are_answered_after_the_signal_until_the_manager_returns() {
        use std::time::Duration;

        use k8s_openapi::api::core::v1::ConfigMap;
        use tokio_rustls::TlsConnector;
        use tokio_rustls::rustls::pki_types::CertificateDer;
        use tokio_rustls::rustls::{ClientConfig, RootCertStore};

        /// Whether a TLS handshake with the webhook server on `port` succeeds.
        async fn answers(port: u16, ca: &CertificateDer<'static>) -> bool {
            let mut roots = RootCertStore::empty();
            roots.add(ca.clone()).unwrap();
            let config = ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            let Ok(tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                return false;
            };
            let name = "localhost".try_into().unwrap();
            let tls = TlsConnector::from(Arc::new(config)).connect(name, tcp);
            tls.await.is_ok()
        }
        fn nothing(_: &mut ConfigMap) {}
        /// A controller that runs until the shutdown.
        fn waits(ctx: Arc<Context>) -> futures::future::BoxFuture<'static, ()> {
            Box::pin(async move { ctx.shutdown.cancelled().await })
        }

        let (dir, made) = crate::webhook::fake::serving_certificate("drain");
        let ca = made.cert.der().clone();
        let port = crate::webhook::fake::free_port();
        let args = [
            "manager".to_string(),
            "--metrics-bind-address=0".into(),
            "--health-probe-bind-address=0".into(),
            format!("--webhook-bind-address=127.0.0.1:{port}"),
            format!("--webhook-cert-path={}", dir.display()),
        ];
        let options = Options::try_parse_from(args.each_ref().map(String::as_str)).unwrap();
        let mut manager = Manager::new("drain", options)
            .webhooks(vec![Hook::defaulting::<ConfigMap>(nothing)], Vec::new())
            .controllers(&[waits]);
        let drain = Duration::from_millis(1500);
        manager.drain = drain;
        let api = crate::webhook::fake::Objects::default();
        let version = ["major", "minor", "gitVersion", "gitCommit", "gitTreeState"];
        let version = ["buildDate", "goVersion", "compiler", "platform"]
            .into_iter()
            .chain(version)
            .map(|field| (field.to_string(), serde_json::Value::from("1")));
        api.insert("/version", serde_json::Value::Object(version.collect()));
        let shutdown = CancellationToken::new();
        let running = tokio::spawn(manager.run_with(api.client(), shutdown.clone()));
        let mut tries = 0;
        while !answers(port, &ca).await {
            tries += 1;
            assert!(tries < 100, "the webhook server never answered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        shutdown.cancel();
        let signalled = std::time::Instant::now();
        tokio::time::sleep(drain / 2).await;
        let during = answers(port, &ca).await;
        running.await.unwrap().expect("the manager stopped cleanly");
        let returned = signalled.elapsed();
        let mut after = answers(port, &ca).await;
        for _ in 0..20 {
            if !after {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            after = answers(port, &ca).await;
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(during, "the webhooks were not answered during the drain");
        assert!(returned >= drain, "returned {returned:?} after the signal");
        assert!(!after, "the webhook server outlived the manager");
    }

    #[test]
    fn defaults_are_kubebuilders() {
        let options = Options::default();
        assert!(matches!(options.log_format, LogFormat::Text));
        #[cfg(feature = "leader-election")]
        {
            assert!(!options.leader_elect);
            assert_eq!(options.leader_elect_retry_period, Duration::from_secs(2));
        }
    }
}
