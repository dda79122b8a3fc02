//! Rebuilds the binary when a template or the runtime crate changes: `include_dir!` alone does
//! not notice new files.

fn main() {
    println!("cargo:rerun-if-changed=scaffolds");
    println!("cargo:rerun-if-changed=runtime");
}
