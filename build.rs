//! Rebuilds the binary when a template changes: `include_dir!` alone does not notice new files.

fn main() {
    println!("cargo:rerun-if-changed=scaffolds");
}
