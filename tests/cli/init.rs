//! `init`, `version`, `completion` and `--help` through the binary.

use std::fs;

use crate::support::{empty_dir, kube_scaffold, stdout_of};

#[test]
fn the_project_name_defaults_to_the_directory_name() {
    let (_tmp, dir) = empty_dir("my-operator");
    let assert = kube_scaffold(&dir, &["init", "--domain", "example.com"]).success();
    assert!(
        stdout_of(&assert).contains("kube-scaffold create api"),
        "init names the next step"
    );
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        project.contains("projectName = \"my-operator\""),
        "{project}"
    );
    assert!(project.contains("domain = \"example.com\""), "{project}");
    let cargo = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"my-operator\""), "{cargo}");
    let main = fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(main.contains("use my_operator::manager;"), "{main}");
}

/// The generated workflows read the repository and nothing more, cache the build, and pull
/// nothing as `latest`: a tool's new release does not break the project's CI on its own.
#[test]
fn the_workflows_are_read_only_pinned_and_cached() {
    let (_tmp, dir) = empty_dir("my-operator");
    kube_scaffold(&dir, &["init", "--domain", "example.com"]).success();
    for workflow in ["test.yml", "lint.yml", "test-e2e.yml"] {
        let text = fs::read_to_string(dir.join(".github/workflows").join(workflow)).unwrap();
        assert!(
            text.contains("\npermissions:\n  contents: read\n"),
            "{workflow}:\n{text}"
        );
        assert!(text.contains("uses: Swatinem/rust-cache@v2"), "{workflow}");
        let latest = text.contains("@latest") || text.contains("/latest/");
        assert!(!latest, "{workflow}:\n{text}");
    }
    // What `make test-e2e` installs is pinned too.
    let makefile = fs::read_to_string(dir.join("Makefile")).unwrap();
    assert!(!makefile.contains("/latest/"), "{makefile}");
    assert!(
        makefile.contains("CERT_MANAGER_VERSION ?= v1.21.2"),
        "{makefile}"
    );
}

#[test]
fn license_none_writes_no_header() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--license", "none"]).success();
    assert!(!dir.join("hack/boilerplate.rs.txt").exists());
    let lib = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    assert!(lib.starts_with("//! The guestbook operator"), "{lib}");
}

#[test]
fn the_owner_goes_into_the_license_header() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--owner", "Jane Roe"]).success();
    let boilerplate = fs::read_to_string(dir.join("hack/boilerplate.rs.txt")).unwrap();
    assert!(
        boilerplate.starts_with("// Copyright 2026 Jane Roe.\n"),
        "{boilerplate}"
    );
    let lib = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    assert!(
        lib.starts_with(&format!("{boilerplate}\n//! The guestbook operator")),
        "{lib}"
    );
}

#[test]
fn every_command_shows_an_example_in_its_help() {
    let (_tmp, dir) = empty_dir("guestbook");
    for args in [
        &["--help"][..],
        &["init", "--help"],
        &["create", "api", "--help"],
        &["completion", "--help"],
        &["version", "--help"],
    ] {
        let assert = kube_scaffold(&dir, args).success();
        assert!(
            stdout_of(&assert).contains("Example:\n  "),
            "`{}` has no example",
            args.join(" ")
        );
    }
}

#[test]
fn version_names_what_it_scaffolds() {
    let (_tmp, dir) = empty_dir("guestbook");
    let out = stdout_of(&kube_scaffold(&dir, &["version"]).success());
    assert!(
        out.starts_with(&format!("kube-scaffold {}\n", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
    assert!(
        out.contains("kube 5.0.0, k8s-openapi 0.29.0 (Kubernetes 1.33+)"),
        "{out}"
    );
}

#[test]
fn completion_scripts_for_every_shell() {
    let (_tmp, dir) = empty_dir("guestbook");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = stdout_of(&kube_scaffold(&dir, &["completion", shell]).success());
        assert!(
            out.contains("kube-scaffold") && out.contains("create"),
            "{shell}: {out}"
        );
    }
}

#[test]
fn a_go_module_path_names_the_repository() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--repo", "github.com/me/guestbook"]).success();
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\nrepository = \"https://github.com/me/guestbook\"\n"),
        "{manifest}"
    );
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        project.contains("repo = \"github.com/me/guestbook\""),
        "{project}"
    );
}

/// A reader that stops early (`| head -n 1`) ends the output, not the program: no panic, and
/// the exit status is 0.
#[test]
fn output_into_a_closed_pipe_is_not_an_error() {
    let script = format!(
        "set -o pipefail; '{}' version | head -n 1",
        env!("CARGO_BIN_EXE_kube-scaffold")
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("kube-scaffold "));
}

/// The release profile's figures (sizes, build times, ratios to kubebuilder's) in
/// docs/project-layout.md are those of the comment `init` writes above `[profile.release]`: one
/// measurement, printed twice.
#[test]
fn the_docs_print_the_release_profiles_figures_of_the_generated_cargo_toml() {
    let (_tmp, dir) = empty_dir("figures");
    kube_scaffold(&dir, &["init", "--domain", "example.com"]).success();
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let comment: String = manifest
        .lines()
        .take_while(|l| !l.starts_with("[profile.release]"))
        .collect::<Vec<_>>()
        .rsplit(|l| !l.starts_with('#'))
        .next()
        .unwrap()
        .join("\n");
    // Sizes (`7.1 MiB`), times (`177 s`) and ratios (`1.24x`), in order.
    let figures = |text: &str| -> Vec<String> {
        let number = |word: &str| {
            let word = word.trim_start_matches(['(', '"']);
            word.parse::<f64>().is_ok().then(|| word.to_string())
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut found = Vec::new();
        for (i, word) in words.iter().enumerate() {
            let unit = words
                .get(i + 1)
                .map(|w| w.trim_end_matches([',', ';', ')', '.']));
            if let (Some(n), Some(unit @ ("MiB" | "s"))) = (number(word), unit) {
                found.push(format!("{n} {unit}"));
            }
            let ratio = word
                .trim_start_matches('(')
                .trim_end_matches([',', ';', ')', '.']);
            if let Some(n) = ratio.strip_suffix('x').and_then(number) {
                found.push(format!("{n}x"));
            }
        }
        found
    };
    let ours = figures(&comment);
    assert!(
        ours.len() >= 12,
        "the comment's figures: {ours:?}\n{comment}"
    );
    let doc = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/project-layout.md"
    ))
    .unwrap();
    let section = doc
        .split("## Build profiles")
        .nth(1)
        .and_then(|s| s.trim_start().split("\n\n").next())
        .unwrap();
    let mut theirs = figures(section);
    theirs.retain(|f| f != "5.1 MiB");
    assert_eq!(
        theirs, ours,
        "docs/project-layout.md:\n{section}\nCargo.toml:\n{comment}"
    );
}
