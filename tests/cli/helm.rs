//! The helm plugin through the real binary: a chart made from what `make build-installer`
//! wrote, linted and rendered by the real helm (scripts/helm builds it from pinned Go modules),
//! then made again after the manifests changed, with the user's edits kept.
//!
//! `make build-installer` runs here without its `manifests` prerequisite (`make -o manifests`):
//! `create api` wrote the manifests as `make manifests` does, and building the project's
//! `crdgen` is the generated-project test's job.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::{assert_refused, kube_scaffold, run, stderr_of, tool, with_guestbook};

const KEY: &str = "helm.kube-scaffold.io/v2-alpha";

/// `make build-installer IMG=<image>`, with kubectl's kustomize, the manifests as they are.
fn build_installer(dir: &Path, image: &str) -> String {
    let img = format!("IMG={image}");
    run(
        dir,
        "make",
        &["-o", "manifests", "build-installer", "KUSTOMIZE=", &img],
    );
    fs::read_to_string(dir.join("dist/install.yaml")).unwrap()
}

/// `helm template` of the chart, as the release `guestbook` in `guestbook-system`.
pub fn helm_template(dir: &Path, set: &[&str]) -> String {
    let mut args = vec![
        "template",
        "guestbook",
        "dist/chart",
        "--namespace",
        "guestbook-system",
    ];
    for value in set {
        args.extend(["--set", value]);
    }
    let output = run(dir, tool("helm"), &args);
    String::from_utf8(output.stdout).unwrap()
}

/// `helm lint`, which must pass without a warning.
pub fn helm_lint(dir: &Path) {
    let output = run(dir, tool("helm"), &["lint", "--strict", "dist/chart"]);
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("1 chart(s) linted, 0 chart(s) failed"),
        "{said}"
    );
}

/// The objects of a stream of YAML documents, by `kind namespace/name`.
pub fn objects(yaml: &str) -> BTreeMap<String, Value> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap();
    documents
        .into_iter()
        .filter(|d| !d.is_null())
        .map(|d| {
            let key = format!(
                "{} {}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["namespace"].as_str().unwrap_or_default(),
                d["metadata"]["name"].as_str().unwrap()
            );
            (key, d)
        })
        .collect()
}

/// What the chart, with its values as written, must render from `installer`: the same objects
/// but the Namespace (`helm install --create-namespace` makes it), labelled as managed by
/// Helm, the CRDs kept when the release is uninstalled.
pub fn expected_from(installer: &str) -> BTreeMap<String, Value> {
    fn managed_by_helm(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(labels)) = map.get_mut("labels")
                    && labels.contains_key("app.kubernetes.io/managed-by")
                {
                    labels.insert("app.kubernetes.io/managed-by".into(), "Helm".into());
                }
                map.values_mut().for_each(managed_by_helm);
            }
            Value::Array(items) => items.iter_mut().for_each(managed_by_helm),
            _ => {}
        }
    }
    let mut objects = objects(installer);
    objects.retain(|key, _| !key.starts_with("Namespace "));
    for (key, object) in objects.iter_mut() {
        managed_by_helm(object);
        if key.starts_with("CustomResourceDefinition ") {
            object["metadata"]["annotations"]["helm.sh/resource-policy"] = "keep".into();
        }
    }
    objects
}

fn edit_file(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = fs::read_to_string(path).unwrap();
    let edited = edit(text.clone());
    assert_ne!(
        edited,
        text,
        "the edit of {} changed nothing",
        path.display()
    );
    fs::write(path, edited).unwrap();
}

/// `helm template`, with the values as written, renders `expected`, object by object.
pub fn assert_renders(dir: &Path, expected: &BTreeMap<String, Value>) {
    let rendered = objects(&helm_template(dir, &[]));
    assert_eq!(
        rendered.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (key, object) in expected {
        assert_eq!(&rendered[key], object, "{key} differs");
    }
}

#[test]
fn the_chart_renders_what_build_installer_wrote_and_keeps_edits_when_made_again() {
    let (_tmp, dir) = with_guestbook();

    // Without the manifests: refused, with the fix, and nothing written.
    let edit = ["edit", "--plugins", "helm/v2-alpha"];
    let missing = "error: the helm chart is made from `dist/install.yaml`, which is missing";
    let stderr = assert_refused(&dir, &edit, 1, missing);
    assert!(
        stderr.contains("help: run `make build-installer`"),
        "{stderr}"
    );

    // The chart, from the installer.
    let installer = build_installer(&dir, "registry.example.com:5000/guestbook:v0.1.0");
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(project.contains(KEY), "{project}");
    for file in [
        "dist/chart/Chart.yaml",
        "dist/chart/values.yaml",
        "dist/chart/.helmignore",
        "dist/chart/templates/NOTES.txt",
        "dist/chart/templates/crd/guestbooks.webapp.mock.com.yaml",
        "dist/chart/templates/manager/controller-manager.yaml",
        ".github/workflows/test-chart.yml",
    ] {
        assert!(dir.join(file).is_file(), "no {file}");
    }
    let chart = fs::read_to_string(dir.join("dist/chart/Chart.yaml")).unwrap();
    assert!(chart.contains("appVersion: \"v0.1.0\""), "{chart}");
    helm_lint(&dir);
    assert_renders(&dir, &expected_from(&installer));

    // The values do what they say.
    let set = [
        "manager.replicas=3",
        "crd.enable=false",
        "manager.image.tag=v9",
    ];
    let custom = objects(&helm_template(&dir, &set));
    let manager = "Deployment guestbook-system/guestbook-controller-manager";
    assert_eq!(custom[manager]["spec"]["replicas"], 3);
    let image = &custom[manager]["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, "registry.example.com:5000/guestbook:v9");
    assert!(
        !custom
            .keys()
            .any(|k| k.starts_with("CustomResourceDefinition"))
    );
    let elsewhere = run(
        &dir,
        tool("helm"),
        &["template", "shop", "dist/chart", "--namespace", "shop"],
    );
    let elsewhere = objects(&String::from_utf8(elsewhere.stdout).unwrap());
    assert!(
        elsewhere.contains_key("Deployment shop/guestbook-controller-manager"),
        "{:?}",
        elsewhere.keys()
    );

    // The user's edits: a value of their own, an annotation on the manager's pods, the chart's
    // version.
    let chart_dir = dir.join("dist/chart");
    edit_file(&chart_dir.join("values.yaml"), |t| {
        t + "\n# Ours.\npodAnnotations:\n  team: shop\n"
    });
    let template = chart_dir.join("templates/manager/controller-manager.yaml");
    edit_file(&template, |t| {
        t.replacen(
            "      annotations:\n",
            "      annotations:\n        team: '{{ .Values.podAnnotations.team }}'\n",
            1,
        )
    });
    edit_file(&chart_dir.join("Chart.yaml"), |t| {
        t.replace("version: 0.1.0", "version: 0.2.0")
    });

    // The manifests change: another kind, another image. The chart made again has both, and
    // every edit.
    // The user drops Guestbook's helper roles from config/ (its editor role's template they
    // had edited).
    edit_file(&dir.join("config/rbac/kustomization.yaml"), |t| {
        t.replace(
            "- guestbook_editor_role.yaml\n- guestbook_viewer_role.yaml\n",
            "",
        )
    });
    let editor = chart_dir.join("templates/rbac/guestbook-editor-role.yaml");
    edit_file(&editor, |t| t + "# Ours.\n");
    let shelf = ["create", "api", "--group", "webapp", "--kind", "Shelf"];
    kube_scaffold(
        &dir,
        &[&shelf[..], &["--resource", "--controller"]].concat(),
    )
    .success();
    // A description that reads like a template action (a doc comment, in the Rust type)
    // renders as it is written.
    edit_file(
        &dir.join("config/crd/bases/webapp.mock.com_shelves.yaml"),
        |t| {
            t.replacen(
                "description: An example field.",
                "description: 'Set as {{ .Values.foo }}: an example field.",
                1,
            )
            .replacen("Replace it with your own.", "Replace it with your own.'", 1)
        },
    );
    let installer = build_installer(&dir, "registry.example.com:5000/guestbook:v0.2.0");
    assert!(installer.contains("Set as {{ .Values.foo }}"));
    let again = kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    let said = String::from_utf8_lossy(&again.get_output().stdout).into_owned();
    assert!(
        said.contains("dist/chart/templates/crd/shelves.webapp.mock.com.yaml"),
        "{said}"
    );
    let values = fs::read_to_string(chart_dir.join("values.yaml")).unwrap();
    assert!(
        values.contains("tag: v0.2.0") && values.contains("  team: shop\n"),
        "{values}"
    );
    // The template of an object no longer there goes; an edited one stays, with a note.
    assert!(
        !chart_dir
            .join("templates/rbac/guestbook-viewer-role.yaml")
            .exists()
    );
    assert!(editor.exists());
    let noted = stderr_of(&again);
    assert!(
        noted.contains(
            "guestbook-editor-role.yaml is no longer in dist/install.yaml, but you edited it"
        ),
        "{noted}"
    );
    fs::remove_file(&editor).unwrap();
    let chart = fs::read_to_string(chart_dir.join("Chart.yaml")).unwrap();
    assert!(
        chart.contains("version: 0.2.0\nappVersion: \"v0.1.0\""),
        "{chart}"
    );
    helm_lint(&dir);
    let mut expected = expected_from(&installer);
    expected.get_mut(manager).unwrap()["spec"]["template"]["metadata"]["annotations"]["team"] =
        "shop".into();
    assert_renders(&dir, &expected);
    // PROJECT names the plugin among the project's, and records the edit that first named
    // it, not each run (a replay makes the chart from the newest record).
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert_eq!(
        project.matches(&format!("\"{KEY}\"")).count(),
        2,
        "{project}"
    );

    // An edit where the new chart changes the same line: refused, named, nothing written;
    // `--force` takes the new chart.
    edit_file(&chart_dir.join("values.yaml"), |t| {
        t.replace("tag: v0.2.0", "tag: ours")
    });
    build_installer(&dir, "registry.example.com:5000/guestbook:v0.3.0");
    let conflict = "error: `dist/chart/values.yaml` changed since kube-scaffold wrote them, and your edits there change the lines the command changes";
    let stderr = assert_refused(&dir, &edit, 1, conflict);
    assert!(
        stderr.contains("help: pass `--force` to replace them"),
        "{stderr}"
    );
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha", "--force"]).success();
    let values = fs::read_to_string(chart_dir.join("values.yaml")).unwrap();
    assert!(
        values.contains("tag: v0.3.0") && !values.contains("team"),
        "{values}"
    );
}

/// An upgrade makes the chart again from its record, as it makes every other file: the
/// user's edits of it stay, and so does the record of what the tool wrote, so the next chart
/// still merges them.
#[test]
fn an_upgrade_keeps_the_chart_and_its_edits_and_the_next_chart_merges_them() {
    let (_tmp, dir) = with_guestbook();
    build_installer(&dir, "registry.example.com/guestbook:v0.1.0");
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    let values = dir.join("dist/chart/values.yaml");
    edit_file(&values, |t| {
        t + "\n# Ours.\npodAnnotations:\n  team: shop\n"
    });
    let edited = fs::read_to_string(&values).unwrap();
    // The project as an earlier release of this layout left it.
    edit_file(&dir.join("PROJECT"), |t| {
        let version = format!("cliVersion = \"{}\"", env!("CARGO_PKG_VERSION"));
        t.replace(&version, "cliVersion = \"0.2.99\"")
    });
    kube_scaffold(&dir, &["upgrade", "--force"]).success();
    assert_eq!(fs::read_to_string(&values).unwrap(), edited);
    helm_lint(&dir);

    build_installer(&dir, "registry.example.com/guestbook:v0.2.0");
    kube_scaffold(&dir, &["edit", "--plugins", "helm/v2-alpha"]).success();
    let values = fs::read_to_string(&values).unwrap();
    assert!(
        values.contains("tag: v0.2.0") && values.contains("  team: shop\n"),
        "{values}"
    );
}
