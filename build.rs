//! Rebuilds the binary when a template or the runtime crate changes (`include_dir!` alone does
//! not notice new files), and says where the runtime crate's source is.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=scaffolds");
    println!("cargo:rerun-if-changed=runtime");
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let runtime = manifest_dir.join("runtime");
    // Built from its published package, which cargo keeps from holding another package: the
    // projects of that build take the runtime from crates.io, and vendor nothing.
    let source = if runtime.join("Cargo.toml").is_file() {
        runtime
    } else {
        let none =
            PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("no-runtime");
        std::fs::create_dir_all(&none).expect("OUT_DIR is writable");
        none
    };
    println!(
        "cargo:rustc-env=KUBE_SCAFFOLD_RUNTIME_SOURCE={}",
        source.display()
    );
}
