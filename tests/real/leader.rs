//! Leader election between two managers on a real API server's Lease: the leader frozen with
//! SIGSTOP loses the lease to the standby within the lease duration, and exits when it runs
//! again; SIGTERM makes the new leader release the lease.

use std::time::{Duration, Instant};

use crate::control_plane::free_port;
use crate::project::{Project, Running, turn};

const LEASE: &str = "lease/leader-leader-election";

#[test]
fn a_frozen_leader_loses_the_lease_to_the_standby() {
    let _turn = turn();
    let project = Project::init("leader", &["--domain", "leader.example"]);
    project.create_api("webapp", "Guestbook", &["--resource", "--controller"]);
    project.run("make", &["manifests", "install"]);
    project.run("cargo", &["build", "--bin", "leader"]);
    let start = |identity: &str| -> Running {
        let (health, metrics) = (format!(":{}", free_port()), format!(":{}", free_port()));
        let args = [
            "--leader-elect",
            "--leader-election-namespace=default",
            "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=1s",
            "--health-probe-bind-address",
            &health,
            "--metrics-bind-address",
            &metrics,
            "--webhook-bind-address=0",
        ];
        let mut command = project.command(&project.manager(), &args);
        // A candidate is its host name (the pod's) and a random suffix.
        command.env("HOSTNAME", identity);
        project.start(command)
    };
    let holder = || {
        let holder = project.jsonpath(&[LEASE], "{.spec.holderIdentity}");
        // `first_3f9c...` -> `first`
        holder.split('_').next().unwrap_or_default().to_string()
    };

    let first = start("first");
    project.wait(
        "the first manager leads",
        30,
        || first.log(),
        || holder() == "first",
    );
    let second = start("second");
    project.wait(
        "the second manager waits",
        30,
        || second.log(),
        || second.log().contains("waiting to lead"),
    );
    // The first renews its lease twice while the second waits: a standby that took a renewed
    // lease would hold it by then.
    let renewed = || project.jsonpath(&[LEASE], "{.spec.renewTime}");
    for _ in 0..2 {
        let seen = renewed();
        project.wait(
            "the first renews its lease",
            10,
            || first.log(),
            || renewed() != seen,
        );
    }
    assert_eq!(
        holder(),
        "first",
        "the standby took a lease that was renewed:\n{}",
        second.log()
    );

    // Frozen: no renewal; the standby takes over once the lease duration has passed.
    first.signal("STOP");
    let frozen = Instant::now();
    project.wait(
        "the standby takes the lease",
        20,
        || second.log(),
        || holder() == "second",
    );
    let took = frozen.elapsed();
    assert!(
        took >= Duration::from_secs(3),
        "taken after {took:?}, before the lease ran out"
    );
    assert!(second.log().contains("starting controllers"));

    // Thawed, the old leader finds its lease gone and exits, so that one replica reconciles.
    first.signal("CONT");
    let (status, log) = first.wait_exit(20);
    assert!(!status.success(), "the old leader went on:\n{log}");
    assert!(log.contains("only one replica reconciles"), "{log}");

    // SIGTERM: the leader gives the lease up on its way out.
    second.signal("TERM");
    let (status, log) = second.wait_exit(20);
    assert!(status.success(), "{log}");
    assert_eq!(holder(), "", "the lease was not released:\n{log}");
    project.run("make", &["uninstall"]);
}
