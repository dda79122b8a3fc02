//! Every combination of `create api` and `create webhook` options a user can give, as
//! generated: `cargo fmt --check`, `cargo clippy --all-targets -- -D warnings` with default
//! features and with all of them, and `cargo test` (which builds everything) pass.
//!
//! A kind's options shape its own files, and each of its files only by some of them: its
//! controller by where its type comes from (its own, Kubernetes', another project's CRD, an
//! adopted CRD, deploy-image), its scope, `--finalizer` and `--owns`; its webhook module by
//! where its type comes from, its scope and which webhooks it has; its type by its scope and
//! versions. So one project holds a kind for every combination of the options that shape one
//! of its files, named after them (`OwnNsFinDepVal`), and the project-wide options that
//! reshape every kind's files (multigroup, self-signed certificates instead of cert-manager's)
//! make the second project. A manager scoped to its namespace, which changes no kind's files
//! and refuses cluster-scoped kinds' controllers, gets a project of its own. Combinations the
//! tool refuses are left out, each with the refusal that covers it in tests/cli/errors.rs.

use std::fs;
use std::path::Path;

use crate::support::{BACKUP_CRD, empty_dir, kube_scaffold, one_at_a_time, run};

/// The webhooks a kind gets, by the suffix of its name.
const HOOKS: [(&str, &[&str]); 3] = [
    ("Def", &["--defaulting"]),
    ("Val", &["--programmatic-validation"]),
    ("Both", &["--defaulting", "--programmatic-validation"]),
];

/// What an own namespaced kind owns: nothing, a generic child, a Pod, a workload, and several
/// kinds, one of them the project's. (A cluster-scoped kind owns nothing: refused.)
const OWNS: [(&str, &[&str]); 5] = [
    ("", &[]),
    ("Cm", &["--owns", "core/v1/ConfigMap"]),
    ("Pod", &["--owns", "core/v1/Pod"]),
    ("Dep", &["--owns", "apps/v1/Deployment"]),
    (
        "Many",
        &[
            "--owns",
            "apps/v1/Deployment",
            "--owns",
            "core/v1/ConfigMap",
            "--owns",
            "own/v1/OwnNsDef",
        ],
    ),
];

/// Kinds Kubernetes defines, in each scope: a controller and webhooks, or webhooks alone.
const BUILTIN: [(&str, &str, &str, bool); 6] = [
    ("apps", "v1", "Deployment", true),
    ("core", "v1", "ConfigMap", true),
    ("core", "v1", "Pod", false),
    ("core", "v1", "Namespace", true),
    ("core", "v1", "PersistentVolume", true),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", false),
];

#[test]
fn every_option_combination_builds_and_lints_in_one_group() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("combinations");
    kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
    scaffold_every_kind(&dir, &[]);
    assert_builds_and_lints(&dir);
}

#[test]
fn every_option_combination_builds_and_lints_in_many_groups_with_self_signed_certificates() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("combinations");
    kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
    kube_scaffold(&dir, &["edit", "--multigroup"]).success();
    scaffold_every_kind(&dir, &["--self-signed"]);
    assert_builds_and_lints(&dir);
}

/// A manager scoped to its namespace (`edit --namespaced`), which refuses cluster-scoped
/// kinds' controllers, with namespaced kinds of each source, then sharded (`edit --sharding`).
#[test]
fn a_manager_scoped_to_its_namespace_builds_and_lints() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("combinations");
    kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
    kube_scaffold(&dir, &["edit", "--namespaced"]).success();
    let own = ["--group", "own", "--version", "v1", "--kind", "Own"];
    let api = ["create", "api", "--resource", "--controller", "--finalizer"];
    let owns = ["--owns", "apps/v1/Deployment"];
    kube_scaffold(&dir, &[&api[..], &own, &owns].concat()).success();
    let deployment = ["--group", "apps", "--version", "v1", "--kind", "Deployment"];
    let api = ["create", "api", "--controller", "--resource=false"];
    kube_scaffold(&dir, &[&api[..], &deployment].concat()).success();
    for gvk in [own, deployment] {
        let hooks = [
            "create",
            "webhook",
            "--defaulting",
            "--programmatic-validation",
        ];
        kube_scaffold(&dir, &[&hooks[..], &gvk].concat()).success();
    }
    kube_scaffold(&dir, &["edit", "--sharding"]).success();
    let patch = fs::read_to_string(dir.join("config/default/manager_webhook_patch.yaml")).unwrap();
    assert!(
        patch.contains("path: /spec/replicas\n  value: 3\n"),
        "{patch}"
    );
    assert_builds_and_lints(&dir);
}

/// Scaffolds the kinds of every combination into the project at `dir`, each webhook with
/// `webhook_flags`.
fn scaffold_every_kind(dir: &Path, webhook_flags: &[&str]) {
    let scaffold = |args: &[&[&str]]| {
        kube_scaffold(dir, &args.concat()).success();
    };
    let webhook = |gvk: &[&str], hooks: &[&str]| {
        scaffold(&[&["create", "webhook"], gvk, hooks, webhook_flags]);
    };

    // The project's own kinds: every scope, finalizer and owned set, and types alone; the
    // webhooks in turn.
    for (scope, namespaced) in [("Ns", "--namespaced=true"), ("Cl", "--namespaced=false")] {
        let owns = match scope {
            "Ns" => &OWNS[..],
            _ => &OWNS[..1],
        };
        let mut hooks = HOOKS.iter().cycle();
        for (fin, finalizer) in [("", None), ("Fin", Some("--finalizer"))] {
            for (owned, owns) in owns {
                let (suffix, hooks) = hooks.next().unwrap();
                let kind = format!("Own{scope}{fin}{owned}{suffix}");
                let gvk = ["--group", "own", "--version", "v1", "--kind", &kind];
                let api = ["create", "api", "--resource", "--controller", namespaced];
                scaffold(&[&api, &gvk, owns, finalizer.as_slice()]);
                webhook(&gvk, hooks);
            }
        }
        let (suffix, hooks) = hooks.next().unwrap();
        let kind = format!("Own{scope}Type{suffix}");
        let gvk = ["--group", "own", "--version", "v1", "--kind", &kind];
        scaffold(&[
            &[
                "create",
                "api",
                "--resource",
                "--controller=false",
                namespaced,
            ],
            &gvk,
        ]);
        webhook(&gvk, hooks);
        // The first kind in a second version, stored, and the conversions between them.
        let kind = format!("Own{scope}Def");
        let v2 = ["--group", "own", "--version", "v2", "--kind", &kind];
        let api = [
            "create",
            "api",
            "--resource",
            "--controller=false",
            "--storage-version",
        ];
        scaffold(&[&api, &v2, &[namespaced]]);
        let conversion = ["create", "webhook", "--conversion", "--spoke", "v1"];
        scaffold(&[&conversion, &v2, webhook_flags]);
    }

    // deploy-image's kinds (namespaced only: a cluster-scoped one is refused), with and
    // without a finalizer.
    let finalizers = [("", None), ("Fin", Some("--finalizer"))];
    for ((fin, finalizer), (suffix, hooks)) in finalizers.into_iter().zip(HOOKS) {
        let kind = format!("Image{fin}{suffix}");
        let gvk = ["--group", "cache", "--version", "v1alpha1", "--kind", &kind];
        let image = [
            "--image",
            "memcached:1.6",
            "--image-container-port",
            "11211",
        ];
        let plugin = ["--plugins", "deploy-image/v1-alpha"];
        scaffold(&[
            &["create", "api"],
            &gvk,
            &image,
            &plugin,
            finalizer.as_slice(),
        ]);
        webhook(&gvk, hooks);
    }

    // Kubernetes' kinds (a finalizer or `--owns` for them is refused), each scope with the
    // three sets of webhooks, with a controller or without.
    for ((group, version, kind, controller), (_, hooks)) in
        BUILTIN.into_iter().zip(HOOKS.iter().cycle())
    {
        let gvk = ["--group", group, "--version", version, "--kind", kind];
        if controller {
            scaffold(&[&["create", "api", "--controller", "--resource=false"], &gvk]);
        }
        webhook(&gvk, hooks);
    }

    // Another project's kinds and adopted ones, from CRDs in each scope, with the three sets
    // of webhooks (`--finalizer` for them is refused).
    let crds = dir.join("crds");
    fs::create_dir(&crds).unwrap();
    for (source, group) in [("Ext", "ext.example.org"), ("Adopted", "ops.example.org")] {
        for scope in ["Ns", "Cl"] {
            for (suffix, hooks) in HOOKS {
                let kind = format!("{source}{scope}{suffix}");
                let crd = crds.join(format!("{kind}.yaml"));
                fs::write(&crd, crd_of(&kind, group, scope == "Ns")).unwrap();
                let crd = crd.to_str().unwrap();
                let gvk = ["--group", group, "--version", "v1", "--kind", &kind];
                match source {
                    "Ext" => {
                        let api = ["create", "api", "--controller", "--resource=false"];
                        let crd = ["--external-api-crd", crd];
                        scaffold(&[&api, &gvk, &crd]);
                    }
                    _ => {
                        scaffold(&[&["create", "api", "--from-crd", crd, "--controller"]]);
                    }
                }
                webhook(&gvk, hooks);
            }
        }
    }
}

/// tests/fixtures/crds/backup.yaml as the kind `kind` in `group`, in the scope asked for.
fn crd_of(kind: &str, group: &str, namespaced: bool) -> String {
    let plural = format!("{}s", kind.to_lowercase());
    let scope = if namespaced { "Namespaced" } else { "Cluster" };
    fs::read_to_string(BACKUP_CRD)
        .unwrap()
        .replace("ops.example.org", group)
        .replace("backups", &plural)
        .replace(
            "singular: backup",
            &format!("singular: {}", kind.to_lowercase()),
        )
        .replace("Backup", kind)
        .replace("    shortNames: [bk]\n", "")
        .replace("scope: Namespaced", &format!("scope: {scope}"))
}

/// The project at `dir` keeps rustfmt's layout, lints clean with its default features and with
/// every feature (`dynamic-linking`, which `make run` turns on), and builds and passes its tests
/// (`cargo test` builds the manager too: the integration tests need it).
fn assert_builds_and_lints(dir: &Path) {
    run(dir, "cargo", &["fmt", "--check"]);
    for features in [None, Some("--all-features")] {
        let clippy = ["clippy", "--all-targets", "--", "-D", "warnings"];
        run(
            dir,
            "cargo",
            &[&clippy[..2], features.as_slice(), &clippy[2..]].concat(),
        );
    }
    run(dir, "cargo", &["test"]);
}
