//! The autoupdate plugin's workflow, its script run here as GitHub Actions would run it: with
//! the real git and kube-scaffold, in a clone of a 0.2.0 project whose remote is a local bare
//! repository, and a stand-in for GitHub's `gh` that records what it was asked (no GitHub here).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::{copy_of, empty_dir, kube_scaffold};

/// The `run:` script of the workflow's upgrade step, as `init --plugins autoupdate/v1-alpha`
/// writes it.
fn upgrade_script() -> String {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--plugins", "autoupdate/v1-alpha"]).success();
    let text = fs::read_to_string(dir.join(".github/workflows/auto_update.yml")).unwrap();
    let workflow: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let steps = workflow["jobs"]["upgrade"]["steps"].as_array().unwrap();
    let step = steps
        .iter()
        .find(|s| s["name"] == "Upgrade, and propose the result");
    step.unwrap()["run"].as_str().unwrap().to_string()
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs the script in a committed copy of a 0.2.0 project (`edit` changes it first); the
/// script's exit status, what `gh` was asked, and the remote.
fn run_workflow(edit: impl Fn(&Path)) -> (bool, String, tempfile::TempDir, std::path::PathBuf) {
    let script = upgrade_script();
    let (tmp, dir) = copy_of("fixtures/v0.2.0/two-kinds");
    edit(&dir);
    let remote = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-qm", "0.2.0"]);
    git(&dir, &["remote", "add", "origin", remote.to_str().unwrap()]);
    // PATH: this kube-scaffold, and a `gh` that writes its arguments down.
    let bin = tmp.path().join("bin");
    fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_kube-scaffold"),
        bin.join("kube-scaffold"),
    )
    .unwrap();
    let asked = tmp.path().join("gh.log");
    let gh = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n",
        asked.display()
    );
    fs::write(bin.join("gh"), gh).unwrap();
    Command::new("chmod")
        .args(["+x", bin.join("gh").to_str().unwrap()])
        .status()
        .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let status = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(&dir)
        .env("PATH", path)
        .env("RUNNER_TEMP", tmp.path())
        .env("SOURCE_DATE_EPOCH", "1795219200")
        .status()
        .unwrap();
    let asked = fs::read_to_string(&asked).unwrap_or_default();
    (status.success(), asked, tmp, remote)
}

#[test]
fn a_clean_upgrade_is_pushed_and_proposed_as_a_pull_request() {
    let (ok, asked, _tmp, remote) = run_workflow(|_| {});
    assert!(ok, "the workflow's script failed");
    assert!(
        asked.starts_with("pr create --head kube-scaffold/upgrade"),
        "{asked}"
    );
    let log = git(&remote, &["log", "--format=%s", "kube-scaffold/upgrade"]);
    assert!(
        log.starts_with("Upgrade the scaffold to kube-scaffold "),
        "{log}"
    );
    let files = git(
        &remote,
        &["show", "--stat", "--format=", "kube-scaffold/upgrade"],
    );
    assert!(files.contains("kube-scaffold-runtime/"), "{files}");
    assert!(!files.contains("upgrade.log"), "{files}");
}

#[test]
fn an_upgrade_with_conflicts_is_pushed_and_reported_as_an_issue() {
    // A line the new scaffold changes, changed by the user too.
    let (ok, asked, _tmp, remote) = run_workflow(|dir| {
        let path = dir.join("Dockerfile");
        let text = fs::read_to_string(&path).unwrap();
        let edited = text.replacen(
            "cargo build --release --bin guestbook",
            "cargo build --release --features fast --bin guestbook",
            1,
        );
        assert_ne!(edited, text);
        fs::write(&path, edited).unwrap();
    });
    assert!(ok, "the workflow's script failed");
    assert!(
        asked.starts_with("issue create --title Upgrading the scaffold"),
        "{asked}"
    );
    assert!(asked.contains("conflict Dockerfile"), "{asked}");
    let dockerfile = git(&remote, &["show", "kube-scaffold/upgrade:Dockerfile"]);
    assert!(dockerfile.contains("<<<<<<< yours"), "{dockerfile}");
}
