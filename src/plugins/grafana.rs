//! The grafana plugin (kubebuilder's `grafana/v1-alpha`): `init --plugins grafana/v1-alpha`
//! or `edit --plugins grafana/v1-alpha` adds Grafana dashboards under `grafana/` for the
//! metrics the manager exports: its controllers, leader election and webhooks
//! (`controller-runtime-metrics.json`) and its process (`controller-resources-metrics.json`).
//! A test reads every query against the series kube-scaffold-runtime exports.

use crate::scaffold::plan::{Descriptor, IfExists, Plan};

use super::{InitContext, Plugin};
use crate::scaffold::tree::Tree;

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "grafana.kube-scaffold.io/v1-alpha";

/// The dashboards.
#[rustfmt::skip]
const FILES: &[Descriptor] = &[
    Descriptor::new("grafana/grafana/controller-runtime-metrics.json.tera", "grafana/controller-runtime-metrics.json", IfExists::Error),
    Descriptor::new("grafana/grafana/controller-resources-metrics.json.tera", "grafana/controller-resources-metrics.json", IfExists::Error),
];

/// The grafana plugin.
pub struct Grafana;

impl Plugin for Grafana {
    fn key(&self) -> &'static str {
        KEY
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["grafana/v1-alpha", "grafana.kubebuilder.io/v1-alpha", KEY]
    }

    fn enable(&self, plan: &mut Plan, _: &InitContext, _: &mut Tree) -> anyhow::Result<()> {
        plan.add_all(FILES);
        Ok(())
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[FILES]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use kube_scaffold_runtime::metrics::Metrics;

    use super::*;
    use crate::model::project::{InitInputs, License};
    use crate::scaffold::templates::Templates;

    /// Every series the manager's /metrics can hold, by name (a histogram's `_bucket`, `_sum`
    /// and `_count`), the process collector's included. A family shows only once it has a
    /// series: each is given one.
    fn exported() -> BTreeSet<String> {
        let metrics = Metrics::default();
        metrics.start_controller("guestbook", 1);
        metrics.set_leading("guestbook-leader-election", true);
        drop(metrics.webhook_started("/validate-webapp-mock-com-v1-guestbook"));
        let elapsed = std::time::Duration::from_millis(3);
        metrics.webhook_answered("/validate-webapp-mock-com-v1-guestbook", 200, elapsed);
        let text = metrics.encode();
        let mut names = BTreeSet::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_string());
        }
        names
    }

    /// The metric names a PromQL expression selects: identifiers followed by a label matcher,
    /// or the first argument of `label_values(...)`.
    fn selected(expr: &str) -> Vec<String> {
        let mut names = Vec::new();
        if let Some(rest) = expr.strip_prefix("label_values(") {
            names.push(rest.split([',', ')']).next().unwrap().trim().to_string());
        }
        let bytes = expr.as_bytes();
        let mut start = None;
        for (i, c) in expr.char_indices() {
            let word = c.is_ascii_alphanumeric() || c == '_' || c == ':';
            match (word, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    if bytes[i] == b'{' {
                        names.push(expr[s..i].to_string());
                    }
                    start = None;
                }
                _ => {}
            }
        }
        names
    }

    /// Every query of every dashboard names a series the manager exports, and together they
    /// show every series of the controllers, leader election and webhooks.
    #[test]
    fn the_dashboards_query_exactly_the_series_the_manager_exports() {
        let templates = Templates::load().unwrap();
        let init = InitInputs {
            domain: "mock.com".into(),
            project_name: "guestbook".into(),
            repo: None,
            owner: None,
            license: License::None,
            license_year: 2026,
        };
        let context = InitContext::new(&init, &templates).unwrap();
        let exported = exported();
        let mut used = BTreeSet::new();
        for file in FILES {
            let text = templates.render(file.template, &context).unwrap();
            let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                dashboard["title"].as_str().unwrap().split(':').next(),
                Some("guestbook")
            );
            let mut exprs = Vec::new();
            for panel in dashboard["panels"].as_array().unwrap() {
                for target in panel["targets"].as_array().unwrap() {
                    exprs.push(target["expr"].as_str().unwrap().to_string());
                    let legend = target["legendFormat"].as_str().unwrap();
                    assert!(
                        !legend.contains("{{ '") && legend.contains("{{"),
                        "{legend}"
                    );
                }
            }
            for variable in dashboard["templating"]["list"].as_array().unwrap() {
                if let Some(query) = variable["query"]["query"].as_str() {
                    exprs.push(query.to_string());
                }
            }
            for expr in &exprs {
                let names = selected(expr);
                assert!(!names.is_empty(), "{} selects nothing: {expr}", file.dest);
                for name in names {
                    assert!(
                        exported.contains(&name),
                        "{}: `{name}` is not exported",
                        file.dest
                    );
                    used.insert(name);
                }
            }
        }
        let shown = |name: &String| {
            name.starts_with("controller_runtime_") || name.starts_with("leader_election_")
        };
        let missing: Vec<_> = exported
            .iter()
            .filter(|n| shown(n) && !used.contains(*n))
            .collect();
        assert!(missing.is_empty(), "series no dashboard shows: {missing:?}");
    }
}
