//! The image after a controller edit: `make docker-build` reuses the dependencies' layer and
//! compiles the project's crate alone, as the Dockerfile's comment promises.

use std::fs;

use crate::project::{plain, turn};
use crate::ship::ship;

#[test]
fn a_controller_edit_rebuilds_the_image_compiling_only_the_projects_crate() {
    let _turn = turn();
    let ship = ship();
    let controller = ship.project.dir.join("src/controller/guestbook.rs");
    let source = fs::read_to_string(&controller).unwrap();
    // An edit no earlier run made: the image's cache cannot have its layer.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let edit = format!("{source}\n// An edit at {} ns.\n", now.unwrap().as_nanos());
    fs::write(&controller, edit).unwrap();
    let output = plain(&ship.make_all_output(&["docker-build"]));
    let compiled: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("Compiling "))
        .collect();
    assert!(
        compiled.len() == 1 && compiled[0].contains("Compiling ship v"),
        "compiled after a controller edit: {compiled:?}\n{output}"
    );
    fs::write(&controller, source).unwrap();
}
