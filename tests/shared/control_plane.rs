//! A real Kubernetes control plane for the tests: etcd, kube-apiserver and
//! kube-controller-manager (garbage collection, namespaces, Deployments to ReplicaSets) started
//! on free loopback ports, with certificates and tokens made here, from the binaries
//! `scripts/control-plane` builds (or those `KUBEBUILDER_ASSETS` points at: envtest's layout).
//!
//! One control plane serves the whole test binary (`shared`), on the binary's `TOPOLOGY`:
//! loopback alone, or beside a node that runs pods (`scripts/node`). Each process runs under a
//! `sh` that holds the read end of a pipe whose write end only this process has: when the
//! test binary ends, however it ends, the pipe closes and the control plane stops with it; the
//! node cleans up after itself the same way.

use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// The token of the cluster's administrator (group `system:masters`).
const ADMIN_TOKEN: &str = "admin-token-for-tests";
/// The token of a user with no rights but discovery.
const NOBODY_TOKEN: &str = "nobody-token-for-tests";

/// Where the control plane runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// On loopback, with no node: nothing runs pods.
    Loopback,
    /// On the node's bridge address, beside a node that runs pods (`scripts/node`): the
    /// API server calls webhooks by their Services' endpoints, pods reach it at its
    /// ClusterIP, and every controller of kube-controller-manager runs.
    Node,
}

/// The node's address, on the bridge `scripts/node prepare` makes.
const NODE_IP: &str = "10.88.0.1";
/// The `kubernetes` Service's ClusterIP, in `--service-cluster-ip-range`.
const API_CLUSTER_IP: &str = "10.96.0.1";

pub struct ControlPlane {
    dir: PathBuf,
    /// The directory of kube-apiserver, etcd, kube-controller-manager and kubectl.
    pub assets: PathBuf,
    /// The API server's address, `https://<127.0.0.1 or the node's address>:<port>`.
    pub server: String,
    /// etcd's client URL, `http://127.0.0.1:<port>`.
    pub etcd: String,
    /// A kubeconfig of the cluster's administrator.
    pub admin: PathBuf,
    /// A kubeconfig of a user with no rights.
    pub nobody: PathBuf,
    processes: Vec<Supervised>,
    node: Option<Node>,
    /// The API server's flags but its port.
    api_flags: Vec<String>,
}

/// The control plane of this test binary, started by the first test that asks.
pub fn shared() -> &'static ControlPlane {
    static SHARED: OnceLock<ControlPlane> = OnceLock::new();
    SHARED.get_or_init(|| ControlPlane::start(crate::TOPOLOGY))
}

/// The directory of the control plane's binaries: `KUBEBUILDER_ASSETS`, else what
/// `scripts/control-plane` builds (and caches). Missing binaries fail the test: in CI a
/// missing control plane is a failure, never a skip.
pub fn assets() -> PathBuf {
    if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS") {
        return PathBuf::from(dir);
    }
    built(&[])
}

/// The directory of the oldest Kubernetes' control plane (`scripts/control-plane --oldest`).
pub fn oldest_assets() -> PathBuf {
    built(&["--oldest"])
}

/// What `scripts/control-plane ARGS` builds (and caches): its directory.
fn built(args: &[&str]) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/control-plane");
    let output = Command::new(&script)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed: the real-server tests need the control plane",
        script.display()
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

impl ControlPlane {
    fn start(topology: Topology) -> Self {
        let assets = assets();
        if topology == Topology::Node {
            script(&["node", "prepare"]);
        }
        let address = match topology {
            Topology::Loopback => "127.0.0.1",
            Topology::Node => NODE_IP,
        };
        for binary in [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kubectl",
        ] {
            assert!(
                assets.join(binary).is_file(),
                "no {binary} in {}: run scripts/control-plane",
                assets.display()
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("control-plane-")
            .tempdir()
            .unwrap();
        // Removed by etcd's supervisor, which outlives this process.
        let dir = dir.keep();
        let path = |name: &str| dir.join(name).to_str().unwrap().to_string();

        // The API server's serving certificate, signed by a CA of its own.
        let serving = match topology {
            Topology::Loopback => Serving::for_names(&["127.0.0.1", "localhost"]),
            Topology::Node => Serving::for_names(&[
                NODE_IP,
                API_CLUSTER_IP,
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
            ]),
        };
        fs::write(path("ca.crt"), &serving.ca).unwrap();
        fs::write(path("apiserver.crt"), &serving.cert).unwrap();
        fs::write(path("apiserver.key"), &serving.key).unwrap();
        // Signs and checks ServiceAccount tokens (`kubectl create token`).
        let service_accounts = KeyPair::generate().unwrap();
        fs::write(
            path("service-account.key"),
            service_accounts.serialize_pem(),
        )
        .unwrap();
        fs::write(
            path("service-account.pub"),
            service_accounts.public_key_pem(),
        )
        .unwrap();
        fs::write(
            path("tokens.csv"),
            format!("{ADMIN_TOKEN},admin,admin,\"system:masters\"\n{NOBODY_TOKEN},nobody,nobody\n"),
        )
        .unwrap();

        let etcd_port = free_port();
        let etcd_peer_port = free_port();
        let api_port = free_port();
        let server = format!("https://{address}:{api_port}");
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let mut processes = Vec::new();
        // The last to stop (the first started) removes the directory; the test binary may
        // end without dropping the control plane.
        processes.push(Supervised::start_removing(
            &assets.join("etcd"),
            &[
                &format!("--data-dir={}", path("etcd")),
                &format!("--listen-client-urls={etcd_url}"),
                &format!("--advertise-client-urls={etcd_url}"),
                &format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}"),
                &format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}"),
                &format!("--initial-cluster=default=http://127.0.0.1:{etcd_peer_port}"),
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            &dir.join("etcd.log"),
            Some(&dir),
        ));
        let node_flags: &[&str] = match topology {
            // No `kubernetes` Service endpoints: since 1.37 the reconciler that writes them
            // refuses a loopback address, and no pod runs. PodTemplates without a watch
            // cache: their watches read etcd, so that tests/real/faults.rs meets a compaction.
            Topology::Loopback => &[
                "--endpoint-reconciler-type=none",
                "--watch-cache-sizes=podtemplates#0",
                // Server-side sharding (tests/real/sharding.rs); alpha, off by default.
                "--feature-gates=ShardedListAndWatch=true",
            ],
            // Webhooks and aggregated APIs by their Services' endpoints: no cluster DNS here.
            Topology::Node => &[
                "--enable-aggregator-routing=true",
                "--kubelet-preferred-address-types=InternalIP",
                // Server-side sharding (tests/node/sharding.rs); alpha, off by default.
                "--feature-gates=ShardedListAndWatch=true",
            ],
        };
        let api_flags: Vec<String> = [
            format!("--etcd-servers={etcd_url}"),
            format!("--bind-address={address}"),
            format!("--advertise-address={address}"),
            format!("--tls-cert-file={}", path("apiserver.crt")),
            format!("--tls-private-key-file={}", path("apiserver.key")),
            format!("--token-auth-file={}", path("tokens.csv")),
            "--authorization-mode=RBAC".into(),
            format!("--service-account-issuer={server}"),
            format!("--service-account-key-file={}", path("service-account.pub")),
            format!(
                "--service-account-signing-key-file={}",
                path("service-account.key")
            ),
            "--service-cluster-ip-range=10.96.0.0/24".into(),
            "--allow-privileged=true".into(),
            "--v=0".into(),
        ]
        .into_iter()
        .chain(node_flags.iter().map(|flag| flag.to_string()))
        .collect();
        processes.push(api_server(
            &assets,
            &api_flags,
            api_port,
            &dir.join("kube-apiserver.log"),
        ));
        let admin = dir.join("admin.kubeconfig");
        let nobody = dir.join("nobody.kubeconfig");
        let ca_file = dir.join("ca.crt");
        fs::write(&admin, kubeconfig(&server, &ca_file, "admin", ADMIN_TOKEN)).unwrap();
        fs::write(
            &nobody,
            kubeconfig(&server, &ca_file, "nobody", NOBODY_TOKEN),
        )
        .unwrap();
        let mut plane = ControlPlane {
            node: None,
            api_flags,
            assets,
            server,
            etcd: etcd_url,
            admin,
            nobody,
            processes,
            dir,
        };
        plane.wait_ready("/readyz");
        let admin = plane.admin.to_str().unwrap().to_string();
        let controllers = match topology {
            Topology::Loopback => vec![
                "--controllers=garbage-collector-controller,namespace-controller,\
                 deployment-controller,replicaset-controller,serviceaccount-controller"
                    .to_string(),
            ],
            // All of them, and the CA pods find in `kube-root-ca.crt` (their token's volume
            // waits for it).
            Topology::Node => vec![
                "--controllers=*".to_string(),
                format!("--root-ca-file={}", plane.dir.join("ca.crt").display()),
            ],
        };
        let flags = [
            format!("--kubeconfig={admin}"),
            format!("--authentication-kubeconfig={admin}"),
            format!("--authorization-kubeconfig={admin}"),
            "--leader-elect=false".into(),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={}", free_port()),
            "--concurrent-gc-syncs=5".into(),
            "--v=0".into(),
        ];
        let flags: Vec<&str> = flags
            .iter()
            .chain(&controllers)
            .map(String::as_str)
            .collect();
        plane.processes.push(Supervised::start(
            &plane.assets.join("kube-controller-manager"),
            &flags,
            &plane.dir.join("kube-controller-manager.log"),
        ));
        // The controller manager is up once it has made the default namespace's
        // ServiceAccount (its serviceaccount controller).
        plane.wait_until("the controller manager makes ServiceAccounts", || {
            plane
                .kubectl(&["get", "serviceaccount", "default", "-n", "default"])
                .status
                .success()
        });
        if topology == Topology::Node {
            plane.node = Some(Node::start(&plane));
            plane.wait_until("the node is Ready", || {
                plane
                    .kubectl(&["wait", "--for=condition=Ready", "node/node", "--timeout=1s"])
                    .status
                    .success()
            });
        }
        plane
    }

    /// Waits until `path` of the API server answers `ok`.
    fn wait_ready(&self, path: &str) {
        self.wait_until(&format!("the API server's {path}"), || {
            self.kubectl(&["get", "--raw", path]).status.success()
        });
    }

    /// Waits at most 90 s for `ready`, else panics with the control plane's logs; at once if
    /// one of its processes has exited.
    pub fn wait_until(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let held = poll(90, || {
            ready() || {
                if let Some(dead) = self.processes.iter().find(|p| p.exited()) {
                    panic!("{what}: {} exited\n{}", dead.log.display(), self.logs());
                }
                if self.node.as_ref().is_some_and(Node::exited) {
                    panic!("{what}: the node exited\n{}", self.logs());
                }
                false
            }
        });
        assert!(held, "{what}: not within 90 s\n{}", self.logs());
    }

    /// The last lines of each process's log, the node's too.
    pub fn logs(&self) -> String {
        let node = self.node.iter().flat_map(Node::logs);
        self.processes
            .iter()
            .map(|p| p.tail(40))
            .chain(node)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `kubectl ARGS` as the administrator.
    pub fn kubectl(&self, args: &[&str]) -> std::process::Output {
        let output = self.kubectl_as(&self.admin).args(args).output();
        output.expect("kubectl runs")
    }

    /// The control plane's kubectl as the user of `kubeconfig`, reading nothing.
    pub fn kubectl_as(&self, kubeconfig: &Path) -> Command {
        let mut command = Command::new(self.kubectl_binary());
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .stdin(Stdio::null());
        command
    }

    /// The kubectl the tests and `make` use: the one built with the control plane.
    pub fn kubectl_binary(&self) -> PathBuf {
        self.assets.join("kubectl")
    }

    /// Another API server of this cluster (same etcd, flags and certificates), on a port of
    /// its own: a test restarts it without touching the one the other tests use.
    pub fn another_api_server(&self) -> ApiServer {
        let port = free_port();
        let mut server = ApiServer {
            address: self.server.rsplit_once(':').unwrap().0.to_string(),
            port,
            assets: self.assets.clone(),
            flags: self.api_flags.clone(),
            log: self.dir.join(format!("kube-apiserver-{port}.log")),
            process: None,
            admin: self.admin.clone(),
            kubectl: self.kubectl_binary(),
        };
        server.start();
        server
    }

    /// A kubeconfig for a token (of a ServiceAccount, say), written beside the others.
    pub fn kubeconfig_for(&self, name: &str, token: &str) -> PathBuf {
        let file = self.dir.join(format!("{name}.kubeconfig"));
        let ca_file = self.dir.join("ca.crt");
        fs::write(&file, kubeconfig(&self.server, &ca_file, name, token)).unwrap();
        file
    }
}

fn kubeconfig(server: &str, ca_file: &Path, user: &str, token: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: {user}
  context:
    cluster: test
    user: {user}
    namespace: default
current-context: {user}
",
        ca = ca_file.display()
    )
}

/// A CA and a serving certificate it signed, as PEM; X.509 v3, as rustls (kube's client)
/// wants.
pub struct Serving {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

impl Serving {
    /// A new CA, and a certificate it signed for `names` (addresses or DNS names).
    pub fn for_names(names: &[&str]) -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca_params.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let names = names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        Serving {
            ca,
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// Polls `ready` every 250 ms for at most `seconds`; whether it held.
pub fn poll(seconds: u64, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A port nobody listens on now, never the same twice in this process, and below the kernel's
/// ephemeral range (32768 up): a port the kernel picked would be free to pick again, for a
/// bind or any outgoing connection, before the process it was for binds it.
pub fn free_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(20000);
    loop {
        let port = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(port < 32768, "no free port left under the ephemeral range");
        if TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
}

/// Restarts the running node's containerd (`scripts/node restart-containerd`).
pub fn restart_containerd() {
    script(&["node", "restart-containerd"]);
}

/// Runs `scripts/NAME ARGS`; panics with its output unless it succeeds.
fn script(args: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(args[0]);
    let output = Command::new(&path)
        .args(&args[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()));
    assert!(
        output.status.success(),
        "`scripts/{}` failed:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The node, `scripts/node run`: it stops and cleans up (pods, mounts, iptables, the
/// bridge, sysctls) when its standard input, a pipe only this process writes, closes.
struct Node {
    /// The directory of its components' logs, removed by its cleanup.
    dir: PathBuf,
    log: PathBuf,
    _stdin: ChildStdin,
    child: Child,
}

impl Node {
    /// Starts the node against `plane` and waits until its registry serves the pause image.
    fn start(plane: &ControlPlane) -> Self {
        use std::io::BufRead as _;
        let dir = plane.dir.join("node");
        let log = plane.dir.join("node.log");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/node");
        let mut child = Command::new(&script)
            .arg("run")
            .arg(&dir)
            .arg(&plane.admin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", script.display()));
        let stdin = child.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.any(|line| line.is_ok_and(|l| l == "ready"));
        let node = Node {
            dir,
            log,
            _stdin: stdin,
            child,
        };
        assert!(ready, "the node did not start\n{}", node.logs().join("\n"));
        node
    }

    fn exited(&self) -> bool {
        exited(&self.child)
    }

    /// The last lines of the script's log and of each component's.
    fn logs(&self) -> Vec<String> {
        let components = [
            "kubelet",
            "kube-proxy",
            "kube-scheduler",
            "containerd",
            "registry",
        ];
        std::iter::once(self.log.clone())
            .chain(components.map(|c| self.dir.join(format!("{c}.log"))))
            .map(|log| tail(&log, 30))
            .collect()
    }
}

/// A process that stops when this one does: it runs under `sh`, which kills it when its
/// standard input (a pipe only this process writes) closes.
/// kube-apiserver with `flags` on `port`, logging to `log`.
fn api_server(assets: &Path, flags: &[String], port: u16, log: &Path) -> Supervised {
    let port = format!("--secure-port={port}");
    let args: Vec<&str> = flags
        .iter()
        .map(String::as_str)
        .chain([port.as_str()])
        .collect();
    Supervised::start(&assets.join("kube-apiserver"), &args, log)
}

/// A second API server of the cluster, which a test stops and starts again: it comes back
/// with a new watch cache, so that a watch resumed from an older version meets 410 Gone.
pub struct ApiServer {
    /// `https://<address>` without the port.
    address: String,
    port: u16,
    assets: PathBuf,
    flags: Vec<String>,
    log: PathBuf,
    process: Option<Supervised>,
    admin: PathBuf,
    kubectl: PathBuf,
}

impl ApiServer {
    /// `https://<address>:<port>`.
    pub fn url(&self) -> String {
        format!("{}:{}", self.address, self.port)
    }

    /// Starts it, and waits until it is ready.
    pub fn start(&mut self) {
        let process = api_server(&self.assets, &self.flags, self.port, &self.log);
        self.process = Some(process);
        let ready = poll(90, || {
            Command::new(&self.kubectl)
                .arg("--kubeconfig")
                .arg(&self.admin)
                .args(["--server", &self.url(), "get", "--raw", "/readyz"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(
            ready,
            "the second API server is not ready:\n{}",
            tail(&self.log, 40)
        );
    }

    /// Kills it (SIGKILL): its connections close.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            drop(process.stdin.take());
            let _ = process.child.wait();
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Supervised {
    log: PathBuf,
    stdin: Option<ChildStdin>,
    child: Child,
}

impl Supervised {
    fn start(binary: &Path, args: &[&str], log: &Path) -> Self {
        Self::start_removing(binary, args, log, None)
    }

    /// `start`, and `remove` is deleted once the process is stopped.
    fn start_removing(binary: &Path, args: &[&str], log: &Path, remove: Option<&Path>) -> Self {
        let out = fs::File::create(log).unwrap();
        let child = Command::new("sh")
            .arg("-c")
            .arg(concat!(
                // An asynchronous list reads /dev/null unless told otherwise: fd 3.
                r#"exec 3<&0; "$0" "$@" </dev/null & child=$!; "#,
                r#"(cat <&3 >/dev/null; kill -KILL "$child" 2>/dev/null; "#,
                r#"if [ -n "$REMOVE" ]; then sleep 1; rm -rf "$REMOVE"; fi) & wait "$child""#
            ))
            .arg(binary)
            .args(args)
            .env("REMOVE", remove.unwrap_or(Path::new("")))
            .stdin(Stdio::piped())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut process = Supervised {
            log: log.to_path_buf(),
            stdin: None,
            child,
        };
        process.stdin = process.child.stdin.take();
        process
    }

    /// Whether the process has ended (its `sh` ends with it).
    fn exited(&self) -> bool {
        exited(&self.child)
    }

    fn tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

/// Whether `child` has ended: `try_wait` needs `&mut`; a zero-signal `kill` asks without
/// reaping.
fn exited(child: &Child) -> bool {
    !Command::new("kill")
        .args(["-0", &child.id().to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The last `lines` lines of the file `log`, under its name.
fn tail(log: &Path, lines: usize) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let last = all[all.len().saturating_sub(lines)..].join("\n");
    format!("--- {}\n{last}", log.display())
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}
