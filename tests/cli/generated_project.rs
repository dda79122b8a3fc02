//! The product test: generate projects outside this repository and run in them what their
//! user would. There is no API server and no container engine on the machines this runs on,
//! so it stops at the cluster's door: `make install`, `uninstall`, `deploy` and `undeploy` run
//! against a kubectl STAND-IN (tests/tools/kubectl_stand_in.sh) that records what it was given
//! and hands `kubectl kustomize` to the real kubectl; the image is linted (hadolint), not built.
//!
//! Needs kubectl (for its built-in kustomize; the Makefile's default when no kustomize is
//! installed), kustomize, kubernetes-validate, hadolint and python3 with PyYAML and jsonschema:
//! `scripts/install-test-tools` installs all but kubectl. Builds share one target directory
//! (`target/tmp/generated-target`), so only the first run pays for the dependencies.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::generated_build::{BUILD_ENV, target_dir};
use crate::support::{
    BACKUP, BACKUP_CRD, CERTIFICATE, CERTIFICATE_CONTROLLER, GUESTBOOK, POSTGRESQL_CRD, empty_dir,
    kube_scaffold, one_at_a_time, run, run_with, tool,
};

/// The Kubernetes version manifests are validated against: the oldest the project supports.
const KUBERNETES: &str = "1.33.0";

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// kubernetes-validate exits 0 on kinds it does not know, so any output is a failure. It
/// knows no cert-manager kinds: those documents are returned, for checks of their own, and the
/// others validated.
fn assert_valid_manifests(dir: &Path, file: &Path) -> Vec<String> {
    let manifests = fs::read_to_string(file).unwrap();
    let (cert_manager, kubernetes): (Vec<&str>, Vec<&str>) = manifests
        .split("\n---\n")
        .partition(|doc| doc.contains("apiVersion: cert-manager.io/"));
    let file = file.with_extension("kubernetes.yaml");
    fs::write(&file, kubernetes.join("\n---\n")).unwrap();
    let file = file.to_str().unwrap();
    let output = run(
        dir,
        tool("kubernetes-validate"),
        &["-k", KUBERNETES, "--strict", "--quiet", file],
    );
    let said = format!(
        "{}{}",
        text(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.trim().is_empty(),
        "kubernetes-validate on {file}:\n{said}"
    );
    cert_manager.into_iter().map(String::from).collect()
}

/// `kubectl kustomize`: what the generated Makefile uses when no kustomize is installed.
fn kustomize_build(dir: &Path, path: &str, out: &str) -> PathBuf {
    let output = run(dir, "kubectl", &["kustomize", path]);
    let file = dir.join(out);
    fs::write(&file, &output.stdout).unwrap();
    file
}

#[test]
fn an_initialized_project_builds_without_warnings() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("fresh-operator");
    kube_scaffold(&dir, &["init", "--domain", "example.com"]).success();
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    run(&dir, "cargo", &["fmt", "--check"]);
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    run(&dir, "make", &["manifests"]);
    assert_eq!(
        fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap(),
        role,
        "`make manifests` rewrites the role.yaml that init wrote"
    );

    // Only a controller of a built-in kind: the fake API server's unused parts warn nothing.
    kube_scaffold(&dir, &["create", "api", "--group", "core", "--kind", "Pod"]).success();
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    let tests = text(&run(&dir, "cargo", &["test", "--lib", "controller::pod"]));
    assert!(tests.contains("test result: ok. 1 passed"), "{tests}");

    // A webhook whose certificate the manager makes (no cert-manager): its certificates
    // module's tests (a stand-in API server: the Secret made once and shared, renewed by the
    // same CA, the CA injected), and config/default with RBAC for exactly its Secret and
    // configurations, in the project's namespace and with its prefix.
    let webhook = [
        "create",
        "webhook",
        "--group",
        "core",
        "--kind",
        "Pod",
        "--defaulting",
        "--self-signed",
    ];
    kube_scaffold(&dir, &webhook).success();
    let manifests = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    let tests = text(&run(&dir, "cargo", &["test", "--lib", "webhook::"]));
    // The project's conversions 1, Pod's defaulting webhook 1 (the server's and certificates'
    // tests are the runtime crate's, run in kube-scaffold's repository).
    assert!(tests.contains("test result: ok. 2 passed"), "{tests}");
    run(&dir, "make", &["manifests"]);
    let after = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    assert_eq!(
        after, manifests,
        "`make manifests` rewrites the webhook manifests"
    );
    let all = kustomize_build(&dir, "config/default", "all.yaml");
    assert_eq!(assert_valid_manifests(&dir, &all), Vec::<String>::new());
    let all = fs::read_to_string(&all).unwrap();
    for wanted in [
        "  name: fresh-operator-webhook-certs-role\n  namespace: fresh-operator-system\n",
        "  resourceNames:\n  - webhook-server-cert\n",
        "  resourceNames:\n  - fresh-operator-mutating-webhook-configuration\n",
        "- --webhook-cert-secret=webhook-server-cert\n",
        "- name: WEBHOOK_SERVICE\n          value: fresh-operator-webhook-service\n",
        "- emptyDir: {}\n        name: webhook-certs\n",
    ] {
        assert!(all.contains(wanted), "{wanted}:\n{all}");
    }
    assert!(!all.contains("cert-manager"), "{all}");

    // A kind that owns only a kind with no builder of the tool's (a Pod, as an operator that
    // makes pods): no test helper left unused (`spec_applied` was; found on the real node).
    let custom_pod =
        "create api --group ship --kind CustomPod --resource --controller --owns core/v1/Pod";
    kube_scaffold(&dir, &custom_pod.split(' ').collect::<Vec<_>>()).success();
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
}

/// Issue 8's promise: a project of kube-scaffold 0.1.0, edited by its user, upgrades with one
/// command, keeps the edits, and builds, lints and passes its tests; so it does after an
/// owned kind is added to its edited controller (`create api --owns`, issue 50).
#[test]
fn an_edited_project_of_0_1_upgrades_and_builds() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = crate::upgrade::project_of_0_1("create-api");
    let kept = crate::upgrade::user_edits(&dir);
    kube_scaffold(&dir, &["upgrade"]).success();
    let owns = [
        &["create", "api"][..],
        &GUESTBOOK,
        &["--owns", "core/v1/ConfigMap"],
    ]
    .concat();
    kube_scaffold(&dir, &owns).success();
    for (file, line) in kept {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains(line), "{file} lost `{line}`");
    }
    let controller = fs::read_to_string(dir.join("src/controller/guestbook.rs")).unwrap();
    assert!(
        controller.contains("Owned::of::<ConfigMap>()"),
        "{controller}"
    );
    run(&dir, "cargo", &["fmt", "--check"]);
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    let tests = text(&run(&dir, "cargo", &["test"]));
    // Guestbook's five (0.1.0's controller had a finalizer) and its ConfigMap's two; no
    // webhook, so no list of conversions and its test.
    assert!(
        tests.contains("test result: ok. 7 passed; 0 failed"),
        "{tests}"
    );
    run(&dir, "make", &["manifests"]);
    let crd =
        fs::read_to_string(dir.join("config/crd/bases/webapp.mock.com_guestbooks.yaml")).unwrap();
    assert!(
        crd.contains("capacity:"),
        "the user's field is in the CRD:\n{crd}"
    );
    assert!(crd.contains("x-kubernetes-list-type: map"), "{crd}");
}

#[test]
fn a_generated_project_builds_lints_tests_and_validates() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("guestbook");
    // Kinds named like items the generated code uses (issue: they must still compile), one
    // cluster-scoped, and a long kind in a long group (rustfmt breaks its lines differently).
    let kinds: &[&[&str]] = &[
        &["--group", "webapp", "--kind", "Guestbook"],
        &[
            "--group",
            "webapp",
            "--kind",
            "Config",
            "--namespaced=false",
            "--finalizer",
        ],
        &[
            "--group",
            "ops",
            "--version",
            "v1alpha1",
            "--kind",
            "Result",
            "--finalizer",
        ],
        &["--group", "ops", "--version", "v1alpha1", "--kind", "Event"],
        &["--group", "ops", "--version", "v1alpha1", "--kind", "Error"],
        &[
            "--group",
            "ops",
            "--version",
            "v1alpha1",
            "--kind",
            "Context",
        ],
        &[
            "--group",
            "ops",
            "--version",
            "v1alpha1",
            "--kind",
            "Client",
        ],
        &[
            "--group",
            "ops",
            "--version",
            "v1alpha1",
            "--kind",
            "Action",
        ],
        &[
            "--group",
            "infrastructure-automation",
            "--version",
            "v1beta1",
            "--kind",
            "MutatingWebhookConfiguration",
            "--finalizer",
        ],
    ];
    kube_scaffold(&dir, &["init", "--domain", "mock.com"]).success();
    for kind in kinds {
        kube_scaffold(
            &dir,
            &[&["create", "api", "--resource", "--controller"][..], kind].concat(),
        )
        .success();
    }
    // A kind that owns a Deployment, a ConfigMap and a kind of the project (issue 9).
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
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
    )
    .success();
    // deploy-image, with kubebuilder's flags, in a full group with dots (issue 9).
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
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
    )
    .success();
    // A controller for another project's kind, its types generated from its CRD (issue 9).
    kube_scaffold(&dir, CERTIFICATE_CONTROLLER).success();
    // A controller for a kind Kubernetes defines (issue 9).
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Deployment",
            "--controller",
        ],
    )
    .success();
    // A second version of Guestbook, stored from now on: v1's type says `storage = false`
    // (issue 10). Guestbook's controller (v1) reconciles both.
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v2",
            "--kind",
            "Guestbook",
            "--storage-version",
        ],
    )
    .success();
    // Webhooks (issue 10): both kinds on Guestbook v1, a defaulting one on deploy-image's
    // Memcached.
    let hooks = ["--defaulting", "--programmatic-validation"];
    kube_scaffold(
        &dir,
        &[&["create", "webhook"][..], &GUESTBOOK, &hooks].concat(),
    )
    .success();
    let memcached = [
        "--group",
        "example.com",
        "--version",
        "v1alpha1",
        "--kind",
        "Memcached",
    ];
    let defaulting = ["--defaulting"];
    kube_scaffold(
        &dir,
        &[&["create", "webhook"][..], &memcached, &defaulting].concat(),
    )
    .success();
    // Both kinds of webhook on a kind Kubernetes defines, without a `create api`.
    kube_scaffold(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "core",
            "--version",
            "v1",
            "--kind",
            "Pod",
            "--defaulting",
            "--programmatic-validation",
        ],
    )
    .success();
    // Conversions between Guestbook's versions, through v2 (stored): the API server can
    // store v2 and serve v1.
    kube_scaffold(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v2",
            "--kind",
            "Guestbook",
            "--conversion",
            "--spoke",
            "v1",
        ],
    )
    .success();
    // A CRD the user had, adopted as the project's kind: two versions, v1 stored (issue 9).
    kube_scaffold(
        &dir,
        &["create", "api", "--from-crd", BACKUP_CRD, "--controller"],
    )
    .success();
    // Both kinds of webhook on the kinds whose types came from CRDs: another project's
    // (cert-manager's Certificate) and the adopted Backup. Their tests draw objects from the
    // kinds' schemas.
    for kind in [CERTIFICATE, BACKUP] {
        kube_scaffold(&dir, &[&["create", "webhook"][..], kind, &hooks].concat()).success();
    }
    // Another project's kind whose name starts lowercase (zalando's `postgresql`): kopium's
    // `Postgresql` in the code, the CRD's name in the manifests.
    let postgresql = [
        "--group",
        "acid.zalan.do",
        "--version",
        "v1",
        "--kind",
        "postgresql",
    ];
    let controller = ["create", "api", "--controller", "--resource=false"];
    let external = ["--external-api-crd", POSTGRESQL_CRD];
    kube_scaffold(&dir, &[&controller[..], &postgresql, &external].concat()).success();
    let validating = ["create", "webhook", "--programmatic-validation"];
    kube_scaffold(&dir, &[&validating[..], &postgresql].concat()).success();
    // Controllers and hooks moved under their groups (issue 21), and then a kind of the same
    // name in another group, with a defaulting hook.
    kube_scaffold(&dir, &["edit", "--multigroup"]).success();
    let ship = ["--group", "ship", "--kind", "Guestbook"];
    let api = ["create", "api", "--resource", "--controller"];
    kube_scaffold(&dir, &[&api[..], &ship].concat()).success();
    kube_scaffold(
        &dir,
        &[&["create", "webhook"][..], &ship, &defaulting].concat(),
    )
    .success();
    // The plugins of the whole project (helm's, made from the installer, comes below).
    let plugins = "grafana/v1-alpha,autoupdate/v1-alpha";
    kube_scaffold(&dir, &["edit", "--plugins", plugins]).success();

    // The code, as generated.
    run(&dir, "cargo", &["build"]);
    run(&dir, "cargo", &["fmt", "--check"]);
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    let tests = run(&dir, "cargo", &["test"]);
    let summary = text(&tests);
    // Three per kind and two more with a finalizer; for `Site`, two of its own (its
    // Deployment makes it wait, so no "becomes available at once" tests; one checks that a
    // Site being deleted gets no children), four for the Deployment, three for the
    // ConfigMap, two for the Guestbook; for `Memcached`, two of its own and four for its
    // Deployment; one each for the controllers of Deployments,
    // Certificates and the adopted `Backup` (an object drawn from its schema: kopium cannot
    // derive `Default` for its enums); two for each defaulting webhook, five for the
    // validating one; one and three for Pod's; one and two each for the hooks of Certificate
    // and Backup (property tests); one for the `postgresql` controller and two for its
    // validating hook; two round trips for Guestbook's conversions; one for the list of
    // conversions (the machinery's tests, retries included, are the runtime crate's); three
    // for ship's Guestbook and two for its defaulting webhook.
    let finalizers = kinds.iter().filter(|k| k.contains(&"--finalizer")).count();
    let expected = 3 * kinds.len()
        + (3 + 2)
        + 2 * finalizers
        + (2 + 4 + 3 + 2)
        + (2 + 4)
        + 1
        + 1
        + 1
        + (2 + 5 + 2)
        + (1 + 3)
        + 2 * (1 + 2)
        + (1 + 2)
        + 2
        + 1;
    assert!(
        summary.contains(&format!(
            "test result: ok. {expected} passed; 0 failed; 0 ignored"
        )),
        "expected {expected} passing tests:\n{summary}"
    );

    // The manager itself, against a stand-in API server on loopback (no cluster: see
    // tests/tools/manager_smoke.py for what the stand-in answers): it fails fast without an
    // API server or a CRD, becomes ready once every cache synced, reconciles and counts in
    // /metrics, and stops on SIGTERM.
    let smoke = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tools/manager_smoke.py");
    let manager = target_dir().join("debug/guestbook");
    let mut smoke_args = vec![smoke.to_string(), manager.to_string_lossy().into_owned()];
    smoke_args.extend(
        [
            "webapp.mock.com/v1/guestbooks/Guestbook",
            "webapp.mock.com/v1/configs/Config/cluster",
            "ops.mock.com/v1alpha1/results/Result",
            "ops.mock.com/v1alpha1/events/Event",
            "ops.mock.com/v1alpha1/errors/Error",
            "ops.mock.com/v1alpha1/contexts/Context",
            "ops.mock.com/v1alpha1/clients/Client",
            "ops.mock.com/v1alpha1/actions/Action",
            "infrastructure-automation.mock.com/v1beta1/mutatingwebhookconfigurations/MutatingWebhookConfiguration",
            "webapp.mock.com/v1/sites/Site",
            "example.com/v1alpha1/memcacheds/Memcached",
            "cert-manager.io/v1/certificates/Certificate",
            "apps/v1/deployments/Deployment",
            "core/v1/configmaps/ConfigMap",
            "ops.example.org/v1/backups/Backup",
            "ops.example.org/v1alpha1/backups/Backup",
            "webapp.mock.com/v2/guestbooks/Guestbook",
            "acid.zalan.do/v1/postgresqls/postgresql",
            "ship.mock.com/v1/guestbooks/Guestbook",
        ]
        .map(String::from),
    );
    let smoke_args: Vec<&str> = smoke_args.iter().map(String::as_str).collect();
    // With webhooks: the manager serves Guestbook's defaulting webhook over TLS (a certificate
    // made by openssl), and exits naming the flag without one.
    let checks = text(&run_with(
        &dir,
        "python3",
        &smoke_args,
        &[
            ("SMOKE_WEBHOOK", "/mutate-webapp-mock-com-v1-guestbook"),
            ("SMOKE_CONVERSION", "v2"),
            ("SMOKE_EXTERNAL", "acid.zalan.do/v1/postgresqls"),
        ],
    ));
    assert_eq!(checks.matches("ok: ").count(), 19, "{checks}");
    // Twelve kinds, the four kinds Site and Memcached own, and the controllers of Deployments,
    // Certificates, Backups and postgresqls.
    assert!(
        checks.contains("every controller watches its kind (20 watches)"),
        "{checks}"
    );

    // The manifests: `create api` wrote them as `make manifests` does, so a new project passes
    // its own lint workflow's drift check before anyone runs `make manifests`; but for the
    // adopted CRD, which `make manifests` writes from the types for the first time.
    let adopted = "config/crd/bases/ops.example.org_backups.yaml";
    let scaffolded = config_files(&dir);
    let manifests = text(&run(&dir, "make", &["manifests"]));
    let after = config_files(&dir);
    assert_eq!(
        changed(&scaffolded, &after),
        [adopted],
        "`make manifests` changed what create api wrote under config/"
    );
    let regenerated = fs::read_to_string(dir.join(adopted)).unwrap();
    let input = fs::read_to_string(BACKUP_CRD).unwrap();
    assert_eq!(crd_differences(&input, &regenerated), ADOPTION_DIFFERENCES);
    for crd in [
        "webapp.mock.com_guestbooks",
        "webapp.mock.com_configs",
        "ops.mock.com_results",
        "infrastructure-automation.mock.com_mutatingwebhookconfigurations",
    ] {
        let file = format!("config/crd/bases/{crd}.yaml");
        assert!(manifests.contains(&format!("wrote {file}")), "{manifests}");
        assert!(dir.join(&file).exists(), "{file}");
    }
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(
        role.contains("- guestbooks/status") && role.contains("- results/finalizers"),
        "{role}"
    );
    let deployments = "- apps\n  resources:\n  - deployments\n  verbs:\n  - create\n  - get\n";
    assert!(
        role.contains(deployments),
        "Site's rules on its Deployments:\n{role}"
    );
    // Guestbook's CRD as `make manifests` writes it (and `create api` did): both versions,
    // v2 stored.
    let guestbooks =
        fs::read_to_string(dir.join("config/crd/bases/webapp.mock.com_guestbooks.yaml")).unwrap();
    let crd: serde_json::Value = serde_saphyr::from_str(&guestbooks).unwrap();
    let stored: Vec<(&str, bool)> = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["storage"] == true))
        .collect();
    assert_eq!(stored, [("v1", false), ("v2", true)], "{guestbooks}");
    let config_crd =
        fs::read_to_string(dir.join("config/crd/bases/webapp.mock.com_configs.yaml")).unwrap();
    assert!(config_crd.contains("scope: Cluster"), "{config_crd}");

    let all = kustomize_build(&dir, "config/default", "all.yaml");
    let cert_manager = assert_valid_manifests(&dir, &all);
    assert_webhooks_wired(&fs::read_to_string(&all).unwrap(), &cert_manager);
    let samples = kustomize_build(&dir, "config/samples", "samples.yaml");
    let checker = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tools/check_samples.py");
    let checked = text(&run(
        &dir,
        "python3",
        &[checker, "config/crd/bases", samples.to_str().unwrap()],
    ));
    // The nine kinds above, Site, Memcached and the adopted Backup (which has no sample), and
    // a sample for Guestbook v2, and ship's Guestbook: the controllers of Deployments and
    // Certificates have no CRD of the project's.
    let crds = kinds.len() + 4;
    let counts = format!("{crds} CRDs, {crds} samples, 0 problems");
    assert!(checked.contains(&counts), "{checked}");

    // The opt-in parts of config/default.
    let policy = kustomize_build(&dir, "config/network-policy", "network-policy.yaml");
    assert_valid_manifests(&dir, &policy);
    let monitor = kustomize_build(&dir, "config/prometheus", "prometheus.yaml");
    let monitor_text = fs::read_to_string(&monitor).unwrap();
    assert!(
        monitor_text.contains("kind: ServiceMonitor"),
        "{monitor_text}"
    );

    // Every YAML file parses, the GitHub workflows included.
    let parse = "import sys, yaml\nfor f in sys.argv[1:]:\n    list(yaml.safe_load_all(open(f)))\nprint(len(sys.argv) - 1)";
    let mut yaml_files = vec![];
    for sub in [
        ".github/workflows",
        "config/default",
        "config/manager",
        "config/rbac",
        "config/samples",
    ] {
        for entry in fs::read_dir(dir.join(sub)).unwrap() {
            yaml_files.push(entry.unwrap().path().to_string_lossy().into_owned());
        }
    }
    let args: Vec<&str> = ["-c", parse]
        .into_iter()
        .chain(yaml_files.iter().map(String::as_str))
        .collect();
    let parsed = text(&run(&dir, "python3", &args));
    assert_eq!(parsed.trim(), yaml_files.len().to_string());
    let workflows = fs::read_dir(dir.join(".github/workflows")).unwrap().count();
    assert_eq!(workflows, 4, "test, lint, e2e and auto_update workflows");

    // The image: linted, since no container engine runs here.
    let lint = run(&dir, tool("hadolint"), &["Dockerfile"]);
    assert!(text(&lint).trim().is_empty(), "hadolint: {}", text(&lint));

    // The development container's JSON and the dashboards parse; the container's script
    // passes shellcheck.
    let json = "import json,sys\nfor f in sys.argv[1:]: json.load(open(f))\nprint('ok')";
    let parsed = run(
        &dir,
        "python3",
        &[
            "-c",
            json,
            ".devcontainer/devcontainer.json",
            "grafana/controller-runtime-metrics.json",
            "grafana/controller-resources-metrics.json",
        ],
    );
    assert_eq!(text(&parsed).trim(), "ok");
    let lint = run(&dir, tool("shellcheck"), &[".devcontainer/post-install.sh"]);
    assert!(text(&lint).trim().is_empty(), "shellcheck: {}", text(&lint));
    let agents = fs::read_to_string(dir.join("AGENTS.md")).unwrap();
    for target in [
        "make manifests",
        "make test-integration",
        "kube-scaffold upgrade",
    ] {
        assert!(agents.contains(target), "AGENTS.md lacks `{target}`");
    }

    // The installer, with the image set, through kubectl's kustomize (none other installed)
    // and through a standalone kustomize: the same bytes, and config/ left as it was.
    let img = "IMG=registry.example.com:5000/guestbook:v0.1.0";
    let before_installer = config_files(&dir);
    run(&dir, "make", &["build-installer", "KUSTOMIZE=", img]);
    let installer = dir.join("dist/install.yaml");
    let installer_text = fs::read_to_string(&installer).unwrap();
    assert!(
        installer_text.contains("image: registry.example.com:5000/guestbook:v0.1.0"),
        "{installer_text}"
    );
    assert!(
        installer_text.contains("pod-security.kubernetes.io/enforce: restricted"),
        "the manager's namespace does not enforce the restricted standard"
    );
    assert_valid_manifests(&dir, &installer);
    let kustomize_var = format!("KUSTOMIZE={}", tool("kustomize").display());
    run(&dir, "make", &["build-installer", &kustomize_var, img]);
    assert_eq!(fs::read_to_string(&installer).unwrap(), installer_text);
    let after = config_files(&dir);
    assert!(
        after == before_installer,
        "build-installer edited config/: {:?}",
        changed(&before_installer, &after)
    );
    // The helm chart made from it (webhooks, cert-manager, a PodDisruptionBudget): it lints,
    // and renders what the installer holds.
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    crate::helm::helm_lint(&dir);
    crate::helm::assert_renders(&dir, &crate::helm::expected_from(&installer_text));

    // The cluster's door: every target that talks to a cluster, with a kubectl stand-in.
    let door = ClusterDoor::new(&dir);
    door.make(&["install"], &[]).success();
    // A pipeline's two kubectls run at once: either may come first in the log.
    let mut calls = door.calls();
    calls.sort();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].0, "apply --server-side -f -");
    assert_eq!(calls[1].0, "kustomize config/crd");
    let applied = calls[0].1.clone();
    assert_eq!(
        applied.matches("kind: CustomResourceDefinition").count(),
        crds
    );
    assert!(
        !applied.contains("certificates.cert-manager.io"),
        "make install installed the external CRD"
    );
    let applied_file = dir.join("applied.yaml");
    fs::write(&applied_file, &applied).unwrap();
    assert_valid_manifests(&dir, &applied_file);

    // uninstall: the objects of every kind first, then the CRDs, each within the timeout.
    let door = ClusterDoor::new(&dir);
    door.make(&["uninstall"], &[]).success();
    let calls: Vec<String> = door.calls().into_iter().map(|(args, _)| args).collect();
    let deletes: Vec<&String> = calls.iter().filter(|c| c.starts_with("delete")).collect();
    assert_eq!(deletes.len(), crds + 1, "{calls:?}");
    for delete in &deletes[..crds] {
        assert!(
            delete.ends_with("--all --all-namespaces --ignore-not-found --timeout=60s"),
            "{delete}"
        );
    }
    assert!(
        deletes
            .iter()
            .any(|d| d.starts_with("delete guestbooks.webapp.mock.com "))
    );
    assert_eq!(
        deletes[crds].as_str(),
        "delete --ignore-not-found=false --timeout=60s -f -"
    );

    // deploy, with the image set and config/ left as it was.
    let door = ClusterDoor::new(&dir);
    door.make(&["deploy", img], &[]).success();
    let calls = door.calls();
    let deployed = &calls
        .iter()
        .find(|(a, _)| a.starts_with("apply"))
        .unwrap()
        .1;
    assert!(deployed.contains("image: registry.example.com:5000/guestbook:v0.1.0"));
    assert_eq!(
        deployed.matches("kind: CustomResourceDefinition").count(),
        crds
    );
    assert_eq!(
        config_files(&dir),
        before_installer,
        "deploy edited config/"
    );

    // undeploy when objects keep a finalizer no controller removes: it stops, within the
    // timeout, with the fix, and deletes neither the manager nor the CRDs.
    let door = ClusterDoor::new(&dir);
    let stuck = door
        .make(
            &["undeploy"],
            &[("STAND_IN_STUCK", "configs.webapp.mock.com")],
        )
        .failure();
    let stderr = String::from_utf8_lossy(&stuck.get_output().stdout).into_owned()
        + &String::from_utf8_lossy(&stuck.get_output().stderr);
    assert!(
        stderr.contains("error: objects of configs.webapp.mock.com were not deleted within 60s")
            && stderr.contains("help: make sure the manager runs"),
        "{stderr}"
    );
    let calls = door.calls();
    assert!(
        !calls
            .iter()
            .any(|(a, _)| a.ends_with("-f -") && a.starts_with("delete")),
        "undeploy went on after objects were stuck: {calls:?}"
    );
}

/// A kubectl STAND-IN on the far side of `make`: no API server runs here.
struct ClusterDoor {
    dir: PathBuf,
    log: tempfile::TempDir,
}

impl ClusterDoor {
    fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            log: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs `make <args>` with the stand-in as KUBECTL and no standalone kustomize.
    fn make(&self, args: &[&str], env: &[(&str, &str)]) -> assert_cmd::assert::Assert {
        let stand_in = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/tools/kubectl_stand_in.sh"
        );
        let mut command = assert_cmd::Command::new("make");
        command
            .args(args)
            .arg(format!("KUBECTL={stand_in}"))
            .arg("KUSTOMIZE=")
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .envs(BUILD_ENV)
            .env("STAND_IN_LOG", self.log.path())
            .envs(env.iter().copied())
            .write_stdin("");
        command.assert()
    }

    /// Each call the stand-in took, in order: its arguments and what it read from stdin.
    fn calls(&self) -> Vec<(String, String)> {
        let log = fs::read_to_string(self.log.path().join("calls.log")).unwrap_or_default();
        log.lines()
            .map(|line| {
                let (args, input) = line.split_once('\t').unwrap();
                (
                    args.to_string(),
                    fs::read_to_string(input).unwrap_or_default(),
                )
            })
            .collect()
    }
}

/// The names of the files under `config/` that differ between two snapshots.
fn changed(before: &[(String, Vec<u8>)], after: &[(String, Vec<u8>)]) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = before
        .iter()
        .chain(after)
        .filter(|entry| !before.contains(entry) || !after.contains(entry))
        .map(|(name, _)| name.clone())
        .collect();
    names.into_iter().collect()
}

/// Every file under `config/`, with its content.
fn config_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.join("config")];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.push((name, fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// One edit of the tutorial: in `file`, `old` becomes `new`.
struct Edit {
    file: String,
    old: String,
    new: String,
}

/// The edits of docs/tutorial-sample-controller.md: its ```diff blocks, each applied to the
/// file its section names (the tests' section edits the controller). A line ` ...` splits a
/// block into hunks. Also returns the lines added and removed.
fn tutorial_edits(doc: &str) -> (Vec<Edit>, usize, usize) {
    let (mut edits, mut added, mut removed) = (Vec::new(), 0, 0);
    let mut file = String::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(heading) = line.strip_prefix("## ") {
            file = match heading.split('`').nth(1) {
                Some(path) => path.to_string(),
                None => "src/controller/foo.rs".to_string(),
            };
        }
        if line != "```diff" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        for hunk in block.split(|l| *l == " ...") {
            let (mut old, mut new) = (String::new(), String::new());
            for line in hunk {
                let (sign, text) = line.split_at(1);
                if sign != "+" {
                    old.push_str(text);
                    old.push('\n');
                }
                if sign != "-" {
                    new.push_str(text);
                    new.push('\n');
                }
                added += usize::from(sign == "+");
                removed += usize::from(sign == "-");
            }
            edits.push(Edit {
                file: file.clone(),
                old,
                new,
            });
        }
    }
    (edits, added, removed)
}

/// The sample-controller tutorial, as written: its edits apply to what `create api --owns`
/// scaffolds, and the result builds, lints clean and passes its tests; the line counts it
/// states are the diffs' own.
#[test]
fn the_sample_controller_tutorial_builds_and_passes_its_tests() {
    let _turn = one_at_a_time();
    let (_tmp, dir) = empty_dir("sample-controller");
    kube_scaffold(&dir, &["init", "--domain", "example.com"]).success();
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "samplecontroller",
            "--version",
            "v1alpha1",
            "--kind",
            "Foo",
            "--resource",
            "--controller",
            "--owns",
            "apps/v1/Deployment",
        ],
    )
    .success();
    let doc_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/tutorial-sample-controller.md"
    );
    let doc = fs::read_to_string(doc_path).unwrap();
    let (edits, added, removed) = tutorial_edits(&doc);
    let claim = format!("{added} lines added,\n{removed} removed.");
    assert!(doc.contains(&claim), "the tutorial should say: {claim}");
    assert!(
        doc.contains(&format!("**{added} lines of your code**")),
        "{added}"
    );
    for edit in &edits {
        let path = dir.join(&edit.file);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.matches(&edit.old).count(),
            1,
            "{}: the tutorial's lines are not there once:\n{}",
            edit.file,
            edit.old
        );
        fs::write(&path, text.replacen(&edit.old, &edit.new, 1)).unwrap();
    }
    run(&dir, "cargo", &["fmt", "--check"]);
    run(
        &dir,
        "cargo",
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    let tests = text(&run(&dir, "cargo", &["test", "--lib"]));
    // Foo's two, four for its Deployment (no webhook: no list of conversions).
    assert!(tests.contains("test result: ok. 6 passed"), "{tests}");
    run(&dir, "make", &["manifests"]);
    let crd = dir.join("config/crd/bases/samplecontroller.example.com_foos.yaml");
    let crd = fs::read_to_string(crd).unwrap();
    assert!(crd.contains("- deploymentName"), "{crd}");
}

/// What differs between tests/fixtures/crds/backup.yaml and the CRD `make manifests` writes
/// from the types `create api --from-crd` made of it (docs/commands.md explains each).
/// In short: validations the types cannot carry are lost (`default`, `minimum`, `maximum`,
/// `pattern`, `maxLength`, `format: date-time`), optional fields become `nullable` (an optional
/// enum also admits `null`), each version gets a `title`, kopium makes `spec` required where
/// the CRD did not, and `status.conditions` gets metav1.Condition's whole schema (descriptions
/// and validations), as the project's own kinds have it.
#[rustfmt::skip]
const ADOPTION_DIFFERENCES: &[&str] = &[
    "v1 .: title added",
    "v1 .spec.labels: nullable added",
    "v1 .spec.retentionDays: default lost",
    "v1 .spec.retentionDays: maximum lost",
    "v1 .spec.retentionDays: minimum lost",
    "v1 .spec.retentionDays: nullable added",
    "v1 .spec.schedule: pattern lost",
    "v1 .spec.suspend: nullable added",
    "v1 .spec.target.name: maxLength lost",
    "v1 .status.conditions[].lastTransitionTime: description added",
    "v1 .status.conditions[].message: description added",
    "v1 .status.conditions[].message: maxLength added",
    "v1 .status.conditions[].observedGeneration: description added",
    "v1 .status.conditions[].observedGeneration: minimum added",
    "v1 .status.conditions[].reason: description added",
    "v1 .status.conditions[].reason: maxLength added",
    "v1 .status.conditions[].reason: minLength added",
    "v1 .status.conditions[].reason: pattern added",
    "v1 .status.conditions[].status: description added",
    "v1 .status.conditions[].type: description added",
    "v1 .status.conditions[].type: maxLength added",
    "v1 .status.conditions[].type: pattern added",
    "v1 .status.conditions[]: description added",
    "v1 .status.lastBackupTime: format lost",
    "v1 .status.lastBackupTime: nullable added",
    "v1 .status.phase: enum changed",
    "v1 .status.phase: nullable added",
    "v1 .status: nullable added",
    "v1alpha1 .: required added",
    "v1alpha1 .: title added",
    "v1alpha1 .spec.target: nullable added",
];

/// How two CRDs differ: names, scope and versions (but the schemas), then one line per keyword
/// of each schema node, `<version> <path>: <keyword> lost|added|changed`, sorted. A `listKind`
/// of `<Kind>List`, the API server's default, equals none.
fn crd_differences(before: &str, after: &str) -> Vec<String> {
    use serde_json::Value;
    let before: Value = serde_saphyr::from_str(before).unwrap();
    let after: Value = serde_saphyr::from_str(after).unwrap();
    let mut out = Vec::new();
    let compare =
        |out: &mut Vec<String>, at: String, a: Option<&Value>, b: Option<&Value>| match (a, b) {
            (Some(x), Some(y)) if x == y => {}
            (None, None) => {}
            (Some(_), None) => out.push(format!("{at} lost")),
            (None, Some(_)) => out.push(format!("{at} added")),
            (Some(_), Some(_)) => out.push(format!("{at} changed")),
        };
    let (spec_a, spec_b) = (&before["spec"], &after["spec"]);
    compare(
        &mut out,
        "group".into(),
        spec_a.get("group"),
        spec_b.get("group"),
    );
    compare(
        &mut out,
        "scope".into(),
        spec_a.get("scope"),
        spec_b.get("scope"),
    );
    let mut names_a = spec_a["names"].clone();
    let default_list = format!("{}List", names_a["kind"].as_str().unwrap());
    if names_a["listKind"] == default_list.as_str() {
        names_a.as_object_mut().unwrap().remove("listKind");
    }
    compare(
        &mut out,
        "names".into(),
        Some(&names_a),
        spec_b.get("names"),
    );
    let versions = |spec: &Value| -> std::collections::BTreeMap<String, Value> {
        spec["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap().to_string(), v.clone()))
            .collect()
    };
    let (versions_a, versions_b) = (versions(spec_a), versions(spec_b));
    let names: std::collections::BTreeSet<&String> =
        versions_a.keys().chain(versions_b.keys()).collect();
    for name in names {
        let (Some(a), Some(b)) = (versions_a.get(name), versions_b.get(name)) else {
            out.push(format!("version {name} lost or added"));
            continue;
        };
        let fields = a
            .as_object()
            .unwrap()
            .keys()
            .chain(b.as_object().unwrap().keys());
        let fields: std::collections::BTreeSet<&String> = fields.collect();
        for field in fields.into_iter().filter(|f| *f != "schema") {
            compare(
                &mut out,
                format!("{name}: {field}"),
                a.get(field),
                b.get(field),
            );
        }
        let schema = |v: &Value| v["schema"]["openAPIV3Schema"].clone();
        schema_differences(name, ".", &schema(a), &schema(b), &mut out);
    }
    out.sort();
    out
}

fn schema_differences(
    version: &str,
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<String>,
) {
    let empty = serde_json::Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        match key.as_str() {
            "properties" => {
                let (pa, pb) = (&a.get(key), &b.get(key));
                let props = |p: &Option<&serde_json::Value>| {
                    p.and_then(|p| p.as_object()).cloned().unwrap_or_default()
                };
                let (pa, pb) = (props(pa), props(pb));
                let names: std::collections::BTreeSet<&String> =
                    pa.keys().chain(pb.keys()).collect();
                for name in names {
                    let sub = format!(
                        "{}{name}",
                        if path == "." {
                            ".".into()
                        } else {
                            format!("{path}.")
                        }
                    );
                    match (pa.get(name), pb.get(name)) {
                        (Some(x), Some(y)) => schema_differences(version, &sub, x, y, out),
                        (Some(_), None) => out.push(format!("{version} {sub}: property lost")),
                        (None, _) => out.push(format!("{version} {sub}: property added")),
                    }
                }
            }
            "items" | "additionalProperties" => {
                let sub = format!("{path}{}", if key == "items" { "[]" } else { "{}" });
                let null = serde_json::Value::Null;
                schema_differences(
                    version,
                    &sub,
                    a.get(key).unwrap_or(&null),
                    b.get(key).unwrap_or(&null),
                    out,
                );
            }
            _ => {
                let what = match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) if x == y => continue,
                    (Some(_), None) => "lost",
                    (None, Some(_)) => "added",
                    _ => "changed",
                };
                out.push(format!("{version} {path}: {key} {what}"));
            }
        }
    }
}

/// config/default with webhooks, as kustomize builds it (cert-manager's objects apart): the
/// Certificate names the webhook Service, cert-manager injects its CA into both
/// configurations, and the manager mounts the Secret it writes.
fn assert_webhooks_wired(all: &str, cert_manager: &[String]) {
    let kind = |doc: &String| {
        doc.lines()
            .find_map(|l| l.strip_prefix("kind: ").map(String::from))
    };
    let mut kinds: Vec<String> = cert_manager.iter().filter_map(kind).collect();
    kinds.sort();
    assert_eq!(kinds, ["Certificate", "Issuer"], "{cert_manager:?}");
    let certificate = cert_manager
        .iter()
        .find(|doc| kind(doc).as_deref() == Some("Certificate"))
        .unwrap();
    for wanted in [
        "- guestbook-webhook-service.guestbook-system.svc\n",
        "- guestbook-webhook-service.guestbook-system.svc.cluster.local\n",
        "name: guestbook-selfsigned-issuer\n",
        "secretName: webhook-server-cert",
    ] {
        assert!(certificate.contains(wanted), "{wanted}: {certificate}");
    }
    // Into both configurations and Guestbook's CRD, whose conversion calls the Service.
    let injected = "cert-manager.io/inject-ca-from: guestbook-system/guestbook-serving-cert";
    assert_eq!(all.matches(injected).count(), 3, "{all}");
    for wanted in [
        "name: guestbook-mutating-webhook-configuration",
        "name: guestbook-validating-webhook-configuration",
        "      name: guestbook-webhook-service\n      namespace: guestbook-system\n      path: /mutate-webapp-mock-com-v1-guestbook",
        "          name: guestbook-webhook-service\n          namespace: guestbook-system\n          path: /convert",
        "- --webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
        "secretName: webhook-server-cert",
        "targetPort: 9443",
    ] {
        assert!(all.contains(wanted), "{wanted}:\n{all}");
    }
}
