//! The README's sequence on a real API server: `init`, `create api`, `make manifests install
//! run`, the samples reach `Available`, Ctrl-C stops the manager, `make uninstall` deletes
//! every object and the CRDs within `DELETE_TIMEOUT`; a finalizer is removed by the running
//! manager, and `make uninstall` without one stops with `error:` and `help:` in time.

use std::time::{Duration, Instant};

use crate::project::{Project, turn};

#[test]
fn the_readme_sequence_installs_runs_and_uninstalls() {
    let _turn = turn();
    let project = Project::init("guestbook", &["--domain", "mock.com"]);
    project.create_api("webapp", "Guestbook", &[]);
    project.create_api("webapp", "Ledger", &["--finalizer"]);
    project.run("make", &["manifests", "install"]);
    for crd in ["guestbooks.webapp.mock.com", "ledgers.webapp.mock.com"] {
        project.wait_established(&format!("crd/{crd}"));
    }
    // Build first: `make run` would compile while the test's clock runs.
    project.build_for_make_run();

    let manager = project.start_run(&[]);
    project.kubectl(&["apply", "-k", "config/samples"]);
    // Full names: a test that failed before this one may have left another group's Ledgers,
    // and `ledger/...` would name theirs.
    const LEDGER: &str = "ledgers.webapp.mock.com/ledger-sample";
    let objects = ["guestbooks.webapp.mock.com/guestbook-sample", LEDGER];
    for object in objects {
        project.wait(
            &format!("{object} Available"),
            60,
            || manager.log(),
            || project.condition(object, "Available") == "True",
        );
    }
    // The running manager put its finalizer on the Ledger and removes it when it is deleted.
    let finalizers = project.jsonpath(&[LEDGER], "{.metadata.finalizers}");
    assert!(
        finalizers.contains("webapp.mock.com/"),
        "no finalizer of the project: {finalizers}"
    );
    project.kubectl(&["delete", LEDGER, "--timeout=30s"]);

    // Ctrl-C stops the manager (make reports the interrupt).
    project.kubectl(&["apply", "-k", "config/samples"]);
    project.wait(
        "the Ledger gets its finalizer again",
        30,
        || manager.log(),
        || project.condition(LEDGER, "Available") == "True",
    );
    let started = Instant::now();
    let (_, log) = manager.interrupt(20);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!log.contains("panicked"), "the manager panicked:\n{log}");

    // With the manager stopped, the Ledger's finalizer holds: uninstall stops in time.
    let started = Instant::now();
    let output = project.output("make", &["uninstall", "DELETE_TIMEOUT=5s"]);
    let said = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "uninstall succeeded with a finalizer left:\n{said}"
    );
    assert!(
        said.contains("error: objects of ledgers.webapp.mock.com were not deleted within 5s"),
        "{said}"
    );
    assert!(said.contains("help: make sure the manager runs"), "{said}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "uninstall took {:?}",
        started.elapsed()
    );
    assert!(
        project
            .kubectl_output(&["get", "crd", "ledgers.webapp.mock.com"])
            .status
            .success(),
        "uninstall deleted the CRD of objects it could not delete"
    );

    // The manager running again, uninstall deletes everything, the CRDs last.
    let manager = project.start_run(&[]);
    let started = Instant::now();
    project.run("make", &["uninstall", "DELETE_TIMEOUT=30s"]);
    assert!(started.elapsed() < Duration::from_secs(60));
    for crd in ["guestbooks.webapp.mock.com", "ledgers.webapp.mock.com"] {
        let output =
            project.kubectl_output(&["get", "crd", crd, "--ignore-not-found", "-o", "name"]);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "",
            "{crd} is still installed"
        );
    }
    manager.interrupt(20);

    // `make dev`: it installs the CRDs and runs the manager; a save of the Guestbook's type
    // rebuilds, installs the changed CRD and restarts the manager; Ctrl-C stops it all.
    let dev = project.start(project.command("make", &["dev"]));
    let started = "starting controllers";
    project.wait(
        "make dev runs the manager",
        120,
        || dev.log(),
        || dev.log().matches(started).count() == 1,
    );
    let schema = || {
        project.jsonpath(
            &["crd", "guestbooks.webapp.mock.com"],
            "{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties}",
        )
    };
    assert!(!schema().contains("replicas"), "{}", schema());
    crate::project::edit(
        &project.dir.join("src/api/webapp/v1/guestbook.rs"),
        "    pub foo: Option<String>,\n",
        "    pub foo: Option<String>,\n    #[serde(default)]\n    pub replicas: i32,\n",
    );
    project.wait(
        "make dev restarts the manager after the save",
        180,
        || dev.log(),
        || dev.log().matches(started).count() == 2,
    );
    assert!(
        schema().contains("replicas"),
        "the CRD was not installed again: {}",
        schema()
    );
    // entr runs each round in a process group of its own and stops it with SIGTERM on Ctrl-C.
    let (_, log) = dev.interrupt(30);
    let left = project.output("pgrep", &["-f", &format!("^{}", project.manager())]);
    assert!(
        left.stdout.is_empty(),
        "a manager outlived make dev: {}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(!log.contains("panicked"), "the manager panicked:\n{log}");
    assert!(
        log.contains("shutting down"),
        "the manager did not stop on Ctrl-C:\n{log}"
    );
    project.run("make", &["uninstall"]);
}
