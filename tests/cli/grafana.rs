//! The grafana plugin through the real binary: the dashboard of the project's own metrics,
//! made from the list in `grafana/custom-metrics/config.yaml` each time the plugin is named,
//! the dashboards made again with the user's edits kept.

use std::fs;

use crate::support::{assert_refused, empty_dir, kube_scaffold};

const CONFIG: &str = "grafana/custom-metrics/config.yaml";
const CUSTOM: &str = "grafana/custom-metrics/custom-metrics-dashboard.json";

#[test]
fn the_custom_dashboard_follows_the_list_and_the_dashboards_keep_edits() {
    let (_tmp, dir) = empty_dir("guestbook");
    let init = [
        "init",
        "--domain",
        "mock.com",
        "--plugins",
        "grafana/v1-alpha",
    ];
    kube_scaffold(&dir, &init).success();
    let config = fs::read_to_string(dir.join(CONFIG)).unwrap();
    assert!(config.contains("customMetrics: []"), "{config}");
    assert!(!dir.join(CUSTOM).exists());

    // The user's edit of a dashboard, and their metrics.
    let runtime = dir.join("grafana/controller-runtime-metrics.json");
    let text = fs::read_to_string(&runtime).unwrap();
    assert!(text.contains("\"refresh\": \"30s\""));
    fs::write(
        &runtime,
        text.replace("\"refresh\": \"30s\"", "\"refresh\": \"1m\""),
    )
    .unwrap();
    let list = "customMetrics:\n  - metric: guestbook_widgets_total\n    type: counter\n  - metric: guestbook_fetch_seconds\n    type: histogram\n    unit: s\n";
    fs::write(dir.join(CONFIG), list).unwrap();

    kube_scaffold(&dir, &["edit", "--plugins", "grafana/v1-alpha"]).success();
    let dashboard: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join(CUSTOM)).unwrap()).unwrap();
    let exprs: Vec<&str> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["targets"][0]["expr"].as_str().unwrap())
        .collect();
    assert_eq!(exprs.len(), 2, "{exprs:?}");
    assert!(exprs[0].contains("rate(guestbook_widgets_total{job=\"$job\"}[5m])"));
    assert!(exprs[1].contains("guestbook_fetch_seconds_bucket{job=\"$job\"}"));
    let text = fs::read_to_string(&runtime).unwrap();
    assert!(text.contains("\"refresh\": \"1m\""), "the edit was lost");
    assert_eq!(fs::read_to_string(dir.join(CONFIG)).unwrap(), list);
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    let key = "\"grafana.kube-scaffold.io/v1-alpha\"";
    // Named among the project's plugins, and in the edit that first named it (init's).
    assert_eq!(project.matches(key).count(), 2, "{project}");

    // `alpha generate` reads the list and makes the same dashboard.
    kube_scaffold(&dir, &["alpha", "generate", "--output-dir", "../again"]).success();
    let again = dir.parent().unwrap().join("again");
    for file in [CONFIG, CUSTOM] {
        assert_eq!(
            fs::read(again.join(file)).unwrap(),
            fs::read(dir.join(file)).unwrap(),
            "{file}"
        );
    }

    // A list it cannot read: refused, with the fix, nothing written.
    let broken = "customMetrics:\n  - metric: guestbook_widgets_total\n    type: summary\n";
    fs::write(dir.join(CONFIG), broken).unwrap();
    let edit = ["edit", "--plugins", "grafana/v1-alpha"];
    let unread = "error: grafana/custom-metrics/config.yaml cannot be read";
    let stderr = assert_refused(&dir, &edit, 1, unread);
    assert!(
        stderr.contains("help: fix grafana/custom-metrics/config.yaml"),
        "{stderr}"
    );
}
