//! `kube-scaffold version`.

use crate::model::project::LAYOUT;
use crate::model::versions::VERSIONS;
use crate::ui;

pub fn run() -> anyhow::Result<()> {
    ui::say(&format!("kube-scaffold {}", env!("CARGO_PKG_VERSION")));
    ui::say(&format!("layout: {LAYOUT}"));
    ui::say(&format!(
        "scaffolds: kube {}, k8s-openapi {} (Kubernetes {}+), Rust {}+",
        VERSIONS.kube,
        VERSIONS.k8s_openapi,
        VERSIONS
            .kubernetes_feature
            .trim_start_matches('v')
            .replace('_', "."),
        VERSIONS.rust
    ));
    Ok(())
}
