//! Whole generated projects, compared file by file with `tests/golden/<case>`.

use std::path::Path;

use crate::support::{
    BACKUP, BACKUP_CRD, CERTIFICATE, CERTIFICATE_CONTROLLER, GUESTBOOK, assert_golden, empty_dir,
    files_at, history, kube_scaffold, tool,
};

fn create_api(dir: &Path, args: &[&str]) {
    kube_scaffold(dir, &[&["create", "api"][..], args].concat()).success();
}

#[test]
fn golden_init() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(
        &dir,
        &[
            "init",
            "--domain",
            "mock.com",
            "--owner",
            "The Guestbook Authors",
            "--repo",
            "github.com/me/guestbook",
        ],
    )
    .success();
    assert_golden(&dir, "init");
}

#[test]
fn golden_init_create_api() {
    let (_tmp, dir) = empty_dir("guestbook");
    kube_scaffold(
        &dir,
        &[
            "init",
            "--domain",
            "mock.com",
            "--owner",
            "The Guestbook Authors",
        ],
    )
    .success();
    create_api(&dir, &GUESTBOOK);
    assert_golden(&dir, "create-api");
}

#[test]
fn golden_two_kinds_one_cluster_scoped_self_signed_webhooks_autoupdate_license_by_edit() {
    let (_tmp, dir) = empty_dir("guestbook");
    let init = ["init", "--domain", "mock.com", "--license", "none"];
    let args = [&init[..], &["--plugins", "autoupdate/v1-alpha"]].concat();
    kube_scaffold(&dir, &args).success();
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--resource",
            "--controller",
        ],
    );
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Config",
            "--namespaced=false",
            "--finalizer",
            "--resource",
            "--controller",
        ],
    );
    // Webhooks whose certificates the manager makes (no cert-manager): a validating one on the
    // cluster-scoped kind, a defaulting one on Pods.
    let config = ["--group", "webapp", "--kind", "Config"];
    let validating = ["--programmatic-validation", "--self-signed"];
    let args = [&["create", "webhook"][..], &config, &validating].concat();
    kube_scaffold(&dir, &args).success();
    let pods = [
        "create",
        "webhook",
        "--group",
        "core",
        "--kind",
        "Pod",
        "--defaulting",
    ];
    kube_scaffold(&dir, &pods).success();
    // The license header from now on: hack/boilerplate.rs.txt, recorded as an `edit`.
    let edit = [
        "edit",
        "--license",
        "apache2",
        "--owner",
        "The Guestbook Authors",
    ];
    kube_scaffold(&dir, &edit).success();
    assert_golden(&dir, "two-kinds");
}

/// Issue 9: a kind that owns a Deployment, a ConfigMap and another kind; deploy-image in a
/// full group with dots; a controller of a kind Kubernetes defines, and one of another
/// project's kind from its CRD.
#[test]
fn golden_owned_kinds_deploy_image_builtin_external_adopted_kinds_versions_webhooks_grafana_namespaced_multigroup_sharding_helm()
 {
    let (_tmp, dir) = empty_dir("shop");
    kube_scaffold(&dir, &["init", "--domain", "mock.com", "--license", "none"]).success();
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--resource",
            "--controller",
        ],
    );
    create_api(
        &dir,
        &[
            "--group",
            "webapp",
            "--kind",
            "Site",
            "--resource",
            "--controller",
            "--owns",
            "apps/v1/Deployment",
            "--owns",
            "core/v1/ConfigMap",
            "--owns",
            "webapp/v1/Guestbook",
        ],
    );
    create_api(
        &dir,
        &[
            "--group",
            "example.com",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--image",
            "memcached:1.6.26-alpine3.19",
            "--image-container-command",
            "memcached,--memory-limit=64,-o,modern,-v",
            "--image-container-port",
            "11211",
            "--run-as-user",
            "1001",
            "--plugins",
            "deploy-image/v1-alpha",
        ],
    );
    create_api(&dir, &["--group", "core", "--kind", "Pod", "--controller"]);
    kube_scaffold(&dir, CERTIFICATE_CONTROLLER).success();
    create_api(&dir, &["--from-crd", BACKUP_CRD, "--controller"]);
    // A second version of Guestbook, stored from now on.
    let v2 = [
        "--group",
        "webapp",
        "--version",
        "v2",
        "--kind",
        "Guestbook",
    ];
    create_api(&dir, &[&v2[..], &["--storage-version"]].concat());
    // Webhooks: defaulting first, validation added later.
    for hook in ["--defaulting", "--programmatic-validation"] {
        let args = [&["create", "webhook"][..], &GUESTBOOK, &[hook]].concat();
        kube_scaffold(&dir, &args).success();
    }
    // Conversions: v1 to and from v2, the stored version and hub.
    let conversion = [
        &["create", "webhook"][..],
        &v2,
        &["--conversion", "--spoke", "v1"],
    ]
    .concat();
    kube_scaffold(&dir, &conversion).success();
    // Webhooks for the kinds whose types came from CRDs: their tests draw objects from the
    // schemas.
    let args = [
        &["create", "webhook"][..],
        CERTIFICATE,
        &["--programmatic-validation"],
    ]
    .concat();
    kube_scaffold(&dir, &args).success();
    let args = [&["create", "webhook"][..], BACKUP, &["--defaulting"]].concat();
    kube_scaffold(&dir, &args).success();
    kube_scaffold(&dir, &["edit", "--plugins", "grafana/v1-alpha"]).success();
    kube_scaffold(&dir, &["edit", "--namespaced"]).success();
    kube_scaffold(&dir, &["edit", "--multigroup"]).success();
    // Sharded before the chart is made: the chart runs 3 replicas with `--sharding`.
    kube_scaffold(&dir, &["edit", "--sharding"]).success();
    // The helm chart, from what `make build-installer` writes (with the pinned standalone
    // kustomize; without `make manifests`, whose output `create api` wrote already).
    let kustomize = format!("KUSTOMIZE={}", tool("kustomize").display());
    let img = "IMG=registry.example.com/shop:v0.1.0";
    let installer = ["-o", "manifests", "build-installer", &kustomize, img];
    let made = std::process::Command::new("make")
        .args(installer)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    // The installer is a build's output, which git ignores (.gitignore): the golden tree, in
    // git, cannot hold it.
    std::fs::remove_file(dir.join("dist/install.yaml")).unwrap();
    // The project's own metrics, listed, and their dashboard.
    let list = "customMetrics:\n  - metric: shop_widgets_total\n    type: counter\n  - metric: shop_queue_depth\n    type: gauge\n  - metric: shop_fetch_seconds\n    type: histogram\n    unit: s\n";
    std::fs::write(dir.join("grafana/custom-metrics/config.yaml"), list).unwrap();
    kube_scaffold(&dir, &["edit", "--plugins", "grafana/v1-alpha"]).success();
    assert_golden(&dir, "owned-kinds");
}

/// A released layout's Rust, `src/layouts/`, is as it was frozen: the commit that last
/// changed it (copying what it used of later code, so that it imports no `plugins` or
/// `codegen`), read from this repository's history.
#[test]
fn released_layouts_keep_their_rust() {
    const FROZEN: &str = "f772c0a";
    let changed = history(&["diff", "--stat", FROZEN, "--", "src/layouts"]);
    let changed = String::from_utf8_lossy(&changed);
    assert!(
        changed.is_empty(),
        "src/layouts changed since {FROZEN}, where it was frozen:\n{changed}"
    );
}

/// A released layout's templates, `scaffolds/<layout>/`, are what its release shipped, byte
/// for byte and file for file: the base `upgrade` merges against never moves. Read from the
/// release's commit (tagged `v0.1.0`, `v0.2.0`) in this repository's history.
#[test]
fn released_layouts_keep_their_templates() {
    // Layout v1: kube-scaffold 0.1.0's `scaffolds/`; layout v2: 0.2.0's `scaffolds/v2`.
    const RELEASES: &[(&str, &str, &str)] = &[
        ("v1", "5bbbfdc", "scaffolds"),
        ("v2", "bcfc6c3", "scaffolds/v2"),
    ];
    let repo = env!("CARGO_MANIFEST_DIR");
    for (layout, commit, dir) in RELEASES {
        let released: Vec<String> = files_at(commit, dir)
            .iter()
            .map(|path| path[dir.len() + 1..].to_string())
            .collect();
        let mut kept = crate::support::tree(&Path::new(repo).join("scaffolds").join(layout));
        kept.retain(|path, _| !path.ends_with('/'));
        let names: Vec<&String> = kept.keys().collect();
        assert_eq!(
            names,
            released.iter().collect::<Vec<_>>(),
            "scaffolds/{layout}'s files"
        );
        for (path, text) in &kept {
            let shipped = history(&["show", &format!("{commit}:{dir}/{path}")]);
            assert!(
                *text == shipped,
                "scaffolds/{layout}/{path} differs from {commit}'s"
            );
        }
    }
}
