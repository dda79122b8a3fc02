//! Property tests of what users hand the tool, through the real binary: PROJECT files changed
//! at random (a value replaced, a key or a table removed, an array entry repeated, the text cut
//! or garbled), and `create api` run on them; CRDs with schemas drawn at random, adopted with
//! `create api --from-crd` and `--external-api-crd`. No input may panic: each is accepted, or refused with `error:` and
//! `help:` and nothing written.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::support::{copy_of, kube_scaffold, stderr_of, tree};

/// The PROJECT of the golden project with every kind of API, webhook and edit.
const GOLDEN: &str = "golden/owned-kinds";

/// One change to PROJECT's TOML document, at the `at`-th node of a walk through it (modulo
/// the nodes there are).
#[derive(Debug, Clone)]
enum Change {
    Remove { at: usize },
    Replace { at: usize, with: toml::Value },
    Repeat { at: usize },
}

/// The text as written: whole, cut at a byte, or with bytes inserted.
#[derive(Debug, Clone)]
enum Text {
    Whole,
    Cut(usize),
    Inserted(usize, String),
}

fn value() -> impl Strategy<Value = toml::Value> {
    prop_oneof![
        "[a-zA-Z0-9./_ -]{0,12}".prop_map(toml::Value::String),
        "\\PC{0,6}".prop_map(toml::Value::String),
        any::<i64>().prop_map(toml::Value::Integer),
        any::<bool>().prop_map(toml::Value::Boolean),
        Just(toml::Value::Array(Vec::new())),
        Just(toml::Value::Table(toml::Table::new())),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any::<usize>().prop_map(|at| Change::Remove { at }),
        (any::<usize>(), value()).prop_map(|(at, with)| Change::Replace { at, with }),
        any::<usize>().prop_map(|at| Change::Repeat { at }),
    ]
}

fn text() -> impl Strategy<Value = Text> {
    prop_oneof![
        6 => Just(Text::Whole),
        1 => any::<usize>().prop_map(Text::Cut),
        1 => (any::<usize>(), "[\\[\\]=\"'{}\n#a-z0-9]{1,8}").prop_map(|(at, s)| Text::Inserted(at, s)),
    ]
}

/// The number of nodes below `value` (tables' values and arrays' entries, recursively).
fn count(value: &toml::Value) -> usize {
    match value {
        toml::Value::Table(table) => table.values().map(|v| 1 + count(v)).sum(),
        toml::Value::Array(array) => array.iter().map(|v| 1 + count(v)).sum(),
        _ => 0,
    }
}

/// Applies `change` to the `at`-th node below `value`, in the order `count` walks them; `at`
/// counts down as the walk goes.
fn apply(value: &mut toml::Value, at: &mut usize, change: &Change) -> bool {
    match value {
        toml::Value::Table(table) => {
            let keys: Vec<String> = table.keys().cloned().collect();
            for key in keys {
                if *at == 0 {
                    match change {
                        Change::Remove { .. } | Change::Repeat { .. } => {
                            table.remove(&key);
                        }
                        Change::Replace { with, .. } => {
                            table.insert(key, with.clone());
                        }
                    }
                    return true;
                }
                *at -= 1;
                if apply(table.get_mut(&key).unwrap(), at, change) {
                    return true;
                }
            }
            false
        }
        toml::Value::Array(array) => {
            for i in 0..array.len() {
                if *at == 0 {
                    match change {
                        Change::Remove { .. } => {
                            array.remove(i);
                        }
                        Change::Replace { with, .. } => array[i] = with.clone(),
                        Change::Repeat { .. } => array.insert(i, array[i].clone()),
                    }
                    return true;
                }
                *at -= 1;
                if apply(&mut array[i], at, change) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// PROJECT's text after `changes`, written as `text` says.
fn changed(original: &str, changes: &[Change], text: &Text) -> String {
    let mut document: toml::Value = toml::from_str(original).unwrap();
    for change in changes {
        let nodes = count(&document);
        if nodes == 0 {
            break;
        }
        let (Change::Remove { at } | Change::Replace { at, .. } | Change::Repeat { at }) = change;
        apply(&mut document, &mut (at % nodes), change);
    }
    let written = toml::to_string(&document).unwrap();
    let boundary = |at: usize| {
        let mut at = at % (written.len() + 1);
        while !written.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    match text {
        Text::Whole => written,
        Text::Cut(at) => written[..boundary(*at)].to_string(),
        Text::Inserted(at, inserted) => {
            let at = boundary(*at);
            format!("{}{inserted}{}", &written[..at], &written[at..])
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_changed_project_file_is_refused_with_help_or_accepted(
        changes in prop::collection::vec(change(), 1..4),
        text in text(),
    ) {
        let (_tmp, dir) = copy_of(GOLDEN);
        let original = std::fs::read_to_string(dir.join("PROJECT")).unwrap();
        let project = changed(&original, &changes, &text);
        std::fs::write(dir.join("PROJECT"), &project).unwrap();
        let args = ["create", "api", "--group", "extra", "--version", "v1", "--kind", "Extra"];
        accepted_or_refused_with_help(&dir, &args, &project)?;
    }
}

/// Runs `kube-scaffold ARGS` in `dir`: it succeeds, or exits 1 with `error:` and `help:`, or
/// 2 (a usage error, from clap) with `error:`, and nothing written; `input` is what the
/// failure shows.
fn accepted_or_refused_with_help(
    dir: &Path,
    args: &[&str],
    input: &str,
) -> Result<(), TestCaseError> {
    let before = tree(dir);
    let assert = kube_scaffold(dir, args);
    let code = assert.get_output().status.code();
    let said = stderr_of(&assert);
    prop_assert!(
        matches!(code, Some(0..=2)),
        "exit {:?} on:\n{}\n{}",
        code,
        input,
        said
    );
    if code != Some(0) {
        // clap's usage errors (2) name `--help` instead of a fix.
        let help = if code == Some(1) { "help: " } else { "--help" };
        let helped = said.contains("error: ") && said.contains(help);
        prop_assert!(helped, "{}\non:\n{}", said, input);
        prop_assert!(
            tree(dir) == before,
            "a refused command changed the project: {}",
            said
        );
    }
    Ok(())
}

/// A property's name: a field's usual spelling, one Rust or the generator may trip on, or a
/// few bytes of any kind.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-zA-Z0-9]{0,8}",
        1 => "[a-zA-Z0-9_$.@ -]{1,6}",
        1 => prop::sample::select(vec!["type", "self", "Self", "ref", "$ref", "crate", "super", "spec", "metadata", "apiVersion", "kind", "r#type", "_", "0"]).prop_map(String::from),
    ]
}

/// An OpenAPI v3 schema as CRDs hold them: scalars with formats and enums, int-or-string,
/// preserved unknown fields, and objects, arrays and maps of those, nested.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "format": "int32"})),
        Just(json!({"type": "integer", "format": "int64"})),
        Just(json!({"type": "integer"})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"x-kubernetes-int-or-string": true})),
        Just(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
        Just(json!({"type": "string", "enum": ["a", "B", "c-d", "", "1"]})),
        Just(json!({"type": "string", "format": "date-time"})),
        Just(json!({"type": "string", "nullable": true})),
        Just(json!({})),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        let properties = prop::collection::btree_map(field_name(), inner.clone(), 0..6);
        prop_oneof![
            (properties, any::<bool>()).prop_map(|(properties, required)| {
                let mut object = json!({"type": "object", "properties": properties});
                if let (true, Some(first)) = (required, properties_first(&object)) {
                    object["required"] = json!([first]);
                }
                object
            }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            inner.prop_map(|values| json!({"type": "object", "additionalProperties": values})),
        ]
    })
}

fn properties_first(object: &Value) -> Option<String> {
    object["properties"].as_object()?.keys().next().cloned()
}

/// A CRD of `ops.example.org/v1 Thing` whose spec and status are `spec` and `status`.
fn crd(spec: &Value, status: Option<&Value>) -> Value {
    let mut properties = json!({"spec": spec});
    if let Some(status) = status {
        properties["status"] = status.clone();
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.ops.example.org"},
        "spec": {
            "group": "ops.example.org",
            "names": {"kind": "Thing", "listKind": "ThingList", "plural": "things", "singular": "thing"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}},
            }],
        },
    })
}

/// A new project with `crd(spec, status)` in `thing.json`; the CRD's text.
fn with_crd(spec: &Value, status: Option<&Value>) -> (tempfile::TempDir, PathBuf, String) {
    let (tmp, dir) = copy_of("golden/init");
    let text = serde_json::to_string_pretty(&crd(spec, status)).unwrap();
    std::fs::write(dir.join("thing.json"), &text).unwrap();
    (tmp, dir, text)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_crd_of_any_schema_is_adopted_or_refused_with_help(
        spec in schema(),
        status in prop::option::of(schema()),
    ) {
        let (_tmp, dir, text) = with_crd(&spec, status.as_ref());
        let args = ["create", "api", "--from-crd", "thing.json", "--controller=false"];
        accepted_or_refused_with_help(&dir, &args, &text)?;
    }

    #[test]
    fn another_projects_crd_of_any_schema_is_taken_or_refused_with_help(
        spec in schema(),
        status in prop::option::of(schema()),
    ) {
        let (_tmp, dir, text) = with_crd(&spec, status.as_ref());
        let kind = ["--group", "ops.example.org", "--version", "v1", "--kind", "Thing"];
        let args = [&["create", "api"][..], &kind, &["--external-api-crd", "thing.json"]].concat();
        accepted_or_refused_with_help(&dir, &args, &text)?;
    }
}

/// A value a flag may be given: a usual one, one that is wrong, or none.
fn flag_value() -> impl Strategy<Value = Option<String>> {
    let values = vec![
        "",
        "x",
        "Guestbook",
        "guestbook",
        "webapp",
        "ops.example.org",
        "v1",
        "v1alpha1",
        "v2",
        "true",
        "false",
        "core/v1/Pod",
        "apps/v1/Deployment",
        "webapp/v1/Guestbook",
        "-1",
        "0",
        "70000",
        "a/b",
        "../escape",
        "über",
        "memcached:1.6",
        "deploy-image/v1-alpha",
        "helm",
        "mit",
        "--help",
    ];
    prop::option::of(prop::sample::select(values).prop_map(String::from))
}

/// The long flags `kube-scaffold COMMAND --help` lists.
fn flags_of(command: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let help = kube_scaffold(dir, &[command, &["--help"]].concat());
    let text = crate::support::stdout_of(&help);
    let mut flags: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .map(String::from)
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

/// Each command given flags drawn from its own `--help`, each alone, with a value, or
/// `--flag=value`: accepted, refused with `error:` and `help:` (1), or a usage error from
/// clap (2, `error:`), and nothing written unless accepted.
#[test]
fn any_flags_are_taken_or_refused_with_help() {
    let commands: [(&[&str], &str); 4] = [
        (&["create", "api"], "golden/owned-kinds"),
        (&["create", "webhook"], "golden/owned-kinds"),
        (&["edit"], "golden/owned-kinds"),
        (&["init"], "golden/init"),
    ];
    for (command, project) in commands {
        let flags = flags_of(command);
        assert!(flags.len() > 5, "{command:?} lists {flags:?}");
        let args = prop::collection::vec(
            (prop::sample::select(flags), flag_value(), any::<bool>()),
            1..6,
        );
        let config = ProptestConfig {
            cases: 32,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner = proptest::test_runner::TestRunner::new(config);
        let result = runner.run(&args, |args| {
            let (_tmp, dir) = copy_of(project);
            let mut line: Vec<String> = command.iter().map(|c| c.to_string()).collect();
            for (flag, value, joined) in args {
                match (value, joined) {
                    (None, _) => line.push(flag),
                    (Some(value), true) => line.push(format!("{flag}={value}")),
                    (Some(value), false) => line.extend([flag, value]),
                }
            }
            let line: Vec<&str> = line.iter().map(String::as_str).collect();
            accepted_or_refused_with_help(&dir, &line, &line.join(" "))
        });
        if let Err(err) = result {
            panic!("{command:?}: {err}");
        }
    }
}

/// The walk reaches every node: removing each in turn changes the document.
#[test]
fn every_node_of_the_golden_project_can_be_changed() {
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(GOLDEN)
            .join("PROJECT"),
    )
    .unwrap();
    let document: toml::Value = toml::from_str(&original).unwrap();
    let nodes = count(&document);
    assert!(nodes > 100, "{nodes} nodes");
    for at in 0..nodes {
        let mut copy = document.clone();
        assert!(apply(&mut copy, &mut at.clone(), &Change::Remove { at }));
        assert_ne!(copy, document, "node {at}");
    }
}
