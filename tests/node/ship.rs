//! The project every scenario shares, `ship`: Guestbook in v1 (with its controller) and v2
//! (stored), v1's defaulting and validating webhooks and the conversion, with the manager's
//! own certificates (`--self-signed`: no cert-manager here), deploy-image's Memcached, and
//! CustomPod, whose controller makes `spec.replicas` Pods (`--owns core/v1/Pod`, filled in as
//! its user would); its runtime has the `sharding` feature. Its image is built once with `make docker-build`, on the stand-in base
//! images (`scripts/test-images`), and pushed to the node's registry with `make docker-push`.
//! It is built with `CARGO_PROFILE=dev`: the scenarios test the image's wiring, not its
//! optimisation, and a dev build of the dependencies takes minutes less than a release one.

use std::sync::OnceLock;

use crate::project::{Project, edit};

pub const NAMESPACE: &str = "ship-system";
/// The group of the ship's Guestbook.
const GROUP: &str = "webapp.node.example";
pub const DEPLOYMENT: &str = "deployment/ship-controller-manager";
/// The node's pause image, which `scripts/test-images` pushes to the node's registry.
pub const PAUSE: &str = "localhost:5000/pause:3.10";

pub struct Ship {
    pub project: Project,
    /// What every `make` here is given: `IMG=`, the image `make deploy` deploys (in the
    /// node's registry), `RUST_IMAGE=`, `BASE_IMAGE=`, the stand-ins' names, and
    /// `CARGO_PROFILE=dev`.
    images: Vec<String>,
}

/// The project, scaffolded, its image built and pushed, by the first scenario that asks.
pub fn ship() -> &'static Ship {
    static SHIP: OnceLock<Ship> = OnceLock::new();
    SHIP.get_or_init(|| {
        let project = Project::init("ship", &["--domain", "node.example"]);
        project.scaffold_converted_guestbook(&["--self-signed"]);
        // deploy-image's Memcached, its operand the node's pause image (no registry outside
        // serves memcached's).
        project.scaffold(&[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1alpha1",
            "--kind",
            "Memcached",
            "--image",
            PAUSE,
            "--image-container-command",
            "/pause",
            "--image-container-port",
            "11211",
            "--run-as-user",
            "1001",
            "--plugins",
            "deploy-image/v1-alpha",
        ]);
        // An operator that makes pods: CustomPod owns Pods, which its user fills in (the
        // pause image, restricted), `spec.replicas` of them, ready once Running.
        project.scaffold(&[
            "create",
            "api",
            "--group",
            "ship",
            "--version",
            "v1",
            "--kind",
            "CustomPod",
            "--resource",
            "--controller",
            "--owns",
            "core/v1/Pod",
        ]);
        scale_custom_pods(&project);
        // The runtime's `sharding` feature in the image, which `--sharding=false` leaves on:
        // the `sharding` scenario turns sharding on with the same image, as `edit --sharding`
        // then `make deploy` would, without a second image.
        project.scaffold(&["edit", "--sharding"]);
        project.scaffold(&["edit", "--sharding=false"]);
        // Cargo.lock, which the image's build is locked to, and the CRDs.
        project.run("make", &["manifests"]);
        let images = [
            vec![
                "IMG=localhost:5000/ship:v1".to_string(),
                "CARGO_PROFILE=dev".to_string(),
            ],
            base_images(),
        ]
        .concat();
        let ship = Ship { project, images };
        ship.make(&["docker-build"]);
        ship.make(&["docker-push"]);
        ship
    })
}

impl Ship {
    /// `make ARGS IMG=<image> CARGO_PROFILE=dev RUST_IMAGE=... BASE_IMAGE=...` in the project;
    /// its output.
    pub fn make(&self, args: &[&str]) -> String {
        self.project.run("make", &self.make_args(args))
    }

    /// `make ARGS` with the ship's images in another project (a copy of the ship's).
    pub fn make_in(&self, project: &Project, args: &[&str]) -> String {
        project.run("make", &self.make_args(args))
    }

    /// `make` as `make` does, with its standard error after its output.
    pub fn make_all_output(&self, args: &[&str]) -> String {
        let args = self.make_args(args);
        let output = self.project.output("make", &args);
        let text = [output.stdout, output.stderr].concat();
        let text = String::from_utf8_lossy(&text).into_owned();
        assert!(output.status.success(), "make {}:\n{text}", args.join(" "));
        text
    }

    /// `make deploy`, then waits until the manager's Deployment has rolled out.
    pub fn deploy(&self) {
        self.make(&["deploy"]);
        self.rollout();
    }

    /// Waits until the manager's Deployment has rolled out.
    pub fn rollout(&self) {
        let rollout = [
            "rollout",
            "status",
            "-n",
            NAMESPACE,
            DEPLOYMENT,
            "--timeout=300s",
        ];
        self.project.kubectl(&rollout);
    }

    /// `args`, then the images.
    fn make_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let images = self.images.iter().map(String::as_str);
        args.iter().copied().chain(images).collect()
    }
}

/// Checks that the API server calls the ship's webhooks through their Service: a Guestbook
/// named `name` defaulted, one with an empty `spec.foo` refused, and the first read in v2
/// (stored as v2, created and read in v1: the conversion webhook both ways); then deletes it.
pub fn webhooks_answer(project: &Project, name: &str) {
    let object = |name: &str, spec: &str| {
        format!(
            "apiVersion: {GROUP}/v1\nkind: Guestbook\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
        )
    };
    let created = project.apply(&object(name, "{}"));
    assert!(created.status.success(), "{created:?}");
    let v1 = format!("guestbooks.v1.{GROUP}/{name}");
    let defaulted = project.jsonpath(&["-n", "default", &v1], "{.spec.foo}");
    assert_eq!(defaulted, "default", "the defaulting webhook's default");
    let refused = project.apply(&object(&format!("{name}-refused"), "{foo: \"\"}"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("spec.foo must not be empty"),
        "{stderr}"
    );
    let v2 = format!("guestbooks.v2.{GROUP}/{name}");
    let read = project.jsonpath(&["-n", "default", &v2], "{.apiVersion}");
    assert_eq!(read, format!("{GROUP}/v2"));
    project.kubectl(&["delete", "-n", "default", &v1, "--timeout=60s"]);
}

/// CustomPod's user edits: `spec.replicas`, and a controller that runs that many Pods, the
/// `Child` it was generated with filled in, and deletes the rest. Its unit tests of the one
/// generated child go; the `deploy` scenario scales it on the node.
fn scale_custom_pods(project: &Project) {
    let api = project.dir.join("src/api/ship/v1/custom_pod.rs");
    edit(
        &api,
        "    pub foo: Option<String>,\n",
        "    pub foo: Option<String>,\n    \
         /// How many pods to run; 1 unless set.\n    \
         #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    \
         pub replicas: Option<i32>,\n",
    );
    let controller = project.dir.join("src/controller/custom_pod.rs");
    edit(
        &controller,
        "children::{self, Applied, Child, Owned}",
        "children::{self, Child, Owned}",
    );
    let generated_apply = "    let mut foreign = Vec::new();
    let mut waiting = Vec::new();
    for owned in OWNED {
        match (owned.apply)(obj, ctx, FIELD_MANAGER).await? {
            Applied::Ready => {}
            Applied::NotReady(why) => waiting.push(why),
            Applied::Foreign(why) => foreign.push(why),
        }
    }
";
    let scaled = "    // `scale` applies the pods; `OWNED` only watches them.
    let foreign: Vec<String> = Vec::new();
    let waiting = scale(obj, ctx).await?;
";
    edit(&controller, generated_apply, scaled);
    let source = std::fs::read_to_string(&controller).unwrap();
    let start = source
        .find("/// The `Pod` a `CustomPod` owns")
        .expect("the Pod's child");
    let end = source
        .find("/// The permissions this controller needs")
        .unwrap();
    let child = [
        include_str!("edits/custom_pod_scale.rs"),
        include_str!("edits/custom_pod_child.rs"),
    ]
    .concat();
    let source = format!("{}{child}\n{}", &source[..start], &source[end..]);
    let tests = source
        .find("    /// Where the child `K` of the test object lives.")
        .unwrap();
    let source =
        format!("{}\n}}\n", source[..tests].trim_end()).replace("    use http::Method;\n", "");
    std::fs::write(&controller, source).unwrap();
    edit(
        &controller,
        "    .chain(OWNED.iter().flat_map(|owned| (owned.rules)()))\n",
        "    .chain(OWNED.iter().flat_map(|owned| (owned.rules)()))\n    \
         .chain([rule(\"\", \"pods\", &[\"delete\"])])\n",
    );
}

/// The stand-in base images, as `scripts/test-images` names them on its last line.
fn base_images() -> Vec<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test-images");
    let output = std::process::Command::new(script).output().unwrap();
    assert!(
        output.status.success(),
        "{script} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let last = stdout.lines().last().unwrap_or_default();
    let names: Vec<String> = last.split(' ').map(str::to_string).collect();
    assert!(
        names.iter().any(|n| n.starts_with("RUST_IMAGE="))
            && names.iter().any(|n| n.starts_with("BASE_IMAGE=")),
        "{script} named no base images: {stdout}"
    );
    names
}
