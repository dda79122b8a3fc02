//! The grafana plugin (kubebuilder's `grafana/v1-alpha`): `init --plugins grafana/v1-alpha`
//! or `edit --plugins grafana/v1-alpha` adds Grafana dashboards under `grafana/` for the
//! metrics the manager exports: its controllers, leader election and webhooks
//! (`controller-runtime-metrics.json`) and its process (`controller-resources-metrics.json`).
//! A test reads every query against the series kube-scaffold-runtime exports.
//!
//! It also writes `grafana/custom-metrics/config.yaml`, the user's list of the project's own
//! metrics; named again, it makes `custom-metrics-dashboard.json` from that list, a panel a
//! metric (a replay reads the list from the project: `recorded`).

use serde::{Deserialize, Serialize};

use crate::error::user_error;
use crate::scaffold::plan::{Descriptor, IfExists, Plan};

use super::{InitContext, Plugin};
use crate::scaffold::tree::Tree;

/// Its key in PROJECT's `plugins`.
pub const KEY: &str = "grafana.kube-scaffold.io/v1-alpha";

/// The user's list of the project's own metrics.
const CONFIG: &str = "grafana/custom-metrics/config.yaml";

/// The dashboards, made again each time the plugin is named (edits merged), and the list of
/// custom metrics, the user's once written.
#[rustfmt::skip]
const FILES: &[Descriptor] = &[
    Descriptor::new("grafana/grafana/controller-runtime-metrics.json.tera", "grafana/controller-runtime-metrics.json", IfExists::Overwrite),
    Descriptor::new("grafana/grafana/controller-resources-metrics.json.tera", "grafana/controller-resources-metrics.json", IfExists::Overwrite),
    Descriptor::new("grafana/grafana/custom-metrics/config.yaml.tera", CONFIG, IfExists::Skip),
];

/// The dashboard of the metrics `config.yaml` lists.
const CUSTOM: Descriptor = Descriptor::new(
    "grafana/grafana/custom-metrics/custom-metrics-dashboard.json.tera",
    "grafana/custom-metrics/custom-metrics-dashboard.json",
    IfExists::Overwrite,
);

/// The grafana plugin.
pub struct Grafana;

impl Plugin for Grafana {
    fn key(&self) -> &'static str {
        KEY
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["grafana/v1-alpha", "grafana.kubebuilder.io/v1-alpha", KEY]
    }

    fn enable(&self, plan: &mut Plan, _: &InitContext, tree: &mut Tree) -> anyhow::Result<()> {
        plan.add_all(FILES);
        let Some(config) = tree.read(CONFIG)? else {
            return Ok(());
        };
        let panels = panels(config)?;
        if !panels.is_empty() {
            let item = serde_json::json!({ "panels": panels });
            plan.file_of(CUSTOM.template, CUSTOM.dest, CUSTOM.if_exists, &item)?;
        }
        Ok(())
    }

    fn recorded(&self) -> &'static [&'static str] {
        &[CONFIG]
    }

    fn regenerates(&self) -> bool {
        true
    }

    fn descriptors(&self) -> &'static [&'static [Descriptor]] {
        &[FILES, &[CUSTOM]]
    }
}

/// `config.yaml`: kubebuilder's format.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Config {
    #[serde(default)]
    custom_metrics: Option<Vec<CustomMetric>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomMetric {
    metric: String,
    #[serde(rename = "type")]
    kind: MetricType,
    #[serde(default)]
    expr: Option<String>,
    #[serde(default)]
    unit: Option<String>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum MetricType {
    Counter,
    Gauge,
    Histogram,
}

/// One panel of the custom dashboard, as its template sees it.
#[derive(Debug, Serialize)]
struct Panel {
    id: usize,
    title: String,
    description: String,
    expr: String,
    unit: String,
    x: usize,
    y: usize,
}

/// The panels of the metrics `config` lists, two a row: the query the user gave, or one
/// from the metric's type (a counter's rate, a gauge as it is, a histogram's 99th
/// percentile), for the dashboard's `job`.
fn panels(config: &str) -> anyhow::Result<Vec<Panel>> {
    let help = format!("fix {CONFIG} (its comments show the format), then run the command again");
    let config: Config = serde_saphyr::from_str(config)
        .map_err(|err| user_error(format!("{CONFIG} cannot be read: {err}"), help.clone()))?;
    let metrics = config.custom_metrics.unwrap_or_default();
    let mut panels = Vec::new();
    for (i, metric) in metrics.into_iter().enumerate() {
        let name = &metric.metric;
        let valid = name.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
        });
        if name.is_empty() || !valid {
            return Err(user_error(
                format!("{CONFIG}: `{name}` is not a Prometheus metric name"),
                help,
            ));
        }
        let selector = format!("{name}{{job=\"$job\"}}");
        let (generated, description) = match metric.kind {
            MetricType::Counter => (
                format!("sum by (pod) (rate({selector}[5m]))"),
                format!("Per second: the rate of the counter {name}."),
            ),
            MetricType::Gauge => (selector, format!("The gauge {name}.")),
            MetricType::Histogram => (
                format!(
                    "histogram_quantile(0.99, sum by (pod, le) (rate({name}_bucket{{job=\"$job\"}}[5m])))"
                ),
                format!("The 99th percentile of the histogram {name}."),
            ),
        };
        panels.push(Panel {
            id: i + 1,
            title: name.clone(),
            description,
            expr: metric
                .expr
                .filter(|e| !e.trim().is_empty())
                .unwrap_or(generated),
            unit: metric.unit.unwrap_or_else(|| "none".into()),
            x: (i % 2) * 12,
            y: (i / 2) * 8,
        });
    }
    Ok(panels)
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

    /// What `init` templates see in a project `guestbook`.
    fn context(templates: &Templates) -> InitContext {
        let init = InitInputs {
            domain: "mock.com".into(),
            project_name: "guestbook".into(),
            repo: None,
            owner: None,
            license: License::None,
            license_year: 2026,
        };
        InitContext::new(&init, templates).unwrap()
    }

    /// Every query of every dashboard names a series the manager exports, and together they
    /// show every series of the controllers, leader election and webhooks.
    #[test]
    fn the_dashboards_query_exactly_the_series_the_manager_exports() {
        let templates = Templates::load().unwrap();
        let context = context(&templates);
        let exported = exported();
        let mut used = BTreeSet::new();
        for file in FILES.iter().filter(|f| f.dest.ends_with(".json")) {
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

    /// The custom dashboard: a panel a listed metric, each query selecting it (the user's
    /// own query as given), valid JSON whatever the names hold.
    #[test]
    fn the_custom_dashboard_has_a_panel_for_each_listed_metric() {
        let config = "customMetrics:\n  - metric: guestbook_widgets_total\n    type: counter\n  - metric: guestbook_queue_depth\n    type: gauge\n    unit: short\n  - metric: guestbook_fetch_seconds\n    type: histogram\n    unit: s\n  - metric: guestbook_ratio\n    type: gauge\n    expr: 'avg(guestbook_ratio{job=\"$job\"}) * 100'\n    unit: percent\n";
        let panels = panels(config).unwrap();
        let templates = Templates::load().unwrap();
        let mut context = serde_json::to_value(context(&templates)).unwrap();
        context["item"] = serde_json::json!({ "panels": panels });
        let text = templates.render(CUSTOM.template, &context).unwrap();
        let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
        let panels = dashboard["panels"].as_array().unwrap();
        let shown: Vec<(&str, &str, &str)> = panels
            .iter()
            .map(|p| {
                let target = &p["targets"][0];
                (
                    target["expr"].as_str().unwrap(),
                    p["fieldConfig"]["defaults"]["unit"].as_str().unwrap(),
                    target["legendFormat"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "sum by (pod) (rate(guestbook_widgets_total{job=\"$job\"}[5m]))",
                    "none",
                    "{{pod}}"
                ),
                ("guestbook_queue_depth{job=\"$job\"}", "short", "{{pod}}"),
                (
                    "histogram_quantile(0.99, sum by (pod, le) (rate(guestbook_fetch_seconds_bucket{job=\"$job\"}[5m])))",
                    "s",
                    "{{pod}}"
                ),
                (
                    "avg(guestbook_ratio{job=\"$job\"}) * 100",
                    "percent",
                    "{{pod}}"
                ),
            ]
        );
        let places: Vec<(u64, u64)> = panels
            .iter()
            .map(|p| {
                (
                    p["gridPos"]["x"].as_u64().unwrap(),
                    p["gridPos"]["y"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(places, [(0, 0), (12, 0), (0, 8), (12, 8)]);
    }

    #[test]
    fn a_list_it_cannot_read_is_refused_with_the_fix() {
        for (config, said) in [
            (
                "customMetrics:\n  - metric: x\n    type: summary\n",
                "cannot be read",
            ),
            (
                "customMetrics:\n  - metric: 1x\n    type: gauge\n",
                "`1x` is not a Prometheus metric name",
            ),
            ("customMetric: []\n", "cannot be read"),
        ] {
            let err = panels(config).unwrap_err();
            assert!(format!("{err:#}").contains(said), "{config}: {err:#}");
        }
        assert!(panels("customMetrics: []\n").unwrap().is_empty());
        assert!(panels("# nothing yet\n").unwrap().is_empty());
    }
}
