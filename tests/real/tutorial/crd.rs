//! The tutorial's CronJob CRD beside kubebuilder's own (tests/fixtures/kubebuilder/): the same
//! schema in each version, descriptions aside, but for the differences named here, each with
//! its reason.

use serde_json::Value;

/// kubebuilder's CronJob CRD, as controller-gen wrote it for the book's multiversion chapter
/// (v1, stored, and v2).
const KUBEBUILDER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/kubebuilder/batch.tutorial.kubebuilder.io_cronjobs.yaml"
);

/// Where the two schemas differ: a version, a path of property names, and what differs there.
#[derive(Debug)]
pub struct Difference {
    pub version: &'static str,
    pub path: String,
    pub what: What,
}

#[derive(Debug)]
pub enum What {
    /// A keyword only kubebuilder's schema has.
    OnlyKubebuilder(String),
    /// A keyword only ours has.
    OnlyOurs(String),
    /// A keyword both have, with other values.
    Differs(String),
}

/// Whether a difference is the one named.
pub type Names = fn(&Difference) -> bool;

/// The differences the project cannot remove, each with why: the first of them that matches
/// a difference names it.
pub const NAMED: &[(&str, Names)] = &[
    (
        "k8s-openapi's schemas carry no x-kubernetes-list-type, -map-type or -list-map-keys: \
         lists and maps under jobTemplate are atomic for server-side apply, and the \
         ObjectReferences of status.active are not marked atomic",
        |d| {
            (in_template(d) || d.path == "/status/active")
                && only_kubebuilder(
                    d,
                    &[
                        "x-kubernetes-list-type",
                        "x-kubernetes-map-type",
                        "x-kubernetes-list-map-keys",
                    ],
                )
        },
    ),
    (
        "an int-or-string: controller-gen writes anyOf [integer, string] beside \
         x-kubernetes-int-or-string, k8s-openapi the marker alone (the same values pass)",
        |d| in_template(d) && only_kubebuilder(d, &["anyOf"]),
    ),
    (
        "a quantity's pattern: ours takes any string there; the API server checks the \
         quantity when the Job is made",
        |d| in_template(d) && only_kubebuilder(d, &["pattern"]),
    ),
    (
        "defaults from k8s.io/api's +default markers, which k8s-openapi does not carry: the \
         Job's own defaulting sets them when the Job is made",
        |d| in_template(d) && only_kubebuilder(d, &["default"]),
    ),
    (
        "k8s-openapi's required lists: a LocalObjectReference's name (\"\" by default in \
         Kubernetes' own schema), PodFailurePolicyOnPodConditionsPattern's status in 1.33",
        |d| {
            in_template(d)
                && (d.path.ends_with("/required")
                    || matches!(&d.what, What::OnlyOurs(k) if k == "required"))
        },
    ),
    (
        "fields Kubernetes added after 1.33: the project builds k8s-openapi for 1.33's API \
         (the `v1_33` feature of its Cargo.toml), the book k8s.io/api v0.36",
        |d| {
            in_template(d)
                && only_kubebuilder(
                    d,
                    &[
                        "fileKeyRef",
                        "restartPolicyRules",
                        "hostnameOverride",
                        "schedulingGroup",
                        "podCertificate",
                    ],
                )
        },
    ),
    (
        "an embedded ObjectMeta: k8s-openapi's schema in full, controller-gen's \
         `type: object` (its generateEmbeddedObjectMeta is off)",
        |d| {
            in_template(d)
                && d.path.ends_with("/metadata")
                && matches!(&d.what, What::OnlyOurs(k) if k == "properties")
        },
    ),
    (
        "an Option is nullable: a null there is taken as unset instead of pruned",
        |d| matches!(&d.what, What::OnlyOurs(k) if k == "nullable"),
    ),
    (
        "kube's derive leaves the root's apiVersion, kind and metadata to the API server, \
         and titles the schema",
        |d| {
            d.path.is_empty()
                && (only_kubebuilder(d, &["apiVersion", "kind", "metadata"])
                    || matches!(&d.what, What::OnlyOurs(k) if k == "title"))
        },
    ),
    (
        "the generated status' observedGeneration, which the conditions' generations come from",
        |d| {
            d.path == "/status" && matches!(&d.what, What::OnlyOurs(k) if k == "observedGeneration")
        },
    ),
];

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = format!("{} {}", self.version, self.path);
        match &self.what {
            What::OnlyKubebuilder(key) => write!(f, "{path}: only kubebuilder's has {key}"),
            What::OnlyOurs(key) => write!(f, "{path}: only ours has {key}"),
            What::Differs(how) => write!(f, "{path}: {how}"),
        }
    }
}

fn in_template(difference: &Difference) -> bool {
    difference.path.starts_with("/spec/jobTemplate/")
}

fn only_kubebuilder(difference: &Difference, keywords: &[&str]) -> bool {
    matches!(&difference.what, What::OnlyKubebuilder(k) if keywords.contains(&k.as_str()))
}

/// The versions of the CRD in `yaml`.
fn versions(yaml: &str) -> Vec<Value> {
    let crd: Value = serde_saphyr::from_str(yaml).expect("a CRD");
    crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .clone()
}

/// The version `name` among `versions`.
fn named<'a>(versions: &'a [Value], name: &str) -> &'a Value {
    let version = versions.iter().find(|v| v["name"] == name);
    version.unwrap_or_else(|| panic!("no version {name}"))
}

/// Where `ours` differs from kubebuilder's CRD in the schemas of `names`, descriptions
/// aside; also whether each is served and stored as kubebuilder's.
pub fn differences(ours: &str, names: &[&'static str]) -> Vec<Difference> {
    let kubebuilder = versions(&std::fs::read_to_string(KUBEBUILDER).unwrap());
    let ours = versions(ours);
    let mut found = Vec::new();
    for name in names {
        let (theirs, mine) = (named(&kubebuilder, name), named(&ours, name));
        let mut here = Vec::new();
        compare(
            "",
            &theirs["schema"]["openAPIV3Schema"],
            &mine["schema"]["openAPIV3Schema"],
            &mut here,
        );
        for key in ["served", "storage"] {
            if theirs[key] != mine[key] {
                let what = What::Differs(format!("{key}: {} / {}", theirs[key], mine[key]));
                here.push((String::new(), what));
            }
        }
        let version = |(path, what)| Difference {
            version: name,
            path,
            what,
        };
        found.extend(here.into_iter().map(version));
    }
    found
}

/// Compares two schemas at `path`, adding to `found` where and how they differ; `properties`
/// and `items` are walked, a property's path is its name.
fn compare(path: &str, kubebuilder: &Value, ours: &Value, found: &mut Vec<(String, What)>) {
    let (Value::Object(theirs), Value::Object(mine)) = (kubebuilder, ours) else {
        if kubebuilder != ours {
            let what = What::Differs(format!("{kubebuilder} / {ours}"));
            found.push((path.into(), what));
        }
        return;
    };
    let keys = theirs
        .keys()
        .chain(mine.keys().filter(|k| !theirs.contains_key(*k)));
    for key in keys.filter(|key| *key != "description") {
        let here = |what| (path.to_string(), what);
        match (theirs.get(key), mine.get(key)) {
            (Some(_), None) => found.push(here(What::OnlyKubebuilder(key.clone()))),
            (None, Some(_)) => found.push(here(What::OnlyOurs(key.clone()))),
            (Some(a), Some(b)) if key == "properties" => {
                let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
                for name in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                    let at = format!("{path}/{name}");
                    match (a.get(name), b.get(name)) {
                        (Some(x), Some(y)) => compare(&at, x, y, found),
                        (Some(_), None) => {
                            let what = What::OnlyKubebuilder(name.clone());
                            found.push((path.into(), what));
                        }
                        _ => {
                            let what = What::OnlyOurs(name.clone());
                            found.push((path.into(), what));
                        }
                    }
                }
            }
            (Some(a), Some(b)) if key == "items" || key == "additionalProperties" => {
                compare(path, a, b, found)
            }
            (Some(a), Some(b)) if key == "required" || key == "enum" => {
                let sorted = |v: &Value| {
                    let mut all: Vec<String> =
                        v.as_array().unwrap().iter().map(Value::to_string).collect();
                    all.sort();
                    all
                };
                if sorted(a) != sorted(b) {
                    found.push((format!("{path}/{key}"), What::Differs(format!("{a} / {b}"))));
                }
            }
            // 0 and 0.0 are one bound.
            (Some(Value::Number(a)), Some(Value::Number(b))) if a.as_f64() == b.as_f64() => {}
            (Some(a), Some(b)) if a != b => {
                found.push(here(What::Differs(format!("{key}: {a} / {b}"))))
            }
            _ => {}
        }
    }
}
