//! How the test binaries (tests/cli, tests/real) build the projects they generate: into one
//! target directory, with one environment, so that they share the dependencies' builds.

use std::path::{Path, PathBuf};

/// The target directory every generated project builds into.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated-target")
}

/// Cargo's environment for those builds: every build is of a fresh project, so incremental
/// state is never reused, and full debug information only fills the disk (a cold `cargo test`
/// wrote 40 GB with both).
pub const BUILD_ENV: [(&str, &str); 2] = [
    ("CARGO_INCREMENTAL", "0"),
    ("CARGO_PROFILE_DEV_DEBUG", "line-tables-only"),
];
