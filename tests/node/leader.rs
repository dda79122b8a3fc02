//! The manager's two replicas on the node: /metrics as Prometheus scrapes it, pod by pod and
//! through the metrics Service (200 with a token of the `metrics-reader` role, 401 without);
//! the leader counts reconciles; when the leader's pod is deleted another leads (the standby or
//! the deleted pod's replacement), and at no moment do two pods report
//! `leader_election_master_status 1`. A leader cut from the API server (iptables drops its
//! packets) stops leading, by its own log, before the standby leads, by its log.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::control_plane::poll;
use crate::deploy::{self, pod_ips};
use crate::project::{Project, turn};
use crate::ship::{NAMESPACE, ship};

const GAUGE: &str = "leader_election_master_status{name=\"ship-leader-election\"}";

#[test]
fn metrics_are_served_to_readers_and_one_pod_leads_through_a_failover() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    ship.deploy();
    let token = reader_token(project);

    // Through the Service, and from each pod behind it.
    let service = project.jsonpath(
        &[
            "service",
            "-n",
            NAMESPACE,
            "ship-controller-manager-metrics-service",
        ],
        "{.spec.clusterIP}",
    );
    // kube-proxy writes the Service's rules a moment after its endpoints are ready: until
    // then, no answer at all (seen once in a cold run).
    let answered = || scrape(&service, None).0 != 0;
    project.wait("the metrics Service answers", 30, String::new, answered);
    let (status, _) = scrape(&service, None);
    assert_eq!(status, 401, "the Service's /metrics without a token");
    let (status, text) = scrape(&service, Some(&token));
    assert_eq!(
        status, 200,
        "the Service's /metrics with a reader's token:\n{text}"
    );
    let leader = deploy::leader(project);
    let ips = pod_ips(project);
    assert_eq!(ips.len(), 2, "{ips:?}");
    for (pod, ip) in &ips {
        assert_eq!(scrape(ip, None).0, 401, "{pod}'s /metrics without a token");
        let (status, text) = scrape(ip, Some(&token));
        assert_eq!(status, 200, "{pod}'s /metrics:\n{text}");
        let leading = gauge(&text, GAUGE);
        assert_eq!(
            leading,
            Some(u64::from(*pod == leader)),
            "{pod} (leader {leader}):\n{text}"
        );
    }

    // The leader reconciles a sample and counts it; the standby does not.
    let sample = "guestbooks.v1.webapp.node.example/guestbook-sample";
    project.kubectl(&[
        "apply",
        "-n",
        "default",
        "-f",
        "config/samples/webapp_v1_guestbook.yaml",
    ]);
    let success = "controller_runtime_reconcile_total{controller=\"guestbook\",result=\"success\"}";
    let (leader_ip, standby_ip) = split(&ips, &leader);
    project.wait("the leader counts a reconcile", 60, String::new, || {
        gauge(&scrape(&leader_ip, Some(&token)).1, success).is_some_and(|n| n > 0)
    });
    let standby = scrape(&standby_ip, Some(&token)).1;
    assert!(
        gauge(&standby, success).is_none_or(|n| n == 0),
        "the standby reconciled:\n{standby}"
    );

    // The leader's pod deleted: another pod leads (the standby, or the pod that replaces the
    // deleted one, whichever asks first), and never two at once. Each round reads the other
    // pods, then the old leader, whose gauge only goes from 1 to 0: a new leader at 1 and
    // the old one at 1 after it means both led at the old one's read.
    let deleting = Command::new(project.plane.kubectl_binary())
        .arg("--kubeconfig")
        .arg(&project.plane.admin)
        .args(["delete", "pod", "-n", NAMESPACE, &leader, "--wait=false"])
        .output()
        .unwrap();
    assert!(deleting.status.success());
    let deleted = Instant::now();
    let mut took_over = false;
    while deleted.elapsed() < Duration::from_secs(60) {
        let others = pod_ips(project);
        let leading: Vec<&str> = others
            .iter()
            .filter(|(pod, ip)| {
                *pod != leader && gauge(&scrape(ip, Some(&token)).1, GAUGE) == Some(1)
            })
            .map(|(pod, _)| pod.as_str())
            .collect();
        let old = gauge(&scrape(&leader_ip, Some(&token)).1, GAUGE);
        assert!(leading.len() <= 1, "{leading:?} all report that they lead");
        assert!(
            leading.is_empty() || old != Some(1),
            "{leader} and {leading:?} both report that they lead"
        );
        took_over |= !leading.is_empty();
        // Until the old pod is gone (it drains its webhooks first).
        if took_over && old.is_none() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        took_over,
        "no other pod led; the lease: {}\nthe pods: {}",
        project.kubectl(&["get", "lease", "-n", NAMESPACE, "-o", "yaml"]),
        project.kubectl(&["get", "pods", "-n", NAMESPACE, "-o", "wide"]),
    );
    assert_ne!(
        deploy::leader(project),
        leader,
        "the lease stayed with the deleted pod"
    );

    project.kubectl(&["delete", "-n", "default", sample, "--timeout=60s"]);
    ship.make(&["undeploy"]);
}

/// A token of a ServiceAccount bound to the project's `metrics-reader` ClusterRole, as
/// Prometheus has.
fn reader_token(project: &Project) -> String {
    let _ = project.kubectl_output(&["create", "serviceaccount", "prometheus", "-n", "default"]);
    let _ = project.kubectl_output(&[
        "create",
        "clusterrolebinding",
        "prometheus-ship-metrics",
        "--clusterrole=ship-metrics-reader",
        "--serviceaccount=default:prometheus",
    ]);
    project
        .kubectl(&["create", "token", "prometheus", "-n", "default"])
        .trim()
        .to_string()
}

/// The leader's and the other pod's IPs.
fn split(ips: &[(String, String)], leader: &str) -> (String, String) {
    let find = |lead: bool| {
        ips.iter()
            .find(|(p, _)| (p == leader) == lead)
            .unwrap()
            .1
            .clone()
    };
    (find(true), find(false))
}

/// `GET https://<ip>:8443/metrics`, with `token` if given: the status (0 if nothing
/// answered) and the body.
fn scrape(ip: &str, token: Option<&str>) -> (u16, String) {
    let mut curl = Command::new("curl");
    curl.args(["-sk", "--max-time", "2", "-w", "\n%{http_code}"]);
    if let Some(token) = token {
        curl.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    let output = curl
        .arg(format!("https://{ip}:8443/metrics"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.trim().parse().unwrap_or(0), body.to_string())
}

/// The value of the series `series` in a /metrics text, if it is there.
fn gauge(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
}

/// Removes an iptables rule of the host when dropped, however the test ends.
struct Rule(Vec<String>);

impl Rule {
    /// Inserts `rule` (`<chain> <match...> -j <target>`) at the top of its chain.
    fn insert(rule: &[&str]) -> Self {
        let rule: Vec<String> = rule.iter().map(|s| s.to_string()).collect();
        let status = Command::new("iptables")
            .arg("-I")
            .args(&rule)
            .status()
            .unwrap();
        assert!(status.success(), "iptables -I {rule:?}");
        Rule(rule)
    }
}

impl Drop for Rule {
    fn drop(&mut self) {
        let _ = Command::new("iptables").arg("-D").args(&self.0).status();
    }
}

/// `kubectl` arguments for the log of `pod`'s manager, with the container runtime's times.
fn logs(pod: &str) -> [&str; 7] {
    [
        "logs",
        "-n",
        NAMESPACE,
        pod,
        "-c",
        "manager",
        "--timestamps",
    ]
}

/// `kubectl logs --follow --timestamps` of a pod's manager container, read as it runs.
struct Follow {
    child: Child,
    read: std::thread::JoinHandle<String>,
}

impl Follow {
    fn start(project: &Project, pod: &str) -> Self {
        let mut child = project
            .plane
            .kubectl_as(&project.plane.admin)
            .args(logs(pod))
            .arg("--follow")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let read = std::thread::spawn(move || {
            let mut log = String::new();
            let _ = stdout.read_to_string(&mut log);
            log
        });
        Follow { child, read }
    }

    /// What it read, once the container has ended (kubelet then ends the stream) or after
    /// `seconds`.
    fn finish(mut self, seconds: u64) -> String {
        if !poll(seconds, || self.child.try_wait().unwrap().is_some()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        self.read.join().unwrap()
    }
}

/// The seconds since the epoch of the first (`last`: the last) line of `log` (`kubectl logs
/// --timestamps`, the container runtime's clock) that contains `text`.
fn logged_at(log: &str, text: &str, last: bool) -> Option<f64> {
    let mut lines = log.lines().filter(|l| l.contains(text));
    let line = if last {
        lines.next_back()
    } else {
        lines.next()
    }?;
    let stamp = line.split_whitespace().next()?;
    let output = Command::new("date")
        .args(["-d", stamp, "+%s.%N"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

// It prints what it measured (`cargo test -- --nocapture` shows it).
#[allow(clippy::print_stderr)]
#[test]
fn a_leader_cut_from_the_api_server_stops_before_the_standby_leads() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    ship.deploy();
    let leader = deploy::leader(project);
    let ips = pod_ips(project);
    let (leader_ip, _) = split(&ips, &leader);
    let standby = ips
        .iter()
        .find(|(pod, _)| *pod != leader)
        .unwrap()
        .0
        .clone();
    let port = project.plane.server.rsplit(':').next().unwrap().to_string();
    // The leader's log, followed from before the cut: once its container has ended, kubelet
    // may remove it before `logs --previous` reads it (seen in CI: "unable to retrieve
    // container logs"), while a follower gets every line and ends with the container.
    let followed = Follow::start(project, &leader);

    // The leader's packets to the API server (the `kubernetes` Service, DNATed to the node's
    // address) dropped: a cut network, not a refusal.
    let cut_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let cut = Rule::insert(&[
        "INPUT", "-s", &leader_ip, "-p", "tcp", "--dport", &port, "-j", "DROP",
    ]);
    let holder = || {
        project.jsonpath(
            &["lease", "-n", NAMESPACE, "ship-leader-election"],
            "{.spec.holderIdentity}",
        )
    };
    project.wait("the standby leads", 90, holder, || {
        holder().starts_with(&standby)
    });
    let restarts = || {
        project.jsonpath(
            &["pod", "-n", NAMESPACE, &leader],
            "{.status.containerStatuses[0].restartCount}",
        )
    };
    project.wait("the cut leader stops", 90, restarts, || restarts() != "0");
    drop(cut);

    let old = followed.finish(30);
    let new = project.kubectl(&logs(&standby));
    let stopped = logged_at(&old, "stopped leading", true).unwrap_or_else(|| {
        panic!(
            "the cut leader never logged that it stopped leading (restarts: {}):\n{old}",
            restarts()
        )
    });
    let led = logged_at(&new, "became the leader", true)
        .unwrap_or_else(|| panic!("the standby never logged that it leads:\n{new}"));
    eprintln!(
        "a leader cut from the API server: it stopped leading {:.1} s after the cut, the standby led from {:.1} s",
        stopped - cut_at,
        led - cut_at
    );
    assert!(
        stopped < led,
        "two leaders: the standby led at {led}, the cut leader stopped at {stopped}"
    );
    ship.rollout();
}
