//! A Kubernetes API server for the integration tests, as controller-runtime's envtest: etcd
//! and kube-apiserver from the directory `KUBEBUILDER_ASSETS` names (the layout
//! `setup-envtest use -p path` prints), started on free loopback ports with a CA, a serving
//! certificate and an administrator's token made here. No kubelet and no controller manager:
//! pods never run, and nothing is garbage-collected.
//!
//! The processes stop and their files go when the `Environment` is dropped, also when a test
//! fails.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use crate::manager::Manager;
use crate::server::BindAddress;

/// The administrator's token (group `system:masters`).
const TOKEN: &str = "integration-test-admin";

/// A running etcd and kube-apiserver.
pub struct Environment {
    /// A client of the administrator.
    pub client: Client,
    /// The files of this environment: certificates, etcd's data, logs, `kubeconfig`.
    pub dir: PathBuf,
    _processes: Processes,
}

/// The control plane's processes, killed (and their files removed) when dropped.
struct Processes {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Environment {
    /// Starts etcd and kube-apiserver from `KUBEBUILDER_ASSETS`; ready once the API server
    /// serves the `default` namespace.
    pub async fn start() -> anyhow::Result<Self> {
        Self::start_with(&[]).await
    }

    /// [`Environment::start`], with more flags for kube-apiserver, e.g.
    /// `--feature-gates=ShardedListAndWatch=true`.
    pub async fn start_with(apiserver_flags: &[String]) -> anyhow::Result<Self> {
        let assets = assets()?;
        let name = format!("{}-envtest-{}", crate::manager::name(), std::process::id());
        let dir = std::env::temp_dir().join(name);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut processes = Processes {
            dir: dir.clone(),
            children: Vec::new(),
        };
        let file = |name: &str| dir.join(name).display().to_string();

        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key)?.pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate()?;
        let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let serving = CertificateParams::new(names)?.signed_by(&key, &issuer)?;
        let accounts = KeyPair::generate()?;
        for (name, text) in [
            ("ca.crt", ca),
            ("apiserver.crt", serving.pem()),
            ("apiserver.key", key.serialize_pem()),
            ("service-account.key", accounts.serialize_pem()),
            ("service-account.pub", accounts.public_key_pem()),
            (
                "tokens.csv",
                format!("{TOKEN},admin,admin,\"system:masters\"\n"),
            ),
        ] {
            fs::write(file(name), text)?;
        }

        let (etcd_port, peer_port, api_port) = (free_port()?, free_port()?, free_port()?);
        let etcd = format!("http://127.0.0.1:{etcd_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let server = format!("https://127.0.0.1:{api_port}");
        processes.spawn(
            &assets.join("etcd"),
            &[
                format!("--data-dir={}", file("etcd")),
                format!("--listen-client-urls={etcd}"),
                format!("--advertise-client-urls={etcd}"),
                format!("--listen-peer-urls={peer}"),
                format!("--initial-advertise-peer-urls={peer}"),
                format!("--initial-cluster=default={peer}"),
                "--unsafe-no-fsync".into(),
            ],
        )?;
        processes.spawn(
            &assets.join("kube-apiserver"),
            &[
                format!("--etcd-servers={etcd}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                // No `kubernetes` Service endpoints: since 1.37 the reconciler that writes them
                // refuses a loopback address, and no pod here would use them.
                "--endpoint-reconciler-type=none".into(),
                format!("--secure-port={api_port}"),
                format!("--tls-cert-file={}", file("apiserver.crt")),
                format!("--tls-private-key-file={}", file("apiserver.key")),
                format!("--token-auth-file={}", file("tokens.csv")),
                "--authorization-mode=RBAC".into(),
                format!("--service-account-issuer={server}"),
                format!("--service-account-key-file={}", file("service-account.pub")),
                format!(
                    "--service-account-signing-key-file={}",
                    file("service-account.key")
                ),
                "--service-cluster-ip-range=10.0.0.0/24".into(),
            ]
            .into_iter()
            .chain(apiserver_flags.iter().cloned())
            .collect::<Vec<_>>(),
        )?;

        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\nusers:\n- name: admin\n  user:\n    token: {TOKEN}\ncontexts:\n- name: envtest\n  context:\n    cluster: envtest\n    user: admin\n    namespace: default\ncurrent-context: envtest\n",
            ca = file("ca.crt"),
        );
        fs::write(file("kubeconfig"), &kubeconfig)?;
        let config = Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&kubeconfig)?,
            &KubeConfigOptions::default(),
        )
        .await?;
        let client = Client::try_from(config)?;
        processes.wait_ready(&client).await?;
        Ok(Environment {
            client,
            dir,
            _processes: processes,
        })
    }
}

/// A manager run by [`Environment::run`].
pub struct Running {
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    probes: u16,
}

impl Environment {
    /// Runs `manager` against this API server in this process, as `make run` would: no
    /// metrics; health probes on a free loopback port; its webhooks (if any) served on another
    /// and registered at `https://127.0.0.1:<port>`, failing closed, so that a test knows a
    /// hook answered. Resolves once the manager is ready (`/readyz`: caches synced, webhooks
    /// serving).
    pub async fn run(&self, mut manager: Manager) -> anyhow::Result<Running> {
        let probes = free_port()?;
        let options = &mut manager.options;
        options.metrics_bind_address = BindAddress::Disabled;
        options.health_probe_bind_address = loopback(probes);
        #[cfg(feature = "leader-election")]
        {
            options.leader_elect = false;
        }
        #[cfg(feature = "webhooks")]
        {
            let port = free_port()?;
            options.webhook_bind_address = loopback(port);
            options.webhook_cert_path = self.dir.join("webhook-certs");
            options.webhook_cert_secret = None;
            options.webhook_local_url = Some(format!("https://127.0.0.1:{port}"));
            manager = manager.local_failure_policy(crate::webhook::local::FailurePolicy::Fail);
        }
        let shutdown = CancellationToken::new();
        let client = self.client.clone();
        let task = tokio::spawn(manager.run_with(client, shutdown.clone()));
        let mut running = Running {
            shutdown,
            task,
            probes,
        };
        running.ready().await?;
        Ok(running)
    }
}

impl Running {
    /// Waits until `/readyz` answers 200, or fails if the manager stopped first.
    async fn ready(&mut self) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            if self.task.is_finished() {
                let stopped = (&mut self.task).await.context("the manager panicked")?;
                stopped.context("the manager stopped before it was ready")?;
                anyhow::bail!("the manager stopped before it was ready");
            }
            if readyz(self.probes).await {
                return Ok(());
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the manager was not ready within {READY_TIMEOUT:?} (its /readyz never answered 200)"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops the manager as SIGTERM would, and returns how its run ended.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        let stopped = tokio::time::timeout(READY_TIMEOUT, self.task).await;
        stopped
            .context("the manager did not stop")?
            .context("the manager panicked")?
    }
}

/// How long the manager may take to become ready, and to stop.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

fn loopback(port: u16) -> BindAddress {
    BindAddress::Address(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
}

/// Whether `GET /readyz` on the loopback `port` answers 200.
async fn readyz(port: u16) -> bool {
    let Ok(mut stream) = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await else {
        return false;
    };
    let request = "GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer.starts_with("HTTP/1.1 200")
}

impl Processes {
    /// Starts `binary ARGS`, its output in `<dir>/<binary>.log`.
    fn spawn(&mut self, binary: &Path, args: &[String]) -> anyhow::Result<()> {
        let name = binary.file_name().unwrap_or_default().to_string_lossy();
        let log = fs::File::create(self.dir.join(format!("{name}.log")))?;
        let child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        self.children.push(child);
        Ok(())
    }

    /// Waits at most a minute for the `default` namespace, which the API server makes once it
    /// serves.
    async fn wait_ready(&mut self, client: &Client) -> anyhow::Result<()> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for _ in 0..240 {
            if let Ok(Some(_)) = namespaces.get_opt("default").await {
                return Ok(());
            }
            for process in &mut self.children {
                if let Some(status) = process.try_wait()? {
                    anyhow::bail!(
                        "a control plane process exited ({status}): see the logs in {}",
                        self.dir.display()
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::bail!(
            "the API server did not serve within a minute: see the logs in {}",
            self.dir.display()
        )
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for process in &mut self.children {
            let _ = process.kill();
            let _ = process.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The directory of envtest's binaries, from `KUBEBUILDER_ASSETS`.
fn assets() -> anyhow::Result<PathBuf> {
    let help = "help: point KUBEBUILDER_ASSETS at etcd and kube-apiserver: with Go, `go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use -p path`; without, unpack envtest's release archive (see README.md, \"Integration tests\")";
    let dir = std::env::var_os("KUBEBUILDER_ASSETS")
        .map(PathBuf::from)
        .with_context(|| format!("KUBEBUILDER_ASSETS is not set\n{help}"))?;
    for binary in ["etcd", "kube-apiserver"] {
        anyhow::ensure!(
            dir.join(binary).is_file(),
            "no {binary} in KUBEBUILDER_ASSETS ({})\n{help}",
            dir.display()
        );
    }
    Ok(dir)
}

/// A port nobody listens on now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
