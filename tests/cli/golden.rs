//! Whole generated projects, compared file by file with `tests/golden/<case>`.

use crate::support::{assert_golden, empty_dir, kube_scaffold};

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
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
    )
    .success();
    assert_golden(&dir, "create-api");
}

#[test]
fn golden_two_kinds_one_cluster_scoped_no_license() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(&dir, &["init", "--domain", "mock.com", "--license", "none"]).success();
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--resource",
            "--controller",
        ],
    )
    .success();
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Config",
            "--namespaced=false",
            "--resource",
            "--controller",
        ],
    )
    .success();
    assert_golden(&dir, "two-kinds");
}
