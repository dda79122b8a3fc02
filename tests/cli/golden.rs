//! Whole generated projects, compared file by file with `tests/golden/<case>`.

use std::path::Path;

use crate::support::{assert_golden, empty_dir, kube_scaffold};

fn create_api(dir: &Path, args: &[&str]) {
    kube_scaffold(dir, &[&["create", "api"][..], args].concat()).success();
}

#[test]
fn golden_init() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(
        &dir,
        &[
            "init",
            "--domain",
            "mock.com",
            "--owner",
            "The Guestbook Authors",
            "--repo",
            "github.com/me/guestbook",
        ],
    )
    .success();
    assert_golden(&dir, "init");
}

#[test]
fn golden_init_create_api() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(
        &dir,
        &[
            "init",
            "--domain",
            "mock.com",
            "--owner",
            "The Guestbook Authors",
        ],
    )
    .success();
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    );
    assert_golden(&dir, "create-api");
}

#[test]
fn golden_two_kinds_one_cluster_scoped_no_license() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--domain", "mock.com", "--license", "none"]).success();
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--resource",
            "--controller",
        ],
    );
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Config",
            "--namespaced=false",
            "--finalizer",
            "--resource",
            "--controller",
        ],
    );
    assert_golden(&dir, "two-kinds");
}
