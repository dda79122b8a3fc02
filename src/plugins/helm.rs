//! The helm plugin (kubebuilder's `helm/v2-alpha`): `edit --plugins helm/v2-alpha` makes a Helm
//! chart under `dist/chart/` from what `make build-installer` wrote to `dist/install.yaml`
//! (`codegen::chart`), and a workflow that lints it. Named again, it makes the chart again
//! from the newest `dist/install.yaml`, merging into each file the user's edits (three-way:
//! the base is the chart made from the manifests it was made from last, which it keeps in
//! `dist/chart/.generated-from.yaml`); `Chart.yaml`, `.helmignore`, `NOTES.txt` and the
//! workflow are the user's once written.

use std::collections::BTreeMap;

use crate::codegen::chart;
use crate::error::user_error;
use crate::scaffold::plan::{Descriptor, IfExists, Plan};
use crate::scaffold::tree::Tree;
use crate::ui;

use super::{InitContext, Plugin};

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "helm.kube-scaffold.io/v2-alpha";
/// What the chart is made from: `make build-installer`'s output.
pub const MANIFESTS: &str = "dist/install.yaml";
/// Where the chart goes.
const CHART: &str = "dist/chart";
/// The manifests the chart was made from last.
pub const SOURCE: &str = "dist/chart/.generated-from.yaml";

/// The files written once, then the user's.
#[rustfmt::skip]
const FILES: &[Descriptor] = &[
    Descriptor::new("helm/chart/helmignore.tera", "dist/chart/.helmignore", IfExists::Skip),
    Descriptor::new("helm/chart/templates/NOTES.txt.tera", "dist/chart/templates/NOTES.txt", IfExists::Skip),
    Descriptor::new("helm/github/workflows/test-chart.yml.tera", ".github/workflows/test-chart.yml", IfExists::Skip),
];

/// The chart's `Chart.yaml`, written once with the manager's image tag as `appVersion`.
const CHART_YAML: Descriptor = Descriptor::new(
    "helm/chart/Chart.yaml.tera",
    "dist/chart/Chart.yaml",
    IfExists::Skip,
);

/// The helm plugin.
pub struct Helm;

impl Plugin for Helm {
    fn key(&self) -> &'static str {
        KEY
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["helm/v2-alpha", "helm.kubebuilder.io/v2-alpha", KEY]
    }

    fn check(&self, root: &std::path::Path) -> anyhow::Result<()> {
        if root.join(MANIFESTS).is_file() {
            return Ok(());
        }
        Err(user_error(
            format!(
                "the helm chart is made from `{MANIFESTS}`, which is missing; nothing was written"
            ),
            "run `make build-installer` (with `IMG=<image>`, the manager's image), then `kube-scaffold edit --plugins helm/v2-alpha`",
        ))
    }

    fn recorded(&self) -> &'static [&'static str] {
        &[SOURCE]
    }

    fn regenerates(&self) -> bool {
        true
    }

    /// The chart, from `dist/install.yaml`, and the files written once. A replay has no build
    /// output: it makes the chart from the manifests it was made from last
    /// (`.generated-from.yaml`, `recorded`), or, without them, only the files written once.
    fn enable(&self, plan: &mut Plan, c: &InitContext, tree: &mut Tree) -> anyhow::Result<()> {
        plan.add_all(FILES);
        // The newest build's manifests; in a replay, what the chart was made from last.
        let manifests = match tree.read(MANIFESTS)? {
            Some(manifests) => manifests.to_string(),
            None => match tree.read(SOURCE)? {
                Some(recorded) => recorded.to_string(),
                None => return Ok(()),
            },
        };
        let name = &c.project_name;
        let chart = chart::chart(name, &manifests, MANIFESTS)?;
        plan.file_of(
            CHART_YAML.template,
            CHART_YAML.dest,
            CHART_YAML.if_exists,
            &serde_json::json!({ "app_version": chart.app_version }),
        )?;
        // What the chart was made from last, made again if the manifests changed since: a
        // template of an object no longer there goes. (Manifests this kube-scaffold cannot
        // read leave every template.)
        let before: BTreeMap<String, String> = match tree.read(SOURCE)? {
            Some(old) if old != manifests => chart::chart(name, old, SOURCE)
                .map(|chart| chart.files)
                .unwrap_or_default(),
            _ => BTreeMap::new(),
        };
        for (path, content) in &chart.files {
            plan.derived(
                format!("{CHART}/{path}"),
                content.clone(),
                IfExists::Overwrite,
            );
        }
        // An object no longer in the manifests: its template goes, unless the user edited it.
        for (path, content) in before.iter().filter(|(p, _)| !chart.files.contains_key(*p)) {
            let dest = format!("{CHART}/{path}");
            match tree.read(&dest)? {
                Some(now) if now == content => plan.remove(dest),
                Some(_) => ui::note(&format!(
                    "{dest} is no longer in {MANIFESTS}, but you edited it: it stays; delete it if it should go"
                )),
                None => {}
            }
        }
        plan.derived(SOURCE, manifests, IfExists::Overwrite);
        Ok(())
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[FILES, &[CHART_YAML]]
    }
}
