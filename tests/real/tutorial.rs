//! docs/tutorial.md on a real API server: kubebuilder's CronJob built with the tutorial's
//! commands and the user's files of docs/tutorial/cronjob/, checked as the tutorial says
//! ("What the test checks"). Schedules with seconds keep it short.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::control_plane::poll;
use crate::project::{Project, turn};

mod crd;

const NAMESPACE: &str = "project-system";
const TUTORIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tutorial.md");
const FILES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tutorial/cronjob");
const SCHEDULED_AT: &str = "batch.tutorial.kubebuilder.io/scheduled-at";

/// The commands of the tutorial's console blocks, block by block, without the `$ `.
fn commands() -> Vec<Vec<String>> {
    let text = fs::read_to_string(TUTORIAL).unwrap();
    let mut blocks = Vec::new();
    let mut console = None;
    for line in text.lines() {
        match line {
            "```console" => console = Some(Vec::new()),
            "```" => blocks.extend(console.take()),
            _ => {
                if let Some(block) = console.as_mut() {
                    block.extend(line.strip_prefix("$ ").map(String::from));
                }
            }
        }
    }
    blocks
}

/// Runs `commands` in `project` (`kube-scaffold` or `cargo`), then puts in the user's files
/// that the project has by now; the names of those it has not yet.
fn follow(project: &Project, commands: &[String]) -> Vec<String> {
    for command in commands {
        let words: Vec<&str> = command.split(' ').collect();
        match words[0] {
            "kube-scaffold" => project.scaffold(&words[1..]),
            "cargo" => drop(project.run("cargo", &words[1..])),
            other => panic!("a command the test does not know: {other}"),
        }
    }
    copy(Path::new(FILES), &project.dir)
}

/// The tutorial's project, from its first block of commands (`mkdir`, `init`, `create api`).
fn the_tutorials_project(first: &[String]) -> Project {
    assert_eq!(first[0], "mkdir project && cd project", "{first:?}");
    let init = first[1].strip_prefix("kube-scaffold init ").expect("init");
    let project = Project::init("project", &init.split(' ').collect::<Vec<_>>());
    follow(&project, &first[2..]);
    project
}

/// Copies the files under `from` to the same paths under `to`, those that `to` has: the
/// files a user replaces. The names of those it does not have yet.
fn copy(from: &Path, to: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            missing.extend(copy(&path, &target));
        } else if target.exists() {
            fs::copy(&path, &target).unwrap();
        } else {
            missing.push(target.display().to_string());
        }
    }
    missing
}

/// A CronJob called `name` on `schedule`, with more of its spec in `spec` (`key: value`
/// lines). Its Jobs name another controller, so that Kubernetes' leaves them alone.
fn cronjob(name: &str, schedule: &str, spec: &[&str]) -> String {
    let spec = spec.join("\n  ");
    format!(
        "apiVersion: batch.tutorial.kubebuilder.io/v1
kind: CronJob
metadata: {{name: {name}, namespace: default}}
spec:
  schedule: '{schedule}'
  {spec}
  jobTemplate:
    spec:
      managedBy: kube-scaffold.test/nobody
      template:
        spec:
          restartPolicy: Never
          containers: [{{name: hello, image: busybox}}]
---
"
    )
}

/// The time `seconds` after the epoch as RFC 3339 in UTC, as the API server writes times.
fn rfc3339(project: &Project, seconds: i64) -> String {
    let at = format!("@{seconds}");
    project
        .run("date", &["-u", "-d", &at, "+%FT%TZ"])
        .trim()
        .to_string()
}

/// Now, in seconds since the epoch.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn the_tutorials_cronjob_runs_its_jobs_on_schedule() {
    let _turn = turn();
    let blocks = commands();
    let project = the_tutorials_project(&blocks[0]);
    follow(&project, &blocks[1]);
    project.run("make", &["manifests"]);
    the_crd_is_kubebuilders_but_for_named_differences(&project, &["v1"]);
    project.run("make", &["install"]);
    project.wait_established("crd/cronjobs.batch.tutorial.kubebuilder.io");
    let (kubeconfig, _) = project.manager_identity(NAMESPACE);
    project.run("cargo", &["build", "--bin", "project"]);
    let start = || {
        let mut command = project.command(&project.manager(), &[]);
        command
            .env("KUBECONFIG", &kubeconfig)
            .env("POD_NAMESPACE", NAMESPACE);
        project.start(command)
    };
    let apply = |manifest: &str| {
        let output = project.apply(manifest);
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{said}");
    };
    let jobs = |cronjob: &str| {
        let selector = format!("app.kubernetes.io/instance={cronjob}");
        let names = project.kubectl(&[
            "get",
            "jobs",
            "-n",
            "default",
            "-l",
            &selector,
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ]);
        let mut names: Vec<String> = names.split_whitespace().map(String::from).collect();
        names.sort();
        names
    };
    let status = |cronjob: &str, path: &str| {
        let object = format!("cronjobs.batch.tutorial.kubebuilder.io/{cronjob}");
        project.jsonpath(&[&object, "-n", "default"], path)
    };

    // Two CronJobs made while the manager is down, every 10 s; one may start 2 s late at
    // most. The manager comes back 4 s past a scheduled time.
    apply(
        &[
            cronjob("eager", "*/10 * * * * *", &["concurrencyPolicy: Allow"]),
            cronjob("late", "*/10 * * * * *", &["startingDeadlineSeconds: 2"]),
        ]
        .concat(),
    );
    let created = now();
    let missed = (created / 10 + 1) * 10;
    assert!(poll(20, || now() >= missed + 4));
    let manager = start();
    let log = || manager.log();
    let eager = format!("eager-{missed}");
    let objects = || {
        let kinds = "cronjobs.batch.tutorial.kubebuilder.io,jobs";
        let all = project.kubectl(&["get", kinds, "-n", "default", "-o", "yaml"]);
        format!("{all}\n{}", manager.log())
    };
    project.wait("the missed run started late", 30, objects, || {
        jobs("eager").contains(&eager)
    });
    assert!(
        !jobs("late").contains(&format!("late-{missed}")),
        "a run past its starting deadline was started: {:?}",
        jobs("late")
    );
    // The Job: named by its time, annotated with it, owned; the status names it.
    let job = project.kubectl(&["get", "job", &eager, "-n", "default", "-o", "json"]);
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    let at = job["metadata"]["annotations"][SCHEDULED_AT]
        .as_str()
        .unwrap();
    let time = rfc3339(&project, missed);
    assert_eq!(at, time, "{job}");
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "CronJob", "{owner}");
    assert_eq!(owner["name"], "eager", "{owner}");
    assert_eq!(owner["controller"], true, "{owner}");
    project.wait("eager's status lists its Job", 30, log, || {
        status("eager", "{.status.active[*].name}").contains(&eager)
    });
    assert_eq!(status("eager", "{.status.lastScheduleTime}"), time);

    // Forbid, Replace, suspend: every 4 s.
    apply(
        &[
            cronjob(
                "forbid",
                "*/4 * * * * *",
                &["concurrencyPolicy: Forbid", "successfulJobsHistoryLimit: 1"],
            ),
            cronjob("replace", "*/4 * * * * *", &["concurrencyPolicy: Replace"]),
            cronjob("paused", "*/2 * * * * *", &["suspend: true"]),
        ]
        .concat(),
    );
    project.wait("forbid's first Job", 30, log, || jobs("forbid").len() == 1);
    project.wait("replace's first Job", 30, log, || {
        jobs("replace").len() == 1
    });
    let first = jobs("forbid")[0].clone();
    let replaced = jobs("replace")[0].clone();
    // Two scheduled times later: no second Job while the first runs; the first replaced.
    std::thread::sleep(Duration::from_secs(9));
    assert_eq!(
        jobs("forbid"),
        std::slice::from_ref(&first),
        "Forbid started a second Job"
    );
    project.wait("replace's Job replaced", 30, log, || {
        let now = jobs("replace");
        now.len() == 1 && now[0] != replaced
    });
    assert!(
        jobs("paused").is_empty(),
        "a suspended CronJob started a Job"
    );
    assert_eq!(
        project.condition("cronjobs.batch.tutorial.kubebuilder.io/paused", "Available"),
        "False"
    );

    // The first Job finishes: it leaves `active`, a second starts; when that one finishes,
    // the history limit of 1 deletes the first.
    let finish = |job: &str, started: i64| {
        let (start, end) = (rfc3339(&project, started), rfc3339(&project, started + 1));
        let conditions = ["SuccessCriteriaMet", "Complete"].map(|type_| {
            format!(
                r#"{{"type":"{type_}","status":"True","lastProbeTime":"{end}","lastTransitionTime":"{end}"}}"#
            )
        });
        let patch = format!(
            r#"{{"status":{{"startTime":"{start}","completionTime":"{end}","succeeded":1,"conditions":[{}]}}}}"#,
            conditions.join(",")
        );
        project.kubectl(&[
            "patch",
            "job",
            job,
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ]);
    };
    finish(&first, now() - 60);
    project.wait(
        "the finished Job out of active, a second one",
        30,
        log,
        || {
            let active = status("forbid", "{.status.active[*].name}");
            jobs("forbid").len() == 2 && !active.contains(&first)
        },
    );
    let second = jobs("forbid")
        .into_iter()
        .find(|job| *job != first)
        .unwrap();
    finish(&second, now() - 30);
    project.wait("the oldest finished Job deleted", 30, log, || {
        !jobs("forbid").contains(&first)
    });
    assert!(jobs("forbid").contains(&second), "{:?}", jobs("forbid"));

    let log = manager.stop_unforbidden();
    assert!(!log.contains("panicked"), "{log}");

    // The webhooks and multiversion chapters: the project, complete, passes its checks and
    // its tests.
    follow(&project, &blocks[2]);
    let missing = follow(&project, &blocks[3]);
    assert!(
        missing.is_empty(),
        "files the tutorial's commands do not make: {missing:?}"
    );
    project.run("make", &["manifests", "install"]);
    the_crd_is_kubebuilders_but_for_named_differences(&project, &["v1", "v2"]);
    project.run("make", &["lint"]);
    project.run("make", &["test"]);
    let assets = format!("KUBEBUILDER_ASSETS={}", project.plane.assets.display());
    project.run("make", &["test-integration", &assets]);
    project.build_for_make_run();
    let webhooks = "WEBHOOK_LOCAL_URL=https://127.0.0.1:9443";
    let manager = project.start(project.command("make", &["run", webhooks]));
    project.wait_local_webhooks(&manager);
    // The defaulter fills in what a CronJob leaves unset.
    apply(&cronjob("defaulted", "@hourly", &[]));
    let spec = "{.spec.suspend} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit}";
    assert_eq!(status("defaulted", spec), "false 3 1");
    assert_eq!(status("defaulted", "{.spec.concurrencyPolicy}"), "Allow");
    // The validator refuses a schedule that does not parse and a name too long for its Jobs.
    let long = "x".repeat(53);
    for (name, schedule, why) in [
        (
            "bad",
            "every day",
            r#"spec.schedule: Invalid value: "every day""#,
        ),
        (&long, "@hourly", "must be no more than 52 characters"),
    ] {
        let output = project.apply(&cronjob(name, schedule, &[]));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && said.contains(why), "{said}");
    }
    // v1 and v2, through the conversion webhook: nothing lost either way.
    let v1 = |name: &str| format!("cronjobs.v1.batch.tutorial.kubebuilder.io/{name}");
    let v2 = |name: &str| format!("cronjobs.v2.batch.tutorial.kubebuilder.io/{name}");
    let read = |object: &str, path: &str| project.jsonpath(&[object, "-n", "default"], path);
    let schedules = [
        (
            "weekdays",
            "0 3 * * 1-5",
            r#"{"dayOfWeek":"1-5","hour":"3","minute":"0"}"#,
        ),
        ("hourly", "@hourly", "{}"),
        ("seconds", "*/10 * * * * *", "{}"),
    ];
    for (name, schedule, _) in schedules {
        apply(&cronjob(name, schedule, &[]));
    }
    for (name, schedule, struct_) in schedules {
        assert_eq!(read(&v2(name), "{.spec.schedule}"), struct_, "{name}");
        let kept = read(&v2(name), "{.metadata.annotations}");
        assert_eq!(kept.contains(schedule), struct_ == "{}", "{name}: {kept}");
        assert_eq!(read(&v1(name), "{.spec.schedule}"), schedule, "{name}");
        assert_eq!(read(&v1(name), "{.metadata.annotations}"), "", "{name}");
    }
    let written = cronjob("starred", "", &[])
        .replace(
            "batch.tutorial.kubebuilder.io/v1",
            "batch.tutorial.kubebuilder.io/v2",
        )
        .replace("schedule: ''", "schedule: {minute: '*', hour: '4'}");
    apply(&written);
    assert_eq!(read(&v1("starred"), "{.spec.schedule}"), "* 4 * * *");
    let starred = read(&v2("starred"), "{.spec.schedule}");
    assert_eq!(starred, r#"{"hour":"4","minute":"*"}"#);
    // Deleted while the conversion webhook answers: the API server reads them through it.
    project.kubectl(&[
        "delete",
        "cronjobs.batch.tutorial.kubebuilder.io",
        "--all",
        "-A",
        "--wait=false",
    ]);
    let (_, log) = manager.interrupt(20);
    assert!(!log.contains("panicked"), "{log}");
    project.run("make", &["uninstall"]);
}

/// The tutorial's CRD against kubebuilder's, in `versions`: every difference of the schemas
/// is one of `crd::NAMED`; the names, group and scope are the same but for `listKind`, which
/// the API server defaults to the same `CronJobList`.
#[allow(clippy::print_stderr)]
fn the_crd_is_kubebuilders_but_for_named_differences(project: &Project, versions: &[&'static str]) {
    let file = "config/crd/bases/batch.tutorial.kubebuilder.io_cronjobs.yaml";
    let ours = fs::read_to_string(project.dir.join(file)).unwrap();
    let mut named = vec![0; crd::NAMED.len()];
    let mut unnamed = Vec::new();
    for difference in crd::differences(&ours, versions) {
        match crd::NAMED.iter().position(|(_, names)| names(&difference)) {
            Some(reason) => named[reason] += 1,
            None => unnamed.push(difference),
        }
    }
    assert!(
        unnamed.is_empty(),
        "differences from kubebuilder's CRD:\n{unnamed:#?}"
    );
    for ((why, _), count) in crd::NAMED.iter().zip(named) {
        eprintln!("{count:4} {why}");
    }
    let crd: serde_json::Value = serde_saphyr::from_str(&ours).unwrap();
    let names = &crd["spec"]["names"];
    assert_eq!(names["kind"], "CronJob");
    assert_eq!(names["plural"], "cronjobs");
    assert_eq!(names["singular"], "cronjob");
    assert_eq!(names["listKind"], serde_json::Value::Null);
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["group"], "batch.tutorial.kubebuilder.io");
}
