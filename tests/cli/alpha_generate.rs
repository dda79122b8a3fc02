//! `alpha generate` through the binary: PROJECT alone renders the whole project again.

use std::fs;
use std::path::Path;

use crate::support::{copy_of, kube_scaffold, stderr_of, tree};

#[test]
fn every_golden_project_is_reproduced_byte_for_byte() {
    for case in ["init", "create-api", "two-kinds", "owned-kinds"] {
        let (_tmp, dir) = copy_of(&format!("golden/{case}"));
        let before = tree(&dir);
        kube_scaffold(
            &dir,
            &["alpha", "generate", "--output-dir", "../regenerated"],
        )
        .success();
        let regenerated = dir.parent().unwrap().join("regenerated");
        let (expected, actual) = (tree(&dir), tree(&regenerated));
        assert_eq!(expected, before, "{case}: the project read was changed");
        let differ: Vec<_> = expected
            .keys()
            .chain(actual.keys())
            .filter(|k| expected.get(*k) != actual.get(*k))
            .collect();
        assert!(differ.is_empty(), "{case}: files differ: {differ:?}");
    }
}

#[test]
fn the_users_edits_stay_in_the_project_and_out_of_the_replay() {
    let (_tmp, dir) = copy_of("golden/create-api");
    let controller = dir.join("src/controller/guestbook.rs");
    let mine = "// my reconcile logic\n";
    fs::write(&controller, mine).unwrap();
    kube_scaffold(&dir, &["alpha", "generate", "--output-dir", "out"]).success();
    assert_eq!(fs::read_to_string(&controller).unwrap(), mine);
    let pristine = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/create-api/src/controller/guestbook.rs");
    assert_eq!(
        fs::read(dir.join("out/src/controller/guestbook.rs")).unwrap(),
        fs::read(pristine).unwrap()
    );
}

#[test]
fn a_directory_that_is_not_empty_is_refused_and_left_alone() {
    let (_tmp, dir) = copy_of("golden/init");
    fs::create_dir(dir.join("out")).unwrap();
    fs::write(dir.join("out/notes.txt"), "mine\n").unwrap();
    let before = tree(&dir);
    for output in ["out", "."] {
        let out = kube_scaffold(&dir, &["alpha", "generate", "--output-dir", output]).code(1);
        let stderr = stderr_of(&out);
        assert!(stderr.contains("is not empty"), "{stderr}");
        assert!(stderr.contains("help: pass `--output-dir`"), "{stderr}");
    }
    assert_eq!(tree(&dir), before);
}

#[test]
fn a_project_of_another_layout_is_refused() {
    let (_tmp, dir) = copy_of("fixtures/v0.1.0/two-kinds");
    let before = tree(&dir);
    let out = kube_scaffold(&dir, &["alpha", "generate", "--output-dir", "../out"]).code(1);
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("layout `rust.kube-scaffold.io/v1`"),
        "{stderr}"
    );
    assert_eq!(tree(&dir), before);
    assert!(!dir.parent().unwrap().join("out").exists());
}
