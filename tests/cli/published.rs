//! A user's project after kube-scaffold and its runtime are published: the three crates as
//! `cargo package` makes them, the runtime served as a registry serves it (a directory source
//! with checksums, in crates.io's place), and kube-scaffold installed from its own package.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest as _, Sha256};

use crate::generated_build::target_dir;
use crate::support::{RUNTIME_DIR, run, run_with, with_guestbook};

const CRATES: [&str; 3] = [
    "kube-scaffold",
    "kube-scaffold-runtime",
    "kube-scaffold-runtime-dylib",
];

/// Unpacks the `.crate` of `name` from `packages` into `into`; returns its directory and the
/// sha256 of the `.crate`, as a registry's index records it.
fn unpack(packages: &Path, name: &str, into: &Path) -> (PathBuf, String) {
    let version = env!("CARGO_PKG_VERSION");
    let file = packages.join(format!("{name}-{version}.crate"));
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&file)
        .arg("-C")
        .arg(into)
        .status()
        .expect("tar runs");
    assert!(status.success(), "cannot unpack {}", file.display());
    let hash = Sha256::digest(fs::read(&file).unwrap());
    let sum = hash.iter().map(|b| format!("{b:02x}")).collect();
    (into.join(format!("{name}-{version}")), sum)
}

#[test]
fn a_project_upgraded_by_the_published_tool_builds_on_the_published_runtime() {
    let work = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // 1. The crates as they would be uploaded.
    let package_target = work.path().join("package-target");
    let mut args = vec!["package", "--no-verify", "--allow-dirty", "--locked"];
    for name in CRATES {
        args.extend(["-p", name]);
    }
    args.extend(["--target-dir", package_target.to_str().unwrap()]);
    run(repo, "cargo", &args);
    let packages = package_target.join("package");
    let unpacked = work.path().join("unpacked");
    fs::create_dir(&unpacked).unwrap();
    let [tool, runtime, dylib] = CRATES.map(|name| unpack(&packages, name, &unpacked));

    // 2. kube-scaffold installed from its package: it embeds no copy of the runtime. Built
    // where the generated projects build, not where the other tests' kube-scaffold is.
    run(
        &tool.0,
        "cargo",
        &["build", "--locked", "--bin", "kube-scaffold"],
    );
    let published_tool = target_dir().join("debug/kube-scaffold");

    // 3. A project of this repository's kube-scaffold, its Cargo.toml edited by its user.
    let (_tmp, dir) = with_guestbook();
    let manifest = dir.join("Cargo.toml");
    let text = fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("[patch.crates-io]") && dir.join(RUNTIME_DIR).is_dir());
    let edited = text.replace("tracing = \"0.1\"\n", "tracing = \"0.1\"\nitoa = \"1\"\n");
    assert_ne!(edited, text);
    fs::write(&manifest, edited).unwrap();

    // 4. Upgraded by the published kube-scaffold: the copy and the patch go, the edit stays.
    let output = Command::new(&published_tool)
        .args(["upgrade", "--force"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains(&format!("delete {RUNTIME_DIR}/src/manager/mod.rs")),
        "{said}"
    );
    assert!(!dir.join(RUNTIME_DIR).exists(), "{said}");
    let upgraded = fs::read_to_string(&manifest).unwrap();
    assert!(
        !upgraded.contains("[patch") && !upgraded.contains("path = \"kube-scaffold-runtime"),
        "{upgraded}"
    );
    assert!(upgraded.contains("itoa = \"1\""), "{upgraded}");
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        !project.contains(RUNTIME_DIR),
        "PROJECT still records the copy"
    );
    // Nothing left to do for the published kube-scaffold; this repository's would vendor again.
    let again = Command::new(&published_tool)
        .args(["upgrade", "--force"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to do"));

    // 5. crates.io as a directory source: every crate the project needs, the runtime's two
    // as `cargo package` made them, each with the checksum of its `.crate`.
    let registry = work.path().join("registry");
    let patched = [
        format!("patch.crates-io.kube-scaffold-runtime.path={:?}", runtime.0),
        format!(
            "patch.crates-io.kube-scaffold-runtime-dylib.path={:?}",
            dylib.0
        ),
    ];
    run(
        &dir,
        "cargo",
        &[
            "vendor",
            "--quiet",
            "--config",
            &patched[0],
            "--config",
            &patched[1],
            registry.to_str().unwrap(),
        ],
    );
    fs::remove_file(dir.join("Cargo.lock")).unwrap();
    for (source, sum) in [&runtime, &dylib] {
        let name = source.file_name().unwrap().to_str().unwrap();
        let name = name.rsplit_once('-').unwrap().0;
        let served = registry.join(name);
        assert!(
            !served.exists(),
            "cargo vendor took `{name}` from the patch"
        );
        fs::rename(source, &served).unwrap();
        let checksum = format!("{{\"files\":{{}},\"package\":\"{sum}\"}}");
        fs::write(served.join(".cargo-checksum.json"), checksum).unwrap();
    }
    let source = [
        "source.crates-io.replace-with=\"published\"".to_string(),
        format!("source.published.directory={:?}", registry),
    ];
    let offline = |args: &[&str]| {
        let mut all = vec!["--offline", "--config", &source[0], "--config", &source[1]];
        all.extend(args);
        let output = run_with(&dir, "cargo", &all, &[]);
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    // The unit tests (`make test`), and the manager linked as `make run` links it.
    offline(&["test"]);
    offline(&["build", "--features", "dynamic-linking"]);
    let lock = fs::read_to_string(dir.join("Cargo.lock")).unwrap();
    for (name, (_, sum)) in [
        ("kube-scaffold-runtime", &runtime),
        ("kube-scaffold-runtime-dylib", &dylib),
    ] {
        let entry = format!(
            "name = \"{name}\"\nversion = \"{}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{sum}\"",
            env!("CARGO_PKG_VERSION")
        );
        assert!(lock.contains(&entry), "Cargo.lock has no {entry}");
    }
}
