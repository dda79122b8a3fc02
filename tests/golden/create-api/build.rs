// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! With the `dynamic-linking` feature, which `make run` and `make dev` turn on, gives the manager
//! and crdgen a run path to their shared libraries, so that they start from anywhere as
//! `target/debug/guestbook`: the runtime's, beside them in target/, and Rust's libstd,
//! in the toolchain that built them. Without the feature (`cargo build`, release builds,
//! images) it does nothing.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_LINKING").is_none() {
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc)
        .args(["--print", "target-libdir"])
        .output()
        .expect("rustc --print target-libdir runs");
    let libstd = String::from_utf8(output.stdout).expect("the toolchain's path is UTF-8");
    let beside = match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("macos") => "@executable_path/deps",
        _ => "$ORIGIN/deps",
    };
    for path in [beside, libstd.trim()] {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{path}");
    }
}
