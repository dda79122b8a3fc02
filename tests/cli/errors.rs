//! Bad input: each case asserts the exit code, the message, the `help:` line, and that the
//! directory is byte for byte as it was.

use std::fs;

use crate::support::{
    BACKUP_CRD, CERTIFICATE_CONTROLLER, CERTIFICATE_CRD, POSTGRESQL_CRD, assert_refused, copy_of,
    empty_dir, initialized, kube_scaffold, with_guestbook,
};

/// Where a case runs.
#[derive(Clone, Copy)]
enum Setup {
    /// An empty directory named `guestbook`.
    Empty,
    /// An empty directory whose name is no valid project name.
    BadDirName,
    /// After `init --domain mock.com`.
    Initialized,
    /// After `init` and `create api --group webapp --kind Guestbook`.
    WithGuestbook,
    /// After `init`, `create api` for cert-manager's Certificate (`--external-api-crd`) and
    /// the adopted Backup (`--from-crd`, v1alpha1 and v1).
    WithCrds,
}

struct Case {
    setup: Setup,
    args: &'static [&'static str],
    code: i32,
    message: &'static str,
}

const fn case(
    setup: Setup,
    args: &'static [&'static str],
    code: i32,
    message: &'static str,
) -> Case {
    Case {
        setup,
        args,
        code,
        message,
    }
}

use Setup::*;

const NOT_A_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/create-api/config/samples/webapp_v1_guestbook.yaml"
);

const GUESTBOOK_CRD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/golden/create-api/config/crd/bases/webapp.mock.com_guestbooks.yaml"
);
macro_rules! unadoptable {
    ($file:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/crds/unadoptable/",
            $file
        )
    };
}

#[rustfmt::skip]
const CASES: &[Case] = &[
    // init: names
    case(Empty, &["init", "--domain", "My.Domain"], 1, "invalid domain `My.Domain`"),
    case(Empty, &["init", "--domain", "my_domain.com"], 1, "`_` is not allowed"),
    case(Empty, &["init", "--plugins", "grafana/v1-alpha,kustomize/v2"], 1, "unknown plugin `kustomize/v2` for the whole project"),
    case(Empty, &["edit", "--plugins", "grafana/v1-alpha"], 1, "no PROJECT file"),
    case(Empty, &["init", "--domain", ""], 1, "invalid domain ``"),
    case(Empty, &["init", "--domain=-mock.com"], 1, "start and end with a letter or digit"),
    case(Empty, &["init", "--domain", "mock..com"], 1, "invalid domain `mock..com`"),
    case(Empty, &["init", "--domain", "mock.com/x"], 1, "`/` is not allowed"),
    case(Empty, &["init", "--project-name", "Guestbook"], 1, "invalid project name `Guestbook`"),
    case(Empty, &["init", "--project-name", "my_op"], 1, "`_` is not allowed"),
    case(Empty, &["init", "--project-name", "kube"], 1, "depends on a crate of that name"),
    case(Empty, &["init", "--project-name", "match"], 1, "it is a Rust keyword"),
    case(Empty, &["init", "--project-name", "1op"], 1, "start with a lowercase letter"),
    case(Empty, &["init", "--repo", "operator"], 1, "invalid repository `operator`"),
    case(Empty, &["init", "--repo", "git@github.com:me/op.git"], 1, "invalid repository"),
    case(Empty, &["init", "--repo", "github.com/me/\"op"], 1, "without spaces or quotes"),
    case(Empty, &["init", "--project-name", "../op"], 1, "`.` is not allowed"),
    case(Empty, &["init", "--project-name", "a-very-long-project-name-that-goes-on-and-on-past-the-dns-limit-x"], 1, "at most 63"),
    case(Empty, &["init", "--owner", "two\nlines"], 1, "invalid owner"),
    case(Empty, &["init", "--license", "mit"], 2, "invalid value 'mit'"),
    case(BadDirName, &["init"], 1, "the directory name `my project` cannot name the project"),
    // init: wrong place
    case(Initialized, &["init"], 1, "is already initialized"),
    // create api: names
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "guestbook"], 1, "start with an uppercase letter"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guest-book"], 1, "`-` is not allowed"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guest_book"], 1, "`_` is not allowed"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", ""], 1, "invalid kind ``: it is empty"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Option"], 1, "shadow a name of Rust's prelude"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Type"], 1, "module name `type`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Mock"], 1, "module name `mock`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Children"], 1, "module name `children`"),
    // create api --owns
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--owns", "apps/v1/deployment"], 1, "Kubernetes has no kind `deployment` in `apps/v1`"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--owns", "Deployment"], 1, "is not `<group>/<version>/<Kind>`"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--owns", "webapp/v2/Guestbook"], 1, "this project has no kind `Guestbook` in `webapp/v2`"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--owns", "core/v1/Namespace"], 1, "only namespaced kinds"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--namespaced=false", "--owns", "apps/v1/Deployment"], 1, "only a namespaced kind can own"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--owns", "apps/v1/Deployment", "--owns", "apps/v1/Deployment"], 1, "names the kind `Deployment` twice"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--controller", "--resource=false", "--force", "--owns", "webapp/v1/Guestbook"], 1, "a kind cannot own itself"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Site", "--controller=false", "--owns", "apps/v1/Deployment"], 1, "`--owns` needs a controller"),
    // create api --plugins deploy-image/v1-alpha
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--image", "memcached:1.6"], 1, "`--image` belongs to the deploy-image plugin"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "helm/v1-alpha"], 1, "unknown plugin `helm/v1-alpha`"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha"], 1, "`--image` is missing"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached 1.6"], 1, "without spaces, quotes or backslashes"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--image-container-command", "memcached,,-v"], 1, "it has an empty argument"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--image-container-port", "0"], 1, "ports start at 1"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--image-container-port", "70000"], 1, "a whole number from 0 to 65535"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--run-as-user=-1"], 1, "invalid `--run-as-user -1`"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--run-as-user", "0"], 1, "the pods run as non-root"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--owns", "apps/v1/Deployment"], 1, "both make the Deployment"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--namespaced=false"], 1, "a cluster-scoped kind"),
    case(Initialized, &["create", "api", "--group", "cache", "--kind", "Memcached", "--plugins", "deploy-image/v1-alpha", "--image", "memcached", "--controller=false"], 1, "scaffolds a kind and its controller"),
    // create api --external-api-crd
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--version", "v1", "--kind", "Issuer", "--external-api-crd", CERTIFICATE_CRD], 1, "defines `cert-manager.io/v1 Certificate` (served versions), not `cert-manager.io/v1 Issuer`"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--version", "v2", "--kind", "Certificate", "--external-api-crd", CERTIFICATE_CRD], 1, "not `cert-manager.io/v2 Certificate`"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--kind", "Certificate", "--external-api-crd", "nope.yaml"], 1, "cannot read `--external-api-crd nope.yaml`"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--kind", "Certificate", "--external-api-crd", NOT_A_CRD], 1, "is not a CustomResourceDefinition"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--kind", "Certificate", "--resource", "--external-api-crd", CERTIFICATE_CRD], 1, "`--resource` does not apply with `--external-api-crd`"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--kind", "Certificate", "--external-api-path", "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"], 1, "is a Go import path"),
    case(Initialized, &["create", "api", "--group", "ops.example.org", "--version", "v1", "--kind", "Widget", "--external-api-crd", unadoptable!("string-spec.yaml")], 1, "needs a `spec` of `type: object`"),
    // create api --from-crd
    case(Initialized, &["create", "api", "--from-crd", "nope.yaml"], 1, "cannot read `--from-crd nope.yaml`"),
    case(Initialized, &["create", "api", "--from-crd", NOT_A_CRD], 1, "is not a CustomResourceDefinition"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("two-storage-versions.yaml")], 1, "has 2 storage versions (v1alpha1, v1)"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("no-schema.yaml")], 1, "version `v1` of"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("date.yaml")], 1, "`type: date`"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("nameless-property.yaml")], 1, "has the property `spec._`, whose name has no letter or digit"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("string-spec.yaml")], 1, "needs a `spec` of `type: object`"),
    case(Initialized, &["create", "api", "--from-crd", unadoptable!("kubernetes-group.yaml")], 1, "belong to Kubernetes"),
    case(Initialized, &["create", "api", "--from-crd", POSTGRESQL_CRD], 1, "invalid kind `postgresql`: it must start with an uppercase letter"),
    case(Initialized, &["create", "api", "--from-crd", POSTGRESQL_CRD], 1, "use `create api --external-api-crd"),
    case(Initialized, &["create", "api", "--from-crd", BACKUP_CRD, "--group", "ops"], 1, "`--group` does not apply with `--from-crd`"),
    case(Initialized, &["create", "api", "--from-crd", BACKUP_CRD, "--version", "v1"], 1, "`--version` does not apply with `--from-crd`"),
    case(Initialized, &["create", "api", "--from-crd", BACKUP_CRD, "--owns", "apps/v1/Deployment"], 1, "`--owns` does not apply with `--from-crd`"),
    case(Initialized, &["create", "api", "--from-crd", BACKUP_CRD, "--resource=false"], 1, "`--resource=false` does not apply"),
    case(WithGuestbook, &["create", "api", "--from-crd", GUESTBOOK_CRD], 1, "the kind `Guestbook` of `webapp.mock.com` is already in this project (v1)"),
    // create webhook
    case(Initialized, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--defaulting"], 1, "no kind `webapp/v1 Guestbook` in this project"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook"], 1, "no webhook asked for"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--version", "v2", "--kind", "Guestbook", "--defaulting"], 1, "no kind `webapp/v2 Guestbook`"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--conversion", "--spoke", "v2"], 1, "Guestbook has no version `v2`"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--conversion"], 1, "`--conversion` needs the versions of Guestbook to convert to and from v1"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--conversion", "--spoke", "v1"], 1, "v1 is the hub (`--version`), not a spoke"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--spoke", "v2"], 1, "`--spoke` names the versions of a conversion webhook"),
    case(WithGuestbook, &["create", "webhook", "--group", "core", "--kind", "Pod", "--conversion", "--spoke", "v2"], 1, "`core/v1/Pod` is Kubernetes' own kind"),
    case(WithGuestbook, &["create", "webhook", "--group", "webapp", "--kind", "Guestbook", "--defaulting", "--overwrite-edited"], 2, "--force"),
    case(WithCrds, &["create", "webhook", "--group", "cert-manager.io", "--version", "v1", "--kind", "Certificate", "--conversion", "--spoke", "v2"], 1, "`Certificate` is another project's kind"),
    case(WithCrds, &["create", "webhook", "--group", "ops.example.org", "--version", "v1", "--kind", "Backup", "--conversion", "--spoke", "v1alpha1"], 1, "`target` of Backup v1 is a `BackupTarget`, which has no `Default`"),
    // create api for a kind Kubernetes defines
    case(Initialized, &["create", "api", "--group", "apps", "--version", "v1", "--kind", "Deploymnet", "--resource=false"], 1, "has no kind `apps/v1 Deploymnet`"),
    case(Initialized, &["create", "api", "--group", "apps", "--version", "v1", "--kind", "Deployment", "--finalizer"], 1, "`--finalizer` does not apply to `apps/v1 Deployment`"),
    case(Initialized, &["create", "api", "--group", "core", "--kind", "Pod", "--owns", "core/v1/ConfigMap"], 1, "`--owns` does not apply"),
    case(Initialized, &["create", "api", "--group", "core", "--kind", "Pod", "--storage-version"], 1, "`--storage-version` does not apply to `core/v1 Pod`"),
    case(Initialized, &["edit", "--plugins", "helm/v2-alpha"], 1, "the helm chart is made from `dist/install.yaml`, which is missing"),
    case(Empty, &["init", "--plugins", "helm/v2-alpha"], 1, "the helm chart is made from `dist/install.yaml`, which is missing"),
    case(Initialized, &["edit"], 1, "nothing to edit"),
    case(Initialized, &["edit", "--multigroup=false"], 1, "the project is not multigroup"),
    case(Initialized, &["edit", "--sharding"], 1, "the project has no controller whose objects replicas could share"),
    case(WithGuestbook, &["edit", "--sharding=false"], 1, "the manager is not sharded"),
    case(Initialized, &["edit", "--multigroup=maybe"], 2, "invalid value 'maybe'"),
    case(WithGuestbook, &["create", "api", "--group", "ship", "--kind", "Guestbook"], 1, "run `kube-scaffold edit --multigroup` first"),
    case(Initialized, &["edit", "--license", "none", "--owner", "Jane Roe"], 1, "no license header to put `--owner` in"),
    case(Initialized, &["edit", "--owner", "Jane\nRoe"], 1, "invalid owner: it must be a single line"),
    case(Initialized, &["edit", "--license", "mit"], 2, "invalid value 'mit'"),
    case(Initialized, &["edit", "--plugins", "grafana/v1-alpha,grafana.kubebuilder.io/v1-alpha"], 1, "the project has the plugin `grafana.kubebuilder.io/v1-alpha` already"),
    case(Initialized, &["edit", "--plugins", "deploy-image/v1-alpha"], 1, "unknown plugin `deploy-image/v1-alpha` for the whole project"),
    case(Initialized, &["create", "api", "--group", "cert-manager.io", "--kind", "Certificate", "--resource=false", "--storage-version", "--external-api-crd", CERTIFICATE_CRD], 1, "`--storage-version` does not apply with `--external-api-crd`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "AVeryLongKindNameThatGoesOnAndOnAndOnPastTheKubernetesLimitOfSixtyThree"], 1, "at most 63"),
    case(Initialized, &["create", "api", "--group", "Web", "--kind", "Guestbook"], 1, "invalid group `Web`"),
    case(Initialized, &["create", "api", "--group", "web..app", "--kind", "Guestbook"], 1, "invalid group `web..app`"),
    case(Initialized, &["create", "api", "--group", "x.k8s.io", "--kind", "Guestbook"], 1, "belong to Kubernetes"),
    case(Initialized, &["create", "api", "--group", "type", "--kind", "Guestbook"], 1, "Rust keyword"),
    case(Initialized, &["create", "api", "--group", "../etc", "--kind", "Guestbook"], 1, "invalid group `../etc`"),
    case(Initialized, &["create", "api", "--group", "a;rm", "--kind", "Guestbook"], 1, "`;` is not allowed"),
    case(Initialized, &["create", "api", "--group", "", "--kind", "Guestbook"], 1, "invalid group ``: it is empty"),
    case(Initialized, &["create", "api", "--group", "webapp", "--version", "V1", "--kind", "Guestbook"], 1, "invalid version `V1`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--version", "1", "--kind", "Guestbook"], 1, "invalid version `1`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--version", "v1gamma1", "--kind", "Guestbook"], 1, "`v1alpha1`"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--plural", "Guestbooks"], 1, "invalid plural"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--plural", "guest books"], 1, "` ` is not allowed"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--namespaced=maybe"], 2, "invalid value 'maybe'"),
    case(Initialized, &["create", "api", "--kind", "Guestbook"], 2, "--group <GROUP>"),
    case(Initialized, &["create", "api", "--group", "webapp"], 2, "--kind <KIND>"),
    // create api: requests that make no sense
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--resource=false", "--controller=false"], 1, "nothing to create"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--resource=false", "--controller"], 1, "a controller needs its type"),
    // create api: wrong place, re-runs and clashes
    case(Empty, &["create", "api", "--group", "webapp", "--kind", "Guestbook"], 1, "not a kube-scaffold project"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "Guestbook"], 1, "already exists"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--kind", "GuestbookSpec"], 1, "clashes with the types of kind `Guestbook`"),
    case(WithGuestbook, &["create", "api", "--group", "other", "--kind", "Guestbook"], 1, "share the name `guestbook`"),
    // create api: another version of a kind
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--version", "v2", "--kind", "Guestbook", "--controller"], 1, "Guestbook already has a controller (v1), which reconciles every version"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--version", "v2", "--kind", "Guestbook", "--plural", "guestbookz"], 1, "has the plural `guestbooks`"),
    case(WithGuestbook, &["create", "api", "--group", "webapp", "--version", "v2", "--kind", "Guestbook", "--namespaced=false"], 1, "is namespaced: every version of a kind has the same scope"),
    case(Initialized, &["create", "api", "--group", "webapp", "--kind", "Guestbook", "--storage-version"], 1, "`--storage-version` applies to a new version"),
];

fn prepare(setup: Setup) -> (tempfile::TempDir, std::path::PathBuf) {
    match setup {
        Empty => empty_dir("guestbook"),
        BadDirName => empty_dir("my project"),
        Initialized => initialized(),
        WithGuestbook => with_guestbook(),
        WithCrds => {
            let (tmp, dir) = initialized();
            kube_scaffold(&dir, CERTIFICATE_CONTROLLER).success();
            kube_scaffold(&dir, &["create", "api", "--from-crd", BACKUP_CRD]).success();
            (tmp, dir)
        }
    }
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    assert!(CASES.len() >= 30, "keep at least 30 cases");
    for case in CASES {
        let (_tmp, dir) = prepare(case.setup);
        assert_refused(&dir, case.args, case.code, case.message);
    }
}

#[test]
fn init_names_the_users_files_it_would_overwrite() {
    let (_tmp, dir) = empty_dir("guestbook");
    fs::write(dir.join("Makefile"), "all:\n\techo mine\n").unwrap();
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(dir.join("notes.txt"), "kept\n").unwrap();
    assert_refused(
        &dir,
        &["init"],
        1,
        "`Makefile`, `src/main.rs` would be overwritten",
    );
}

#[test]
fn manifests_the_helm_chart_cannot_be_made_from_are_refused() {
    let (_tmp, dir) = initialized();
    fs::create_dir(dir.join("dist")).unwrap();
    let cases = [
        (
            "kind: [",
            "`dist/install.yaml` is not the YAML `make build-installer` writes",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: guestbook-system\n",
            "it has no Deployment of the manager",
        ),
    ];
    for (manifests, message) in cases {
        fs::write(dir.join("dist/install.yaml"), manifests).unwrap();
        assert_refused(&dir, &["edit", "--plugins", "helm/v2-alpha"], 1, message);
    }
}

#[test]
fn a_broken_project_file_names_line_and_column() {
    let (_tmp, dir) = initialized();
    let text = fs::read_to_string(dir.join("PROJECT")).unwrap();
    fs::write(
        dir.join("PROJECT"),
        text.replace("domain = \"mock.com\"", "domain = mock.com"),
    )
    .unwrap();
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
        1,
        "PROJECT is not valid at line 10, column",
    );
}

#[test]
fn a_project_file_missing_a_field_says_which() {
    let (_tmp, dir) = initialized();
    let text = fs::read_to_string(dir.join("PROJECT")).unwrap();
    fs::write(
        dir.join("PROJECT"),
        text.replace("domain = \"mock.com\"\n", ""),
    )
    .unwrap();
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
        1,
        "missing field `domain`",
    );
}

#[test]
fn an_unknown_project_version_is_refused() {
    let (_tmp, dir) = initialized();
    let text = fs::read_to_string(dir.join("PROJECT")).unwrap();
    fs::write(
        dir.join("PROJECT"),
        text.replace("version = 2", "version = 9"),
    )
    .unwrap();
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
        1,
        "PROJECT has version 9",
    );
}

#[test]
fn a_project_of_kube_scaffold_0_1_0_is_refused_until_upgraded() {
    let (_tmp, dir) = copy_of("fixtures/v0.1.0/create-api");
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Book"],
        1,
        "has the layout `rust.kube-scaffold.io/v1` of kube-scaffold 0.1.0",
    );
}

#[test]
fn a_plugin_this_kube_scaffold_lacks_is_refused() {
    let (_tmp, dir) = initialized();
    let text = fs::read_to_string(dir.join("PROJECT")).unwrap();
    fs::write(
        dir.join("PROJECT"),
        text.replace(
            "\"kustomize.common.kube-scaffold.io/v2\"]",
            "\"kustomize.common.kube-scaffold.io/v2\", \"helm.kube-scaffold.io/v9\"]",
        ),
    )
    .unwrap();
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
        1,
        "PROJECT names the plugin `helm.kube-scaffold.io/v9`",
    );
}

#[test]
fn a_missing_marker_names_the_file_and_the_line_to_restore() {
    let (_tmp, dir) = initialized();
    let path = dir.join("src/controller/mod.rs");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace("    // +kube-scaffold:scaffold:controllers\n", ""),
    )
    .unwrap();
    assert_refused(
        &dir,
        &["create", "api", "--group", "webapp", "--kind", "Guestbook"],
        1,
        "`src/controller/mod.rs` has no marker line `// +kube-scaffold:scaffold:controllers`",
    );
}
