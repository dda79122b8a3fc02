//! `create api` through the binary: prompts, re-runs, several kinds.

use std::fs;

use crate::support::{
    BACKUP_CRD, GUESTBOOK, assert_refused, at_a_terminal, empty_dir, initialized, kube_scaffold,
    run, stderr_of, stdout_of, tool, tree, with_guestbook,
};

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn without_a_terminal_it_takes_yes_and_says_so() {
    let (_tmp, dir) = initialized();
    let assert = kube_scaffold(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
    )
    .success();
    let stderr = stderr_of(&assert);
    assert!(
        stderr.contains("no terminal: taking yes for `--resource`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("no terminal: taking yes for `--controller`"),
        "{stderr}"
    );
    assert!(dir.join("src/api/webapp/v1/guestbook.rs").exists());
    assert!(dir.join("src/controller/guestbook.rs").exists());
}

#[test]
fn at_a_terminal_it_asks_and_follows_the_answers() {
    let (_tmp, dir) = initialized();
    let steps = r#"[["Create Resource", "y"], ["Create Controller", "n"]]"#;
    let screen = at_a_terminal(
        &dir,
        steps,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
    );
    assert!(screen.contains("Create Resource [Y/n]"), "{screen}");
    assert!(screen.trim_end().ends_with("exit: 0"), "{screen}");
    assert!(dir.join("src/api/webapp/v1/guestbook.rs").exists());
    assert!(!dir.join("src/controller/guestbook.rs").exists());
}

#[test]
fn ctrl_c_at_a_prompt_leaves_nothing_behind_and_shows_the_cursor_again() {
    let (_tmp, dir) = initialized();
    let before = tree(&dir);
    let steps = r#"[["Create Resource", "\u0003"]]"#;
    let screen = at_a_terminal(
        &dir,
        steps,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
    );
    assert!(screen.trim_end().ends_with("exit: 130"), "{screen}");
    assert!(
        screen.contains("\u{1b}[?25h"),
        "the cursor stays hidden: {screen:?}"
    );
    assert!(
        tree(&dir) == before,
        "Ctrl-C at a prompt changed the project"
    );
}

#[test]
fn a_forced_rerun_rewrites_the_kinds_files_and_inserts_nothing_twice() {
    let (_tmp, dir) = with_guestbook();
    let api_mod = dir.join("src/api/mod.rs");
    let mine = "// my own note, kept across re-runs\n";
    fs::write(
        &api_mod,
        format!("{mine}{}", fs::read_to_string(&api_mod).unwrap()),
    )
    .unwrap();
    let types = dir.join("src/api/webapp/v1/guestbook.rs");
    let scaffolded = fs::read_to_string(&types).unwrap();
    fs::remove_file(dir.join("config/samples/webapp_v1_guestbook.yaml")).unwrap();

    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--force",
        ],
    )
    .success();

    assert_eq!(fs::read_to_string(&types).unwrap(), scaffolded);
    assert!(
        dir.join("config/samples/webapp_v1_guestbook.yaml").exists(),
        "a deleted sample comes back"
    );
    let api = fs::read_to_string(&api_mod).unwrap();
    assert!(api.starts_with(mine), "{api}");
    let once = [
        ("src/api/mod.rs", "pub mod webapp;"),
        (
            "src/api/mod.rs",
            "webapp::v1::Guestbook as kube::CustomResourceExt",
        ),
        ("src/controller/mod.rs", "pub mod guestbook;"),
        ("src/controller/mod.rs", "guestbook::start,"),
        (
            "config/crd/kustomization.yaml",
            "- bases/webapp.mock.com_guestbooks.yaml",
        ),
        ("config/default/kustomization.yaml", "- ../crd"),
        ("PROJECT", "force = true"),
    ];
    for (file, line) in once {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        assert_eq!(count(&text, line), 1, "`{line}` in {file}:\n{text}");
    }
}

#[test]
fn the_project_file_remembers_what_it_generated() {
    let (_tmp, dir) = with_guestbook();
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    for file in [
        "src/api/webapp/v1/guestbook.rs",
        "src/controller/guestbook.rs",
        "config/samples/webapp_v1_guestbook.yaml",
        "config/rbac/guestbook_editor_role.yaml",
    ] {
        assert!(
            project.contains(&format!("\"{file}\" = \"sha256:")),
            "{file} not recorded:\n{project}"
        );
    }
}

#[test]
fn force_keeps_the_users_edits_unless_asked_twice() {
    let (_tmp, dir) = with_guestbook();
    let controller = dir.join("src/controller/guestbook.rs");
    let scaffolded = fs::read_to_string(&controller).unwrap();
    let edited = scaffolded.replace("// TODO(user): your logic here.", "// my reconcile logic");
    fs::write(&controller, &edited).unwrap();
    let before = tree(&dir);

    let api = [
        "create",
        "api",
        "--group",
        "webapp",
        "--kind",
        "Guestbook",
        "--force",
    ];
    let assert = kube_scaffold(&dir, &api).code(1);
    let stderr = stderr_of(&assert);
    assert!(
        stderr.contains("`src/controller/guestbook.rs` changed since kube-scaffold wrote them"),
        "{stderr}"
    );
    assert!(
        stderr.contains("help: add `--overwrite-edited`"),
        "{stderr}"
    );
    assert!(
        tree(&dir) == before,
        "a refused --force changed the project"
    );

    kube_scaffold(&dir, &[&api[..], &["--overwrite-edited"]].concat()).success();
    assert_eq!(fs::read_to_string(&controller).unwrap(), scaffolded);
}

#[test]
fn a_dry_run_shows_the_changes_and_writes_nothing() {
    let (_tmp, dir) = initialized();
    let before = tree(&dir);
    let assert = kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--kind",
            "Guestbook",
            "--dry-run",
        ],
    )
    .success();
    let stdout = stdout_of(&assert);
    assert!(
        stdout.contains("  create src/controller/guestbook.rs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--- a/src/api/mod.rs\n+++ b/src/api/mod.rs\n"),
        "{stdout}"
    );
    assert!(stdout.contains("\n+pub mod webapp;\n"), "{stdout}");
    assert!(stdout.contains("\n+- ../crd\n"), "{stdout}");
    assert!(stderr_of(&assert).contains("dry run: nothing was written"));
    assert!(tree(&dir) == before, "a dry run changed the project");

    let (_tmp, empty) = crate::support::empty_dir("guestbook");
    let assert = kube_scaffold(&empty, &["init", "--dry-run"]).success();
    assert!(stdout_of(&assert).contains("  create Cargo.toml"));
    assert!(
        fs::read_dir(&empty).unwrap().next().is_none(),
        "init --dry-run wrote files"
    );
}

#[test]
fn a_write_failing_half_way_puts_everything_back() {
    let (_tmp, dir) = initialized();
    // No file can be created under /proc, even by root: the write of
    // config/samples/kustomization.yaml fails after five others (config/crd, config/default
    // and config/rbac files) were written.
    std::os::unix::fs::symlink("/proc/self", dir.join("config/samples")).unwrap();
    let before = tree(&dir);
    let assert = kube_scaffold(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
    )
    .code(1);
    let stderr = stderr_of(&assert);
    assert!(
        stderr.contains("config/samples/kustomization.yaml"),
        "{stderr}"
    );
    assert!(
        stderr.contains("every file written so far was restored"),
        "{stderr}"
    );
    assert!(stderr.contains("\nhelp: "), "{stderr}");
    assert!(tree(&dir) == before, "a failed write left changes behind");
}

#[test]
fn a_controller_can_follow_its_type() {
    let (_tmp, dir) = initialized();
    let api = ["create", "api", "--group", "webapp", "--kind", "Guestbook"];
    kube_scaffold(
        &dir,
        &[&api[..], &["--resource", "--controller=false"]].concat(),
    )
    .success();
    assert!(!dir.join("src/controller/guestbook.rs").exists());
    assert!(
        fs::read_to_string(dir.join("PROJECT"))
            .unwrap()
            .contains("controller = false")
    );

    kube_scaffold(
        &dir,
        &[&api[..], &["--resource=false", "--controller"]].concat(),
    )
    .success();
    assert!(dir.join("src/controller/guestbook.rs").exists());
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        project.contains("resource = true\ncontroller = false")
            && project.contains("resource = false\ncontroller = true"),
        "PROJECT records both commands:\n{project}"
    );
}

#[test]
fn kinds_of_several_groups_and_versions_share_one_project() {
    let (_tmp, dir) = with_guestbook();
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "batch",
            "--version",
            "v1alpha1",
            "--kind",
            "CronJob",
        ],
    )
    .success();
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
            "Policy",
        ],
    )
    .success();
    let api = fs::read_to_string(dir.join("src/api/mod.rs")).unwrap();
    for line in [
        "pub mod webapp;",
        "pub mod batch;",
        "batch::v1alpha1::CronJob",
        "webapp::v2::Policy",
    ] {
        assert!(api.contains(line), "{line} missing:\n{api}");
    }
    let crd = fs::read_to_string(dir.join("config/crd/kustomization.yaml")).unwrap();
    assert!(
        crd.contains("- bases/batch.mock.com_cronjobs.yaml"),
        "{crd}"
    );
    assert!(
        crd.contains("- bases/webapp.mock.com_policies.yaml"),
        "{crd}"
    );
    assert!(
        dir.join("config/samples/batch_v1alpha1_cronjob.yaml")
            .exists()
    );
    assert!(dir.join("src/controller/cron_job.rs").exists());
}

#[test]
fn a_finalizer_is_scaffolded_only_when_asked_and_recorded() {
    let (_tmp, dir) = with_guestbook();
    let guestbook = fs::read_to_string(dir.join("src/controller/guestbook.rs")).unwrap();
    assert!(!guestbook.contains("FINALIZER"), "a finalizer by default");
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--kind",
            "Book",
            "--finalizer",
            "--resource",
            "--controller",
        ],
    )
    .success();
    let book = fs::read_to_string(dir.join("src/controller/book.rs")).unwrap();
    assert!(book.contains("pub const FINALIZER: &str = \"webapp.mock.com/finalizer\";"));
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert_eq!(count(&project, "finalizer = true"), 1, "{project}");
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(role.contains("  - books/finalizers\n"), "{role}");
    assert!(!role.contains("guestbooks/finalizers"), "{role}");
    assert!(
        dir.join("config/crd/bases/webapp.mock.com_books.yaml")
            .exists()
    );
}

#[test]
fn a_role_edited_by_hand_is_left_for_make_manifests() {
    let (_tmp, dir) = with_guestbook();
    let role = dir.join("config/rbac/role.yaml");
    let edited = "# mine\nkind: ClusterRole\n";
    fs::write(&role, edited).unwrap();
    let out = kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--kind",
            "Book",
            "--resource",
            "--controller",
        ],
    )
    .success();
    assert!(
        stderr_of(&out).contains("config/rbac/role.yaml is not as `make manifests` wrote it"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(fs::read_to_string(&role).unwrap(), edited);
}

#[test]
fn a_controller_for_a_kind_kubernetes_defines_has_no_type_crd_or_sample() {
    let (_tmp, dir) = initialized();
    let before = tree(&dir);
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
    let after = tree(&dir);
    let added: Vec<&String> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    let expected = ["src/controller/deployment.rs"];
    assert_eq!(added, expected, "{added:?}");
    let controller = fs::read_to_string(dir.join("src/controller/deployment.rs")).unwrap();
    assert!(
        controller.contains("pub use k8s_openapi::api::apps::v1::Deployment as Object;"),
        "{controller}"
    );
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        project.contains("group = \"apps\"") && project.contains("builtin = true"),
        "{project}"
    );
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(
        role.contains(
            "- apps\n  resources:\n  - deployments\n  verbs:\n  - get\n  - list\n  - watch\n"
        ),
        "{role}"
    );
    let manager = fs::read_to_string(dir.join("src/controller/mod.rs")).unwrap();
    assert!(manager.contains("deployment::start,"), "{manager}");

    // The core group, as kubebuilder spells it.
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "core",
            "--kind",
            "Pod",
            "--controller",
            "--resource=false",
        ],
    )
    .success();
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(role.contains("- \"\"\n  resources:\n  - pods\n"), "{role}");

    // A group of the project's that Kubernetes also uses is still the project's with `--resource`.
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--kind",
            "Shop",
            "--resource",
            "--controller",
        ],
    )
    .success();
    assert!(
        dir.join("config/crd/bases/apps.mock.com_shops.yaml")
            .exists()
    );
}

#[test]
fn an_adopted_crd_gives_a_module_per_version_and_its_controller_may_come_later() {
    let (_tmp, dir) = initialized();
    let crd = BACKUP_CRD;
    let before = tree(&dir);
    kube_scaffold(
        &dir,
        &["create", "api", "--from-crd", crd, "--controller=false"],
    )
    .success();
    let after = tree(&dir);
    let added: Vec<&String> = after
        .keys()
        .filter(|p| !before.contains_key(*p) && !p.ends_with('/'))
        .collect();
    let expected = [
        "config/crd/bases/ops.example.org_backups.yaml",
        "config/crd/kustomization.yaml",
        "config/crd/kustomizeconfig.yaml",
        "config/rbac/backup_editor_role.yaml",
        "config/rbac/backup_viewer_role.yaml",
        "hack/crds/ops.example.org_backups.yaml",
        "src/api/ops_example_org/mod.rs",
        "src/api/ops_example_org/v1/backup.rs",
        "src/api/ops_example_org/v1/mod.rs",
        "src/api/ops_example_org/v1alpha1/backup.rs",
        "src/api/ops_example_org/v1alpha1/mod.rs",
    ];
    assert_eq!(added, expected);
    // The user's CRD, as the project starts with it: the kubectl-only fields are gone.
    let base = fs::read_to_string(dir.join(expected[0])).unwrap();
    assert!(base.starts_with("# Adopted from hack/crds/"), "{base}");
    assert!(
        base.contains("listKind: BackupList") && base.contains("maximum: 90"),
        "{base}"
    );
    let old = fs::read_to_string(dir.join(expected[9])).unwrap();
    assert!(old.contains("#[kube(storage = false)]"), "{old}");
    let api = fs::read_to_string(dir.join("src/api/mod.rs")).unwrap();
    for version in ["v1", "v1alpha1"] {
        let crd =
            format!("<ops_example_org::{version}::Backup as kube::CustomResourceExt>::crd(),");
        assert!(api.contains(&crd), "{api}");
    }

    // A controller added later is the generic one: the adopted status is the user's.
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "ops.example.org",
            "--kind",
            "Backup",
            "--resource=false",
            "--controller",
        ],
    )
    .success();
    let controller = fs::read_to_string(dir.join("src/controller/backup.rs")).unwrap();
    assert!(
        controller.contains("pub use crate::api::ops_example_org::v1::Backup as Object;")
            && controller.contains("adopted from\n//! a CRD"),
        "{controller}"
    );
    let role = fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(
        role.contains(
            "- ops.example.org\n  resources:\n  - backups\n  verbs:\n  - get\n  - list\n  - watch\n"
        ),
        "{role}"
    );

    // A version added later, stored from now on: kopium's type of v1 says `storage = false`.
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "ops.example.org",
            "--version",
            "v2",
            "--kind",
            "Backup",
            "--storage-version",
        ],
    )
    .success();
    let v1 = fs::read_to_string(dir.join(expected[7])).unwrap();
    assert!(
        v1.contains("plural = \"backups\")]\n#[kube(storage = false)]\n#[kube(doc = "),
        "{v1}"
    );
    let crd = fs::read_to_string(dir.join(expected[0])).unwrap();
    let crd: serde_json::Value = serde_saphyr::from_str(&crd).unwrap();
    let versions: Vec<(&str, bool)> = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["storage"] == true))
        .collect();
    assert_eq!(versions, [("v1alpha1", false), ("v1", false), ("v2", true)]);
    assert!(!dir.join("src/controller/backup_v2.rs").exists());
}

#[test]
fn another_version_of_a_kind_joins_its_crd_and_may_become_the_stored_one() {
    let (_tmp, dir) = with_guestbook();
    let v2 = [
        "--group",
        "webapp",
        "--version",
        "v2",
        "--kind",
        "Guestbook",
    ];
    let assert = kube_scaffold(&dir, &[&["create", "api"][..], &v2].concat()).success();
    assert!(
        stderr_of(&assert).contains("Guestbook has a controller (v1), which reconciles every version: none is scaffolded for v2"),
        "{}",
        stderr_of(&assert)
    );
    let types = fs::read_to_string(dir.join("src/api/webapp/v2/guestbook.rs")).unwrap();
    assert!(
        types.contains("    version = \"v2\",\n    kind = \"Guestbook\",\n    plural = \"guestbooks\",\n    storage = false,\n"),
        "{types}"
    );
    assert!(!dir.join("src/controller/guestbook_v2.rs").exists());
    assert!(dir.join("config/samples/webapp_v2_guestbook.yaml").exists());
    let crd_file = dir.join("config/crd/bases/webapp.mock.com_guestbooks.yaml");
    let versions = |text: &str| -> Vec<(String, bool)> {
        let crd: serde_json::Value = serde_saphyr::from_str(text).unwrap();
        crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["name"].as_str().unwrap().to_string(),
                    v["storage"] == true,
                )
            })
            .collect()
    };
    let crd = fs::read_to_string(&crd_file).unwrap();
    assert_eq!(
        versions(&crd),
        [("v1".to_string(), true), ("v2".to_string(), false)]
    );
    let api = fs::read_to_string(dir.join("src/api/mod.rs")).unwrap();
    assert!(
        api.contains("<webapp::v1::Guestbook as kube::CustomResourceExt>::crd(),\n        <webapp::v2::Guestbook as kube::CustomResourceExt>::crd(),"),
        "{api}"
    );

    // v3, stored from now on: v1's type (edited by its user) says `storage = false`.
    let v1_file = dir.join("src/api/webapp/v1/guestbook.rs");
    let v1 = fs::read_to_string(&v1_file).unwrap();
    let edited = v1.replace(
        "pub foo: Option<String>,",
        "pub foo: Option<String>,\n    pub bar: Option<i32>,",
    );
    fs::write(&v1_file, &edited).unwrap();
    let v3 = [
        "--group",
        "webapp",
        "--version",
        "v3",
        "--kind",
        "Guestbook",
    ];
    kube_scaffold(
        &dir,
        &[&["create", "api", "--storage-version"][..], &v3].concat(),
    )
    .success();
    let v1 = fs::read_to_string(&v1_file).unwrap();
    assert_eq!(
        v1,
        edited.replace(
            "    version = \"v1\",\n",
            "    version = \"v1\",\n    storage = false,\n"
        )
    );
    let types = fs::read_to_string(dir.join("src/api/webapp/v3/guestbook.rs")).unwrap();
    assert!(!types.contains("storage"), "{types}");
    let crd = fs::read_to_string(&crd_file).unwrap();
    let expected = [("v1", false), ("v2", false), ("v3", true)].map(|(v, s)| (v.to_string(), s));
    assert_eq!(versions(&crd), expected);
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        project.contains("version = \"v3\"\nkind = \"Guestbook\""),
        "{project}"
    );
    assert!(project.contains("storageVersion = true"), "{project}");
    // The roles are the kind's: written once.
    let rbac = fs::read_to_string(dir.join("config/rbac/kustomization.yaml")).unwrap();
    assert_eq!(count(&rbac, "guestbook_editor_role.yaml"), 1, "{rbac}");
}

#[test]
fn webhooks_are_added_one_kind_at_a_time_and_registered_as_make_manifests_does() {
    let (_tmp, dir) = with_guestbook();
    let webhook = |hook: &'static str| [&["create", "webhook"][..], &GUESTBOOK, &[hook]].concat();
    kube_scaffold(&dir, &webhook("--defaulting")).success();
    let manifests = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    assert!(
        manifests.contains("path: /mutate-webapp-mock-com-v1-guestbook")
            && !manifests.contains("ValidatingWebhookConfiguration"),
        "{manifests}"
    );
    // The same hook again is refused; the other kind of hook is added without `--force`.
    let again = kube_scaffold(&dir, &webhook("--defaulting")).code(1);
    assert!(stderr_of(&again).contains("has its `--defaulting` webhook already"));
    let added = kube_scaffold(&dir, &webhook("--programmatic-validation")).success();
    // The report lists the files the command wrote, not those it only read or left as they
    // were (the license header, the webhook's Service).
    let report = stdout_of(&added);
    assert!(
        report.contains("  create src/webhook/guestbook_v1_validator.rs")
            && !report.contains("config/webhook/service.yaml")
            && !report.contains("hack/boilerplate.rs.txt")
            && !report.contains("src/api/"),
        "{report}"
    );
    let manifests = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    assert_eq!(count(&manifests, "\n---\n"), 1, "{manifests}");
    assert!(
        manifests.contains("name: vguestbook-v1.webapp.mock.com"),
        "{manifests}"
    );
    let hooks = fs::read_to_string(dir.join("src/webhook/mod.rs")).unwrap();
    assert!(
        hooks.contains(
            "        guestbook_v1_defaulter::hook(),\n        guestbook_v1_validator::hook(),\n"
        ),
        "{hooks}"
    );
    let default = fs::read_to_string(dir.join("config/default/kustomization.yaml")).unwrap();
    assert_eq!(count(&default, "replacements:"), 1, "{default}");
    assert_eq!(
        count(&default, "      kind: ValidatingWebhookConfiguration"),
        2,
        "{default}"
    );
    assert_eq!(count(&default, "- ../webhook"), 1, "{default}");
    // `--force` scaffolds a hook again; the configurations stay as they were.
    kube_scaffold(&dir, &[&webhook("--defaulting")[..], &["--force"]].concat()).success();
    let forced = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    assert_eq!(forced, manifests);
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert_eq!(
        count(&project, "command = \"create webhook\""),
        3,
        "{project}"
    );
}

#[test]
fn conversions_go_through_one_hub_and_convert_the_crd_by_webhook() {
    let (_tmp, dir) = with_guestbook();
    let kind = ["--group", "webapp", "--kind", "Guestbook"];
    let create_api = [&["create", "api"][..], &kind, &["--version", "v2"]].concat();
    kube_scaffold(&dir, &create_api).success();
    let conversion = |hub: &'static str, more: &[&'static str]| {
        let head = [&["create", "webhook"][..], &kind, &["--version", hub]].concat();
        [&head[..], &["--conversion", "--spoke"], more].concat()
    };
    kube_scaffold(&dir, &conversion("v1", &["v2"])).success();
    let crd =
        fs::read_to_string(dir.join("config/crd/bases/webapp.mock.com_guestbooks.yaml")).unwrap();
    assert!(
        crd.contains("  conversion:\n    strategy: Webhook\n    webhook:\n      clientConfig:\n        service:\n          name: webhook-service\n          namespace: system\n          path: /convert\n"),
        "{crd}"
    );
    let file = "src/api/webapp/v2/guestbook_conversion.rs";
    let module = fs::read_to_string(dir.join(file)).unwrap();
    assert!(
        module.contains("                foo: spoke.spec.foo,\n"),
        "{module}"
    );
    assert!(
        module.contains("use crate::api::webapp::v1::Guestbook as Hub;"),
        "{module}"
    );
    let list = fs::read_to_string(dir.join("src/webhook/conversion.rs")).unwrap();
    assert!(
        list.contains("        crate::api::webapp::v2::guestbook_conversion::conversion(),\n        // +kube-scaffold:scaffold:conversions"),
        "{list}"
    );
    let default = fs::read_to_string(dir.join("config/default/kustomization.yaml")).unwrap();
    assert!(
        default.contains(
            "      kind: CustomResourceDefinition\n      name: guestbooks.webapp.mock.com\n"
        ),
        "{default}"
    );
    // The same spoke again, or another hub, is refused and changes nothing.
    let before = tree(&dir);
    let again = kube_scaffold(&dir, &conversion("v1", &["v2"])).code(1);
    assert!(stderr_of(&again).contains("Guestbook v2 has its conversions already"));
    let other_hub = kube_scaffold(&dir, &conversion("v2", &["v1"])).code(1);
    assert!(stderr_of(&other_hub).contains("Guestbook's conversions go through v1, its hub"));
    assert_eq!(tree(&dir), before);
    // `--force` writes the spoke's file again, unless the user edited it.
    let forced = [&conversion("v1", &["v2"])[..], &["--force"]].concat();
    fs::write(dir.join(file), format!("{module}// mine\n")).unwrap();
    let refused = kube_scaffold(&dir, &forced).code(1);
    assert!(stderr_of(&refused).contains("changed since kube-scaffold wrote them"));
    fs::write(dir.join(file), &module).unwrap();
    kube_scaffold(&dir, &forced).success();
    let list = fs::read_to_string(dir.join("src/webhook/conversion.rs")).unwrap();
    assert_eq!(
        count(&list, "guestbook_conversion::conversion()"),
        1,
        "{list}"
    );
}

#[test]
fn webhooks_for_kinds_kubernetes_defines_leave_the_cluster_and_the_manager_out() {
    let (_tmp, dir) = with_guestbook();
    let pod = ["create", "webhook", "--group", "core", "--kind", "Pod"];
    kube_scaffold(&dir, &[&pod[..], &["--defaulting"]].concat()).success();
    let manifests = fs::read_to_string(dir.join("config/webhook/manifests.yaml")).unwrap();
    let expected = "      path: /mutate--v1-pod\n  failurePolicy: Fail\n  name: mpod-v1.core.kb.io\n  namespaceSelector:\n    matchExpressions:\n    - key: kubernetes.io/metadata.name\n      operator: NotIn\n      values:\n      - kube-system\n      - guestbook-system\n";
    assert!(manifests.contains(expected), "{manifests}");
    let hook = fs::read_to_string(dir.join("src/webhook/pod_v1_defaulter.rs")).unwrap();
    assert!(
        hook.contains("pub use k8s_openapi::api::core::v1::Pod as Object;")
            && hook.contains(".outside(LEFT_OUT)")
            && hook.contains("    \"kube-system\",\n    // The manager's: config/default's namespace.\n    \"guestbook-system\",\n];"),
        "{hook}"
    );
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(project.contains("group = \"core\""), "{project}");
    // The project's first webhook chose cert-manager: the manager's own certificates are
    // refused from now on, and nothing changes.
    let before = tree(&dir);
    let validation = [&pod[..], &["--programmatic-validation", "--self-signed"]].concat();
    let refused = kube_scaffold(&dir, &validation).code(1);
    assert!(
        stderr_of(&refused).contains("this project's webhooks have cert-manager's certificates")
    );
    assert_eq!(tree(&dir), before);
}

/// A manager watching one namespace cannot run a controller of a cluster-scoped kind: `edit
/// --namespaced` is refused in a project with one, and such a controller is refused in a
/// namespaced project; each refusal changes nothing. `--namespaced=false` makes the manager
/// cluster-wide again, with a ClusterRole.
#[test]
fn a_namespaced_manager_and_a_cluster_scoped_controller_exclude_each_other() {
    let (_tmp, dir) = initialized();
    let cluster = [
        "create",
        "api",
        "--group",
        "webapp",
        "--kind",
        "Cluster",
        "--namespaced=false",
    ];
    let site = ["create", "api", "--group", "webapp", "--kind", "Site"];
    kube_scaffold(&dir, &site).success();
    kube_scaffold(&dir, &["edit", "--namespaced"]).success();
    let binding = fs::read_to_string(dir.join("config/rbac/role_binding.yaml")).unwrap();
    assert!(binding.contains("kind: RoleBinding\n"), "{binding}");
    let before = tree(&dir);
    let refused = kube_scaffold(&dir, &cluster).code(1);
    assert!(
        stderr_of(&refused)
            .contains("help: pass `--controller=false`, or make the manager cluster-wide first"),
        "{}",
        stderr_of(&refused)
    );
    assert!(
        tree(&dir) == before,
        "a refused create api changed the project"
    );

    kube_scaffold(&dir, &["edit", "--namespaced=false"]).success();
    let binding = fs::read_to_string(dir.join("config/rbac/role_binding.yaml")).unwrap();
    assert!(binding.contains("kind: ClusterRoleBinding\n"), "{binding}");
    let manager = fs::read_to_string(dir.join("config/manager/manager.yaml")).unwrap();
    assert!(!manager.contains("WATCH_NAMESPACE"), "{manager}");
    kube_scaffold(&dir, &cluster).success();
    let before = tree(&dir);
    let refused = kube_scaffold(&dir, &["edit", "--namespaced"]).code(1);
    assert!(
        stderr_of(&refused).contains("`webapp/v1 Cluster` is cluster-scoped and has a controller"),
        "{}",
        stderr_of(&refused)
    );
    assert!(tree(&dir) == before, "a refused edit changed the project");
}

/// A file `edit --namespaced` rewrites that its user edited gets the change merged with the
/// edits (three-way, PROJECT's replay as the base); an edit of the very lines it changes is
/// refused, named and kept, unless `--force` replaces it.
#[test]
fn edit_namespaced_merges_an_edited_manager_yaml_and_refuses_a_conflict_unless_forced() {
    let (_tmp, dir) = initialized();
    let path = dir.join("config/manager/manager.yaml");
    let original = fs::read_to_string(&path).unwrap();
    // A changed value, and an environment variable added where the edit adds its own.
    let edited = original.replace("value: info", "value: debug").replacen(
        "              fieldPath: metadata.namespace\n",
        "              fieldPath: metadata.namespace\n        - name: TEAM\n          value: blue\n",
        1,
    );
    fs::write(&path, edited).unwrap();
    kube_scaffold(&dir, &["edit", "--namespaced"]).success();
    let text = fs::read_to_string(&path).unwrap();
    for kept in [
        "WATCH_NAMESPACE",
        "value: debug",
        "- name: TEAM\n          value: blue\n",
    ] {
        assert!(text.contains(kept), "no `{kept}` in:\n{text}");
    }
    // The tool's part is recorded: `--namespaced=false` merges again, the edits still kept.
    kube_scaffold(&dir, &["edit", "--namespaced=false"]).success();
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("WATCH_NAMESPACE") && text.contains("name: TEAM"),
        "{text}"
    );

    // Lines added there are kept; the line the edit adds after, changed: a conflict, refused.
    let conflicting = text.replace(
        "              fieldPath: metadata.namespace\n",
        "              fieldPath: metadata.labels['team']\n",
    );
    fs::write(&path, &conflicting).unwrap();
    let before = tree(&dir);
    let refused = kube_scaffold(&dir, &["edit", "--namespaced"]).code(1);
    let said = stderr_of(&refused);
    assert!(said.contains("`config/manager/manager.yaml`"), "{said}");
    // edit has no `--overwrite-edited`: its help names its own `--force`.
    assert!(
        said.contains("help: pass `--force` to replace them")
            && !said.contains("--overwrite-edited"),
        "{said}"
    );
    assert!(tree(&dir) == before);
    kube_scaffold(&dir, &["edit", "--namespaced", "--force"]).success();
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("WATCH_NAMESPACE") && !text.contains("TEAM"),
        "{text}"
    );
}

/// `edit --sharding` gives the sharded manager a budget that lets a drain evict one replica at
/// a time; only one budget selects its pods once webhooks come (they keep theirs otherwise),
/// and `--sharding=false` takes it back.
#[test]
fn edit_sharding_budgets_the_replicas_with_one_pod_disruption_budget() {
    let (_tmp, dir) = with_guestbook();
    let kustomization =
        || fs::read_to_string(dir.join("config/manager/kustomization.yaml")).unwrap();
    let init = kustomization();
    let budgets = || {
        let built = run(&dir, tool("kustomize"), &["build", "config/default"]);
        let built = String::from_utf8(built.stdout).unwrap();
        let budgets = built
            .split("\n---\n")
            .filter(|doc| doc.contains("kind: PodDisruptionBudget"));
        budgets.map(String::from).collect::<Vec<_>>()
    };
    kube_scaffold(&dir, &["edit", "--sharding"]).success();
    let [budget] = &budgets()[..] else {
        panic!("not one budget: {:?}", budgets())
    };
    assert!(budget.contains("maxUnavailable: 1\n"), "{budget}");

    kube_scaffold(&dir, &["edit", "--sharding=false"]).success();
    assert!(budgets().is_empty(), "{:?}", budgets());
    assert!(!dir.join("config/manager/pdb.yaml").exists());
    assert_eq!(kustomization(), init);

    kube_scaffold(&dir, &["edit", "--sharding"]).success();
    let hook = [
        "create",
        "webhook",
        "--group",
        "webapp",
        "--kind",
        "Guestbook",
        "--defaulting",
    ];
    kube_scaffold(&dir, &hook).success();
    let [budget] = &budgets()[..] else {
        panic!("not one budget: {:?}", budgets())
    };
    assert!(budget.contains("maxUnavailable: 1\n"), "{budget}");
    // Webhooks rely on it now: it stays.
    kube_scaffold(&dir, &["edit", "--sharding=false"]).success();
    assert_eq!(budgets().len(), 1, "{:?}", budgets());
}

/// `edit --multigroup` moves the kinds' controllers, hooks and editor roles under their groups,
/// as they are (the user's edits go with them), rewrites the modules that declare them, and
/// records it: `alpha generate` renders the same, a kind may then be in two groups, and the
/// command is refused a second time or backwards with nothing changed.
#[test]
fn edit_multigroup_moves_kinds_under_their_groups_and_then_one_kind_can_be_in_two() {
    let (_tmp, dir) = with_guestbook();
    kube_scaffold(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "core",
            "--kind",
            "Pod",
            "--controller",
        ],
    )
    .success();
    let hook = [
        "create",
        "webhook",
        "--group",
        "webapp",
        "--kind",
        "Guestbook",
        "--defaulting",
    ];
    kube_scaffold(&dir, &hook).success();
    // The user's edits: a line in a controller, a module of their own, a use of the controller.
    let controller = dir.join("src/controller/guestbook.rs");
    let mut edited = fs::read_to_string(&controller).unwrap();
    edited.push_str("\n/// Mine.\npub const MINE: u8 = 1;\n");
    fs::write(&controller, &edited).unwrap();
    let modules = dir.join("src/controller/mod.rs");
    let text = fs::read_to_string(&modules).unwrap();
    let text = text.replace(
        "// +kube-scaffold:scaffold:controller-modules",
        "pub mod util;\n\n// +kube-scaffold:scaffold:controller-modules",
    ) + "\n/// Uses the moved module.\npub const ALSO_MINE: u8 = guestbook::MINE;\n";
    fs::write(&modules, text).unwrap();
    fs::write(dir.join("src/controller/util.rs"), "//! Mine.\n").unwrap();
    let pod = fs::read(dir.join("src/controller/pod.rs")).unwrap();

    kube_scaffold(&dir, &["edit", "--multigroup"]).success();
    assert_eq!(
        fs::read_to_string(dir.join("src/controller/webapp/guestbook.rs")).unwrap(),
        edited
    );
    assert_eq!(
        fs::read(dir.join("src/controller/core/pod.rs")).unwrap(),
        pod
    );
    for gone in [
        "src/controller/guestbook.rs",
        "src/controller/pod.rs",
        "src/webhook/guestbook_v1_defaulter.rs",
        "config/rbac/guestbook_editor_role.yaml",
    ] {
        assert!(!dir.join(gone).exists(), "{gone} is still there");
    }
    for moved in [
        "src/webhook/webapp/guestbook_v1_defaulter.rs",
        "config/rbac/webapp_guestbook_editor_role.yaml",
        "config/rbac/webapp_guestbook_viewer_role.yaml",
    ] {
        assert!(dir.join(moved).exists(), "no {moved}");
    }
    let text = fs::read_to_string(&modules).unwrap();
    for line in [
        "pub mod webapp;",
        "pub mod core;",
        "pub mod util;",
        "webapp::guestbook::start,",
        "core::pod::rbac_rules(),",
        "guestbook::MINE",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
    assert!(!text.contains("pub mod guestbook;"), "{text}");
    let group = fs::read_to_string(dir.join("src/controller/webapp/mod.rs")).unwrap();
    assert!(
        group.contains("`webapp`: one module per kind.\n\npub mod guestbook;\n"),
        "{group}"
    );
    assert!(
        !group.contains("use super::"),
        "imports name their crate:\n{group}"
    );
    let hooks = fs::read_to_string(dir.join("src/webhook/mod.rs")).unwrap();
    assert!(
        hooks.contains("webapp::guestbook_v1_defaulter::hook(),"),
        "{hooks}"
    );
    let roles = fs::read_to_string(dir.join("config/rbac/kustomization.yaml")).unwrap();
    assert!(
        roles
            .contains("- webapp_guestbook_editor_role.yaml\n- webapp_guestbook_viewer_role.yaml\n"),
        "{roles}"
    );

    // The same kind in another group, and its hooks, beside the first.
    let ship = ["--group", "ship", "--kind", "Guestbook"];
    let api = [
        &["create", "api"][..],
        &ship,
        &["--resource", "--controller"],
    ]
    .concat();
    kube_scaffold(&dir, &api).success();
    let hook = [&["create", "webhook"][..], &ship, &["--defaulting"]].concat();
    kube_scaffold(&dir, &hook).success();
    let ship_controller = fs::read_to_string(dir.join("src/controller/ship/guestbook.rs")).unwrap();
    assert!(ship_controller.contains("pub const CONTROLLER: &str = \"ship-guestbook\";"));
    assert!(
        dir.join("src/webhook/ship/guestbook_v1_defaulter.rs")
            .exists()
    );
    let role = fs::read_to_string(dir.join("config/rbac/ship_guestbook_editor_role.yaml")).unwrap();
    assert!(role.contains("name: ship-guestbook-editor-role"), "{role}");

    // PROJECT renders the same (the user's edits aside), and the edited controller stays
    // the user's: no digest claims it.
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(
        !project.contains("\"src/controller/webapp/guestbook.rs\""),
        "{project}"
    );
    assert!(
        project.contains("\"src/controller/core/pod.rs\""),
        "{project}"
    );
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().join("again");
    let generate = [
        "alpha",
        "generate",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ];
    kube_scaffold(&dir, &generate).success();
    let (ours, again) = (tree(&dir), tree(&out_dir));
    let differ: std::collections::BTreeSet<&String> = again
        .keys()
        .chain(ours.keys())
        .filter(|path| ours.get(*path) != again.get(*path))
        .collect();
    // PROJECT: the replay's digests claim the controller the user edited.
    let expected = [
        "PROJECT",
        "src/controller/mod.rs",
        "src/controller/util.rs",
        "src/controller/webapp/guestbook.rs",
    ];
    assert_eq!(differ.into_iter().collect::<Vec<_>>(), expected);

    let before = tree(&dir);
    let again = kube_scaffold(&dir, &["edit", "--multigroup"]).code(1);
    assert!(stderr_of(&again).contains("multigroup already"));
    let back = kube_scaffold(&dir, &["edit", "--multigroup=false"]).code(1);
    assert!(stderr_of(&back).contains("does not move kinds back"));
    assert!(tree(&dir) == before);
}

/// kubebuilder's CronJob tutorial: the project's own `CronJob` in its group `batch`
/// (`batch.<domain>`) is not Kubernetes' `batch/v1` CronJob, for every kind of webhook.
#[test]
fn a_kind_of_the_project_named_as_a_kubernetes_kind_gets_its_webhooks() {
    let (_tmp, dir) = initialized();
    let kind = ["--group", "batch", "--kind", "CronJob"];
    for version in ["v1", "v2"] {
        let api = [&["create", "api", "--version", version][..], &kind].concat();
        kube_scaffold(
            &dir,
            &[&api[..], &["--resource", "--controller=false"]].concat(),
        )
        .success();
    }
    let webhook = [&["create", "webhook", "--version", "v1"][..], &kind].concat();
    kube_scaffold(&dir, &[&webhook[..], &["--defaulting"]].concat()).success();
    kube_scaffold(
        &dir,
        &[&webhook[..], &["--conversion", "--spoke", "v2"]].concat(),
    )
    .success();
    let defaulter = fs::read_to_string(dir.join("src/webhook/cron_job_v1_defaulter.rs")).unwrap();
    assert!(
        defaulter.contains("pub use crate::api::batch::v1::CronJob as Object;"),
        "{defaulter}"
    );
    let conversion = fs::read_to_string(dir.join("src/api/batch/v2/cron_job_conversion.rs"));
    let conversion = conversion.expect("the conversion of v2");
    assert!(
        conversion.contains("use crate::api::batch::v1::CronJob as Hub;"),
        "{conversion}"
    );
}

/// `create api --owns` for a kind that has its controller adds to what the controller owns,
/// its user's edits merged in: the controller is then what `--owns` would have scaffolded,
/// plus the edits. A kind owned already, an edit of the lines the command changes and a
/// deploy-image controller are refused, nothing written.
#[test]
fn an_owned_kind_is_added_to_an_edited_controller_and_the_edits_kept() {
    let (_tmp, dir) = with_guestbook();
    let path = dir.join("src/controller/guestbook.rs");
    let todo = "    // report what you observed through the conditions below.\n";
    let ours = "    tracing::debug!(\"sizing the guestbook\");\n";
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains("const OWNED"), "{text}");
    fs::write(&path, text.replacen(todo, &format!("{todo}{ours}"), 1)).unwrap();
    let guestbook = [&["create", "api"][..], &GUESTBOOK].concat();
    let owns = |kinds: &[&'static str]| {
        let mut args = guestbook.to_vec();
        for kind in kinds {
            args.extend(["--owns", kind]);
        }
        args
    };
    kube_scaffold(&dir, &owns(&["apps/v1/Deployment"])).success();
    kube_scaffold(&dir, &owns(&["core/v1/ConfigMap"])).success();
    let text = fs::read_to_string(&path).unwrap();

    // The same as the controller of a project that owned both from the start, the user's
    // line aside; one made after its type, as this one is now (its children do not read the
    // type's example field `foo`, which the user may have dropped).
    let (_fresh_tmp, fresh) = empty_dir("guestbook");
    kube_scaffold(&fresh, &["init", "--domain", "mock.com"]).success();
    let mut the_type = guestbook.to_vec();
    the_type.extend(["--resource", "--controller=false"]);
    kube_scaffold(&fresh, &the_type).success();
    let mut both = owns(&["apps/v1/Deployment", "core/v1/ConfigMap"]);
    both.extend(["--resource=false", "--controller"]);
    kube_scaffold(&fresh, &both).success();
    let scaffolded = fs::read_to_string(fresh.join("src/controller/guestbook.rs")).unwrap();
    assert_eq!(text.replacen(ours, "", 1), scaffolded);
    assert!(text.contains(&format!("{todo}{ours}")), "{text}");
    // PROJECT records the controller's list.
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    let recorded = "owns = [\"apps/v1/Deployment\", \"core/v1/ConfigMap\"]";
    assert!(project.contains(recorded), "{project}");

    assert_refused(
        &dir,
        &owns(&["v1/Secret", "core/v1/ConfigMap"]),
        1,
        "`Guestbook` owns `core/v1/ConfigMap` already; nothing was written",
    );
    // An edit of the line the next kind goes after: a conflict, named, with the way by hand.
    let edited = text.replacen(
        "    Owned::of::<ConfigMap>(),\n",
        "    Owned::of::<ConfigMap>(), // the guest list\n",
        1,
    );
    fs::write(&path, edited).unwrap();
    let said = assert_refused(
        &dir,
        &owns(&["v1/Secret"]),
        1,
        "`src/controller/guestbook.rs` changed since kube-scaffold wrote them",
    );
    assert!(said.contains("docs/commands.md"), "{said}");

    let memcached = ["create", "api", "--group", "cache", "--kind", "Memcached"];
    let image = [
        "--plugins",
        "deploy-image/v1-alpha",
        "--image",
        "memcached:1.6.26-alpine3.19",
    ];
    kube_scaffold(&dir, &[&memcached[..], &image].concat()).success();
    let args = [&memcached[..], &["--owns", "core/v1/ConfigMap"]].concat();
    assert_refused(&dir, &args, 1, "the deploy-image plugin only scaffolds one");
}
