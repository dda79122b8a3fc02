//! Running the binary in temporary projects, and comparing whole trees.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use assert_cmd::Command;

use crate::generated_build::{BUILD_ENV, target_dir};

/// 2026-11-21: license headers in golden trees carry this year, whenever the tests run.
pub const SOURCE_DATE_EPOCH: &str = "1795219200";

/// `kube-scaffold ARGS` in `dir`, with no terminal and a fixed date.
pub fn kube_scaffold(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("kube-scaffold")
        .expect("the binary is built")
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .args(args)
        .assert()
}

/// A tool from `.tools/bin` (where scripts/install-test-tools puts it) or the PATH.
pub fn tool(name: &str) -> PathBuf {
    let local = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".tools/bin")
        .join(name);
    if local.exists() {
        return local;
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        })
        .unwrap_or_default();
    on_path.unwrap_or_else(|| panic!("`{name}` is not installed: run `scripts/install-test-tools`"))
}

/// Runs `program args` in `dir` (a generated project: the shared target directory); panics with its output unless it succeeds.
pub fn run(dir: &Path, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Output {
    run_with(dir, program, args, &[])
}

/// `run`, with `env` set.
pub fn run_with(
    dir: &Path,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let program = program.as_ref();
    let output = std::process::Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .envs(BUILD_ENV)
        .env("CARGO_TERM_COLOR", "never")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
    assert!(
        output.status.success(),
        "`{} {}` failed in {}:\n--- stdout\n{}\n--- stderr\n{}",
        program.to_string_lossy(),
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `kube-scaffold ARGS` in `dir` is refused as bad input must be: exit code `code`, `message`
/// and an `error:` line on stderr (and a `help:` line for a user's error, code 1), and the
/// directory byte for byte as it was. Returns stderr, for more checks.
pub fn assert_refused(dir: &Path, args: &[&str], code: i32, message: &str) -> String {
    let before = tree(dir);
    let assert = kube_scaffold(dir, args).code(code);
    let stderr = stderr_of(&assert);
    assert!(
        stderr.contains(message),
        "`{}`: stderr lacks `{message}`:\n{stderr}",
        args.join(" ")
    );
    let has_error_line = stderr.lines().any(|l| l.starts_with("error: "));
    assert!(
        has_error_line,
        "`{}`: no `error:` line:\n{stderr}",
        args.join(" ")
    );
    if code == 1 {
        assert!(
            stderr.contains("\nhelp: "),
            "`{}`: no `help:` line:\n{stderr}",
            args.join(" ")
        );
    }
    assert!(
        tree(dir) == before,
        "`{}` changed the directory",
        args.join(" ")
    );
    stderr
}

/// The generated projects share one target directory, and every one has a `crdgen` binary:
/// two building at once would overwrite each other's. They build one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The turn of a test that builds a generated project.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A temporary directory holding an empty directory named `name` (the default project name).
pub fn empty_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join(name);
    fs::create_dir(&dir).expect("create the project directory");
    (tmp, dir)
}

/// A project made by `init --domain mock.com` in a directory named `guestbook`.
pub fn initialized() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
    (tmp, dir)
}

/// A CRD shaped like cert-manager's Certificate: another project's kind.
pub const CERTIFICATE_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crds/certificate.yaml"
);
/// A CRD with two versions, for `create api --from-crd`.
pub const BACKUP_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crds/backup.yaml"
);
/// A CRD shaped like zalando's `postgresql`: another project's kind that starts lowercase.
pub const POSTGRESQL_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/crds/postgresql.yaml"
);
/// cert-manager's Certificate, as `--group/--version/--kind` arguments.
pub const CERTIFICATE: &[&str] = &[
    "--group",
    "cert-manager.io",
    "--version",
    "v1",
    "--kind",
    "Certificate",
];
/// The kind adopted from tests/fixtures/crds/backup.yaml, as `--group/--version/--kind`.
pub const BACKUP: &[&str] = &[
    "--group",
    "ops.example.org",
    "--version",
    "v1",
    "--kind",
    "Backup",
];
/// `create api` of a controller for cert-manager's Certificate, its types from its CRD.
pub const CERTIFICATE_CONTROLLER: &[&str] = &[
    "create",
    "api",
    "--group",
    "cert-manager.io",
    "--version",
    "v1",
    "--kind",
    "Certificate",
    "--controller",
    "--resource=false",
    "--external-api-crd",
    CERTIFICATE_CRD,
];

/// The kind `with_guestbook` makes, as `--group/--version/--kind` arguments.
pub const GUESTBOOK: [&str; 6] = [
    "--group",
    "webapp",
    "--version",
    "v1",
    "--kind",
    "Guestbook",
];

/// `init` plus `create api --group webapp --kind Guestbook`.
pub fn with_guestbook() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = initialized();
    kube_scaffold(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
    )
    .success();
    (tmp, dir)
}

/// Every file under `root` (relative path -> bytes), skipping build output. Symbolic links
/// are recorded by their target, not followed.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read a directory") {
            let path = entry.expect("a directory entry").path();
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if name == "target" || name == "Cargo.lock" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).expect("stat a file");
            if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).expect("read a link");
                out.insert(
                    format!("{name} ->"),
                    target.to_string_lossy().into_owned().into_bytes(),
                );
            } else if meta.is_dir() {
                out.insert(format!("{name}/"), Vec::new());
                stack.push(path);
            } else {
                out.insert(name, fs::read(&path).expect("read a file"));
            }
        }
    }
    out
}

/// Compares the tree at `dir` with `tests/golden/<case>`, file list and contents.
/// `UPDATE_GOLDEN=1 cargo test --test cli golden` rewrites the golden tree instead.
pub fn assert_golden(dir: &Path, case: &str) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(case);
    let actual = tree(dir);
    // The project's copy of the runtime crate is this repository's `runtime/`, byte for byte;
    // the golden trees leave it out.
    let (copy, rest): (BTreeMap<_, _>, BTreeMap<_, _>) = actual
        .into_iter()
        .partition(|(name, _)| name.starts_with(RUNTIME_DIR));
    let actual = rest;
    assert!(
        copy == runtime_copy(),
        "golden case `{case}`: kube-scaffold-runtime/ is not the copy `init` writes"
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = fs::remove_dir_all(&golden);
        for (name, bytes) in &actual {
            let path = golden.join(name);
            if name.ends_with('/') {
                fs::create_dir_all(&path).unwrap();
            } else {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, bytes).unwrap();
            }
        }
        return;
    }
    let expected = tree(&golden);
    let refresh = "if the change is intended, run `UPDATE_GOLDEN=1 cargo test --test cli golden` and review the diff";
    let missing: Vec<_> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let extra: Vec<_> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "golden case `{case}`: files not generated {missing:?}, files not expected {extra:?}; {refresh}"
    );
    for (name, bytes) in &expected {
        let got = &actual[name];
        if got != bytes {
            let (want, got) = (String::from_utf8_lossy(bytes), String::from_utf8_lossy(got));
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| want.lines().count().min(got.lines().count()));
            panic!(
                "golden case `{case}`: `{name}` differs at line {}:\n  expected: {:?}\n  actual:   {:?}\n{refresh}",
                line + 1,
                want.lines().nth(line),
                got.lines().nth(line)
            );
        }
    }
}

/// Runs `kube-scaffold ARGS` in `dir` at a pseudo-terminal, typing as `steps` says
/// (`[[wait_for, send], ...]`, see tests/tools/pty_run.py); returns the screen, which ends
/// with `exit: <code>`.
pub fn at_a_terminal(dir: &Path, steps: &str, args: &[&str]) -> String {
    let runner = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tools/pty_run.py");
    let binary = assert_cmd::cargo::cargo_bin("kube-scaffold");
    let output = std::process::Command::new("python3")
        .arg(runner)
        .arg(steps)
        .arg("--")
        .arg(binary)
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The output of a finished command, as text.
pub fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

pub fn stdout_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// `git ARGS` in this repository: its output. Panics unless it succeeds: the tests that read
/// releases and earlier builds from the history need a full clone.
pub fn history(args: &[&str]) -> Vec<u8> {
    let output = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR")])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {}: {}\nhelp: this test reads this repository's history: run it in a full clone",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The paths of the files under `dir` at `commit` of this repository.
pub fn files_at(commit: &str, dir: &str) -> Vec<String> {
    let listed = history(&["ls-tree", "-r", "--name-only", commit, dir]);
    String::from_utf8(listed)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A copy of `tests/<from>` (a golden tree or a fixture) in a new directory named `guestbook`.
/// Where a generated project holds its copy of the runtime crate.
pub const RUNTIME_DIR: &str = "kube-scaffold-runtime";

/// The files a generated project's `kube-scaffold-runtime/` holds, as `tree` names them in the
/// project: those `init` writes now (`assert_vendored` checks them against `runtime/`).
pub fn runtime_copy() -> BTreeMap<String, Vec<u8>> {
    static COPY: OnceLock<BTreeMap<String, Vec<u8>>> = OnceLock::new();
    COPY.get_or_init(|| {
        let (_tmp, dir) = empty_dir("copy");
        kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
        let copy = tree(&dir.join(RUNTIME_DIR))
            .into_iter()
            .map(|(name, bytes)| (format!("{RUNTIME_DIR}/{name}"), bytes))
            .chain([(format!("{RUNTIME_DIR}/"), Vec::new())])
            .collect();
        assert_vendored(&copy);
        copy
    })
    .clone()
}

/// Whether `name`, a path in the runtime crate, is among what a project's copy is made of:
/// its manifests, README and sources (not its examples).
pub fn copied_from_runtime(name: &str) -> bool {
    ["src/", "dylib/"].iter().any(|dir| name.starts_with(dir))
        || name == "Cargo.toml"
        || name == "README.md"
}

/// Asserts that `copy` (named as in a project) is this repository's `runtime/` crate (its
/// manifests, README and sources) with nothing changed or added, only lines left out, and
/// none of its tests: no test module, no stand-in API server, no dev-dependencies.
pub fn assert_vendored(copy: &BTreeMap<String, Vec<u8>>) {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let mut expected: Vec<String> = tree(&runtime)
        .into_keys()
        .filter(|name| copied_from_runtime(name) && name != "src/webhook/fake.rs")
        .map(|name| format!("{RUNTIME_DIR}/{name}"))
        .chain([format!("{RUNTIME_DIR}/")])
        .collect();
    expected.sort();
    let names: Vec<&String> = copy.keys().collect();
    assert_eq!(
        names,
        expected.iter().collect::<Vec<_>>(),
        "the runtime's files"
    );
    let mut left_out = 0;
    for (name, bytes) in copy.iter().filter(|(name, _)| !name.ends_with('/')) {
        let text = String::from_utf8_lossy(bytes);
        let original = fs::read_to_string(runtime.join(&name[RUNTIME_DIR.len() + 1..])).unwrap();
        let mut lines = original.lines();
        for line in text.lines() {
            assert!(
                lines.by_ref().any(|l| l == line),
                "`{name}`: {line:?} is not the runtime's, in its order"
            );
        }
        left_out += original.lines().count() - text.lines().count();
        for test_only in [
            "cfg(test)",
            "cfg(all(test",
            "mod fake",
            "[dev-dependencies]",
        ] {
            assert!(!text.contains(test_only), "`{name}` holds `{test_only}`");
        }
    }
    assert!(left_out > 2_000, "only {left_out} lines of tests left out");
}

pub fn copy_of(from: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = empty_dir("guestbook");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(from);
    let mut files = tree(&source);
    // The golden trees leave out the runtime crate's copy: it is `init`'s (`assert_golden`).
    if from.starts_with("golden/") {
        files.extend(runtime_copy());
    }
    for (name, bytes) in files {
        let path = dir.join(&name);
        if name.ends_with('/') {
            fs::create_dir_all(&path).unwrap();
        } else {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, bytes).unwrap();
        }
    }
    (tmp, dir)
}
