//! The generated projects the real-server tests run, made by the real binary outside this
//! repository, built once into one shared target directory, and run with `make` against the
//! shared control plane.

use std::fs;
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

use crate::control_plane::{self, ControlPlane, poll};
use crate::generated_build::{BUILD_ENV, target_dir};

/// 2026-11-21: fixed dates keep generated files stable.
const SOURCE_DATE_EPOCH: &str = "1795219200";

/// The tests share the control plane, the projects and the manager's ports: one at a time.
pub fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Project {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub name: String,
    pub plane: &'static ControlPlane,
}

impl Project {
    /// `kube-scaffold init ARGS` in an empty directory named `name`, outside this repository.
    pub fn init(name: &str, args: &[&str]) -> Self {
        let tmp = tempfile::Builder::new().prefix("real-").tempdir().unwrap();
        let dir = tmp.path().join(name);
        fs::create_dir(&dir).unwrap();
        let project = Project {
            _tmp: tmp,
            dir,
            name: name.to_string(),
            plane: control_plane::shared(),
        };
        project.scaffold(&[&["init"][..], args].concat());
        project
    }

    /// The manager's binary, as `cargo build` leaves it.
    pub fn manager(&self) -> String {
        let binary = target_dir().join("debug").join(&self.name);
        binary.to_str().unwrap().to_string()
    }

    /// `kube-scaffold create api --group GROUP --version v1 --kind KIND FLAGS` in the project.
    pub fn create_api(&self, group: &str, kind: &str, flags: &[&str]) {
        let api = [
            "create",
            "api",
            "--group",
            group,
            "--version",
            "v1",
            "--kind",
            kind,
        ];
        self.scaffold(&[&api[..], flags].concat());
    }

    /// `kube-scaffold ARGS` in the project; panics unless it succeeds.
    pub fn scaffold(&self, args: &[&str]) {
        let output = Command::new(env!("CARGO_BIN_EXE_kube-scaffold"))
            .args(args)
            .current_dir(&self.dir)
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "kube-scaffold {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// A command in the project, as its user would run it: the control plane's administrator
    /// in KUBECONFIG, the control plane's kubectl.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(&self.dir)
            .env("KUBECONFIG", &self.plane.admin)
            .env("CARGO_TARGET_DIR", target_dir())
            .envs(BUILD_ENV)
            .env("CARGO_TERM_COLOR", "never")
            .env("KUSTOMIZE", "")
            .stdin(Stdio::null());
        if program == "make" {
            command.arg(format!("KUBECTL={}", self.plane.kubectl_binary().display()));
        }
        command
    }

    /// `program ARGS` in the project; its output, whether it succeeded or not.
    pub fn output(&self, program: &str, args: &[&str]) -> Output {
        self.command(program, args).output().unwrap()
    }

    /// `program ARGS` in the project; panics with its output unless it succeeds.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let output = self.output(program, args);
        assert!(
            output.status.success(),
            "`{program} {}` failed in {}:\n--- stdout\n{}\n--- stderr\n{}",
            args.join(" "),
            self.dir.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `kubectl ARGS` in the project, as the administrator.
    pub fn kubectl_output(&self, args: &[&str]) -> Output {
        let mut kubectl = self.plane.kubectl_as(&self.plane.admin);
        kubectl.args(args).current_dir(&self.dir).output().unwrap()
    }

    /// `kubectl ARGS` in the project, as the administrator; panics unless it succeeds.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let output = self.kubectl_output(args);
        assert!(
            output.status.success(),
            "`kubectl {}` failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `kubectl apply --server-side -f -` of `manifest`, as the administrator.
    pub fn apply(&self, manifest: &str) -> Output {
        let mut child = self
            .plane
            .kubectl_as(&self.plane.admin)
            .args(["apply", "--server-side", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(manifest.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Builds what `make run` builds (crdgen and the manager, with the `dynamic-linking`
    /// feature it turns on), so that `make run` compiles nothing while a test's clock runs.
    pub fn build_for_make_run(&self) {
        let bins = ["--bin", "crdgen", "--bin", &self.name];
        self.run(
            "cargo",
            &[&["build", "--features=dynamic-linking"][..], &bins].concat(),
        );
    }

    /// Starts `make run ARGS` in a process group of its own, as at a terminal.
    pub fn start_run(&self, args: &[&str]) -> Running {
        self.start(self.command("make", &[&["run"][..], args].concat()))
    }

    /// Starts `command` in a process group of its own, its output in a log file.
    pub fn start(&self, mut command: Command) -> Running {
        let log = self.dir.join(format!(
            "run-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let out = fs::File::create(&log).unwrap();
        if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
            command.env("RUST_LOG", "info");
        }
        let child = command
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap();
        Running { child, log }
    }

    /// Polls `ready` every 250 ms for at most `seconds`; panics naming `what` if it never
    /// holds, with `context`'s text.
    pub fn wait(
        &self,
        what: &str,
        seconds: u64,
        context: impl Fn() -> String,
        ready: impl FnMut() -> bool,
    ) {
        assert!(
            poll(seconds, ready),
            "{what}: not within {seconds} s\n{}",
            context()
        );
    }

    /// Waits until the CRD `crd` (`crd/<name>`) is Established. `kubectl wait` fails at once,
    /// without waiting, when it reads the CRD before the API server wrote any condition
    /// ("status.conditions accessor error"): it is asked again.
    pub fn wait_established(&self, crd: &str) {
        let established = || {
            let wait = ["wait", "--for=condition=Established", crd, "--timeout=5s"];
            self.kubectl_output(&wait).status.success()
        };
        let context = || self.kubectl(&["get", crd, "-o", "yaml"]);
        self.wait(&format!("{crd} Established"), 60, context, established);
    }

    /// Waits until `make run WEBHOOK_LOCAL_URL=https://127.0.0.1:9443` has registered its
    /// webhooks and serves them.
    pub fn wait_local_webhooks(&self, manager: &Running) {
        self.wait(
            "the local webhooks registered and served",
            60,
            || manager.log(),
            || {
                manager.log().contains("local webhooks registered")
                    && TcpStream::connect("127.0.0.1:9443").is_ok()
            },
        );
    }

    /// `kubectl get OBJECT -o jsonpath=PATH` (OBJECT may start with `-n <namespace>`): what
    /// it prints, trimmed; empty if the object is not there.
    pub fn jsonpath(&self, object: &[&str], path: &str) -> String {
        let path = format!("jsonpath={path}");
        let args = [&["get"][..], object, &["-o", &path]].concat();
        let output = self.kubectl_output(&args);
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// The ring record of the sharded ring `ring` in `namespace` (the Lease `<ring>-ring`): its
    /// members and its settled ring, empty while there is none.
    pub fn ring_record(
        &self,
        namespace: &str,
        ring: &str,
    ) -> (
        kube_scaffold_runtime::sharding::ring::Ring,
        kube_scaffold_runtime::sharding::ring::Ring,
    ) {
        use kube_scaffold_runtime::sharding::ring::Ring;
        let record = self.jsonpath(
            &["lease", "-n", namespace, &format!("{ring}-ring")],
            "{.metadata.annotations.sharding\\.kube-scaffold\\.io/members} {.metadata.annotations.sharding\\.kube-scaffold\\.io/settled}",
        );
        let (members, settled) = record.split_once(' ').unwrap_or((&record, ""));
        let parse = |text: &str| Ring::parse(text).unwrap_or_default();
        (parse(members), parse(settled))
    }

    /// Applies the manager's identity and rights exactly as config/default deploys them (its
    /// Namespace, ServiceAccount, roles and bindings), and returns a kubeconfig with a token of
    /// that ServiceAccount, `<name>-controller-manager` in `namespace`, and the token.
    pub fn manager_identity(&self, namespace: &str) -> (PathBuf, String) {
        const RBAC_KINDS: &[&str] = &[
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
        ];
        let default = self.kubectl(&["kustomize", "config/default"]);
        let rbac: Vec<&str> = default
            .split("\n---\n")
            .filter(|doc| {
                RBAC_KINDS
                    .iter()
                    .any(|kind| doc.lines().any(|l| l == format!("kind: {kind}")))
            })
            .collect();
        let file = self.dir.join("rbac.yaml");
        fs::write(&file, rbac.join("\n---\n")).unwrap();
        self.kubectl(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
        let account = format!("{}-controller-manager", self.name);
        let token = self.kubectl(&[
            "create",
            "token",
            &account,
            "-n",
            namespace,
            "--duration=1h",
        ]);
        let token = token.trim().to_string();
        (self.plane.kubeconfig_for(&account, &token), token)
    }

    /// Waits until `ca` (base64, as the Secret's `ca.crt`) is the CA bundle of every webhook of
    /// the project's two configurations and of the conversion of the CRD `crd`: cert-manager's
    /// cainjector at work.
    pub fn wait_ca_injected(&self, ca: &str, crd: &str) {
        let hooks = "{.webhooks[*].clientConfig.caBundle}";
        let conversion = "{.spec.conversion.webhook.clientConfig.caBundle}";
        let objects = [
            (
                format!(
                    "mutatingwebhookconfiguration/{}-mutating-webhook-configuration",
                    self.name
                ),
                hooks,
            ),
            (
                format!(
                    "validatingwebhookconfiguration/{}-validating-webhook-configuration",
                    self.name
                ),
                hooks,
            ),
            (format!("crd/{crd}"), conversion),
        ];
        for (object, path) in &objects {
            let bundles = || self.jsonpath(&[object], path);
            self.wait(
                &format!("the CA injected into {object}"),
                60,
                bundles,
                || {
                    let bundles = bundles();
                    !bundles.is_empty() && bundles.split(' ').all(|bundle| bundle == ca)
                },
            );
        }
    }

    /// The status of `object`'s condition `type_`, or "" while it has none.
    pub fn condition(&self, object: &str, type_: &str) -> String {
        let path = format!("{{.status.conditions[?(@.type==\"{type_}\")].status}}");
        self.jsonpath(&[object], &path)
    }

    /// Guestbook in v1 (with its controller) and v2 (stored), v1's defaulting and validating
    /// webhooks (`webhook_flags` added: the first webhook chooses the certificates), and the
    /// conversions between the two through v2.
    pub fn scaffold_converted_guestbook(&self, webhook_flags: &[&str]) {
        let kind = ["--group", "webapp", "--kind", "Guestbook"];
        let commands: [&[&str]; 4] = [
            &[
                "create",
                "api",
                "--version",
                "v1",
                "--resource",
                "--controller",
            ],
            &[
                "create",
                "api",
                "--version",
                "v2",
                "--storage-version",
                "--resource",
            ],
            &[
                &[
                    "create",
                    "webhook",
                    "--version",
                    "v1",
                    "--defaulting",
                    "--programmatic-validation",
                ][..],
                webhook_flags,
            ]
            .concat(),
            &[
                "create",
                "webhook",
                "--version",
                "v2",
                "--conversion",
                "--spoke",
                "v1",
            ],
        ];
        for command in commands {
            self.scaffold(&[command, &kind].concat());
        }
    }
}

/// A manager started by `make run`.
pub struct Running {
    child: Child,
    pub log: PathBuf,
}

impl Running {
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of its log.
    pub fn tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Stops the manager with SIGTERM, checks that it exits cleanly and that the API server
    /// refused none of its requests (the generated RBAC allows all it does); its log.
    pub fn stop_unforbidden(self) -> String {
        self.signal("TERM");
        let (status, log) = self.wait_exit(30);
        assert!(status.success(), "the manager failed on SIGTERM:\n{log}");
        let forbidden: Vec<&str> = log
            .lines()
            .filter(|l| l.to_lowercase().contains("forbidden") || l.contains(" 403"))
            .collect();
        assert!(
            forbidden.is_empty(),
            "requests the generated RBAC does not allow:\n{}",
            forbidden.join("\n")
        );
        log
    }

    /// Sends `signal` to the whole process group (make, cargo and the manager), as Ctrl-C at
    /// a terminal does for SIGINT.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([
                &format!("-{signal}"),
                "--",
                &format!("-{}", self.child.id()),
            ])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Ctrl-C, then waits at most `seconds` for make to end; its exit status.
    pub fn interrupt(self, seconds: u64) -> (std::process::ExitStatus, String) {
        self.signal("INT");
        self.wait_exit(seconds)
    }

    /// Waits at most `seconds` for the process to end; its exit status and log.
    pub fn wait_exit(mut self, seconds: u64) -> (std::process::ExitStatus, String) {
        let ended = poll(seconds, || self.child.try_wait().unwrap().is_some());
        assert!(
            ended,
            "the manager did not stop within {seconds} s:\n{}",
            self.log()
        );
        (self.child.wait().unwrap(), self.log())
    }

    /// Whether make has ended.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().unwrap().is_none() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .status();
            let _ = self.child.wait();
        }
    }
}

/// helm, from `.tools/bin` (scripts/install-test-tools links it there).
pub fn helm() -> String {
    let helm = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/bin/helm");
    assert!(
        helm.exists(),
        "no helm in .tools/bin: run scripts/install-test-tools"
    );
    helm.to_string_lossy().into_owned()
}

/// `bytes` in base64 (coreutils' `base64`), as Kubernetes writes bytes in JSON.
pub fn base64(bytes: impl AsRef<[u8]>) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    fs::write(file.path(), bytes).unwrap();
    let output = Command::new("base64")
        .arg("-w0")
        .arg(file.path())
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

/// The directory of cert-manager's commands, CRDs and chart, built (and cached) by
/// scripts/cert-manager; with `push`, its images are pushed to that registry too. Missing, it
/// fails the test: never a skip.
pub fn cert_manager(push: Option<&str>) -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cert-manager");
    let mut command = Command::new(&script);
    if let Some(registry) = push {
        command.args(["--push", registry]);
    }
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(output.status.success(), "{} failed", script.display());
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// The bytes of `text` in base64, as a Secret's data holds them.
pub fn unbase64(text: &str) -> Vec<u8> {
    let file = tempfile::NamedTempFile::new().unwrap();
    fs::write(file.path(), text).unwrap();
    let output = Command::new("base64")
        .arg("--decode")
        .arg(file.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "not base64: {text}");
    output.stdout
}

/// Replaces the one `from` in the file at `path` with `to`: a user's edit of a generated file.
pub fn edit(path: &std::path::Path, from: &str, to: &str) {
    let source = fs::read_to_string(path).unwrap();
    assert_eq!(
        source.matches(from).count(),
        1,
        "{}: {from}",
        path.display()
    );
    fs::write(path, source.replace(from, to)).unwrap();
}

/// `text` without its terminal colours (`ESC [ ... m`): cargo colours its output when docker
/// gives it a terminal, a manager its log.
pub fn plain(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                chars.by_ref().find(|&c| c == 'm');
            }
            c => plain.push(c),
        }
    }
    plain
}

/// Whether the last ring a sharded manager's JSON `log` shows its sharder saw ("the live
/// shards changed") holds exactly `shards`. Only the replica that leads logs one.
pub fn sharder_saw(log: &str, shards: &[&str]) -> bool {
    let mut shards = shards.to_vec();
    shards.sort_unstable();
    let want = format!("{shards:?}");
    let mut rings = log
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "the live shards changed");
    rings
        .next()
        .is_some_and(|line| line["fields"]["shards"] == want)
}
