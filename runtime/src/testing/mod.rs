//! For the project's unit tests: `mock`, a fake API server for the controllers; and for
//! property tests: objects of any shape a kind's schema allows. The conversions check their
//! round trips with them (`round_trips`); the webhooks of kinds whose types came from a CRD
//! (`--external-api-crd`, `--from-crd`) check their answers to any object (`for_any`), and
//! the controllers of those without `Default` take one object (`example`).
//!
//! The values cover what the Rust types care about: types, enums, formats and bounds of
//! integers, date-times, int-or-strings, maps and arrays. Patterns and lengths are the API
//! server's to check, and are not followed.

pub mod mock;

use std::fmt::Debug;
use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::{CustomResourceExt, Resource};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestCaseResult, TestRunner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The schema of `K`, from the CRD its type derives.
pub fn schema<K: CustomResourceExt>() -> JSONSchemaProps {
    K::crd().spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.clone())
        .expect("a CRD with a schema")
}

/// The schema of another project's kind `K`, from the copy of its CRD that `create api
/// --external-api-crd` made: `hack/crds/<group>_<plural>.yaml`.
pub fn external_schema<K: Resource<DynamicType = ()>>() -> JSONSchemaProps {
    let file = format!("hack/crds/{}_{}.yaml", K::group(&()), K::plural(&()));
    // The project's directory: cargo runs its tests there, and says so.
    let project = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into());
    let path = Path::new(&project).join(&file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{file}: {err}"));
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).expect("a CRD");
    let version = K::version(&());
    crd.spec
        .versions
        .into_iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema?.open_api_v3_schema)
        .unwrap_or_else(|| panic!("no schema for version {version} in {file}"))
}

/// Runs `test` on any `K` that `schema` allows; panics with the smallest object it fails on,
/// or with a value the schema allows that does not read as `K`.
pub fn for_any<K>(schema: &JSONSchemaProps, test: impl Fn(K) -> TestCaseResult)
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let objects = object(&K::api_version(&()), &K::kind(&()), schema);
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let result = TestRunner::new(config).run(&objects, |value| {
        let typed: K = serde_json::from_value(value.clone()).map_err(|err| {
            TestCaseError::fail(format!("{value} does not read as the type: {err}"))
        })?;
        test(typed)
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

/// One `K` that `schema` allows, the same at every run, named `test` in the namespace
/// `default`.
pub fn example<K>(schema: &JSONSchemaProps) -> K
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let objects = object(&K::api_version(&()), &K::kind(&()), schema);
    let value = objects
        .new_tree(&mut TestRunner::deterministic())
        .expect("a value")
        .current();
    serde_json::from_value(value.clone())
        .unwrap_or_else(|err| panic!("{value} does not read as the type: {err}"))
}

/// Checks that any `K` its schema allows converts to `H` and back unchanged; panics with
/// the smallest object that does not.
pub fn round_trips<K, H>()
where
    K: CustomResourceExt + Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    K: From<H> + Clone + Debug,
    H: From<K>,
{
    for_any::<K>(&schema::<K>(), |original| {
        let back = K::from(H::from(original.clone()));
        let json = |k: &K| serde_json::to_value(k).expect("JSON");
        prop_assert_eq!(json(&back), json(&original), "{:?}", back);
        Ok(())
    });
}

/// Objects of `kind` whose spec and status are any that `schema`, the CRD's, allows.
fn object(api_version: &str, kind: &str, schema: &JSONSchemaProps) -> BoxedStrategy<Value> {
    let meta = serde_json::json!({"name": "test", "namespace": "default"});
    let mut fields = vec![
        Just(("apiVersion".to_string(), Some(Value::from(api_version)))).boxed(),
        Just(("kind".to_string(), Some(Value::from(kind)))).boxed(),
        Just(("metadata".to_string(), Some(meta))).boxed(),
    ];
    let properties = schema.properties.clone().unwrap_or_default();
    for name in ["spec", "status"] {
        if let Some(property) = properties.get(name) {
            // kube's `CustomResource` always has a spec, whatever the CRD requires.
            let required = name == "spec" || schema.required.iter().flatten().any(|r| r == name);
            fields.push(field(name, property, required));
        }
    }
    fields.prop_map(collect).boxed()
}

/// A property: its name and a value, or none when it is optional.
fn field(
    name: &str,
    schema: &JSONSchemaProps,
    required: bool,
) -> BoxedStrategy<(String, Option<Value>)> {
    let name = name.to_string();
    match required {
        true => value(schema)
            .prop_map(move |v| (name.clone(), Some(v)))
            .boxed(),
        false => proptest::option::of(value(schema))
            .prop_map(move |v| (name.clone(), v))
            .boxed(),
    }
}

fn collect(fields: Vec<(String, Option<Value>)>) -> Value {
    let map = fields
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v)))
        .collect();
    Value::Object(map)
}

/// Any value `schema` allows, as far as the Rust types care: types, enums, formats of
/// integers and times, bounds of integers. (Patterns and lengths are the API server's.)
fn value(schema: &JSONSchemaProps) -> BoxedStrategy<Value> {
    if let Some(values) = &schema.enum_ {
        let values: Vec<Value> = values.iter().map(|v| v.0.clone()).collect();
        return proptest::sample::select(values).boxed();
    }
    if schema.x_kubernetes_int_or_string == Some(true) {
        return prop_oneof![
            any::<i32>().prop_map(Value::from),
            "[0-9]{1,2}%".prop_map(Value::from),
        ]
        .boxed();
    }
    match (schema.type_.as_deref(), schema.format.as_deref()) {
        (Some("string"), Some("date-time")) => {
            (1970..2100i32, 1..=12u8, 1..=28u8, 0..24u8, 0..60u8, 0..60u8)
                .prop_map(|(y, mo, d, h, mi, s)| {
                    Value::from(format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"))
                })
                .boxed()
        }
        (Some("string"), _) => "[a-zA-Z0-9._-]{0,12}".prop_map(Value::from).boxed(),
        (Some("boolean"), _) => any::<bool>().prop_map(Value::from).boxed(),
        (Some("integer"), format) => {
            let (low, high) = match format {
                Some("int32") => (i32::MIN.into(), i32::MAX.into()),
                Some("uint32") => (0, u32::MAX.into()),
                Some("uint64") | Some("uint") => (0, i64::MAX),
                Some("int8") => (i8::MIN.into(), i8::MAX.into()),
                Some("uint8") => (0, u8::MAX.into()),
                Some("int16") => (i16::MIN.into(), i16::MAX.into()),
                Some("uint16") => (0, u16::MAX.into()),
                _ => (i64::MIN, i64::MAX),
            };
            let low = schema.minimum.map_or(low, |m| low.max(m.ceil() as i64));
            let high = schema.maximum.map_or(high, |m| high.min(m.floor() as i64));
            (low..=high).prop_map(Value::from).boxed()
        }
        (Some("number"), _) => (-1e9..1e9f64).prop_map(Value::from).boxed(),
        (Some("array"), _) => match &schema.items {
            Some(JSONSchemaPropsOrArray::Schema(items)) => {
                proptest::collection::vec(value(items), 0..3)
                    .prop_map(Value::from)
                    .boxed()
            }
            _ => Just(Value::Array(Vec::new())).boxed(),
        },
        (Some("object"), _) => {
            let properties = schema.properties.clone().unwrap_or_default();
            if properties.is_empty()
                && let Some(JSONSchemaPropsOrBool::Schema(values)) = &schema.additional_properties
            {
                return proptest::collection::btree_map("[a-z]{1,6}", value(values), 0..3)
                    .prop_map(|map| Value::Object(map.into_iter().collect()))
                    .boxed();
            }
            let fields: Vec<_> = properties
                .iter()
                .map(|(name, property)| {
                    let required = schema.required.iter().flatten().any(|r| r == name);
                    field(name, property, required)
                })
                .collect();
            fields.prop_map(collect).boxed()
        }
        // No type: free-form JSON (`x-kubernetes-preserve-unknown-fields`).
        _ => Just(Value::Object(serde_json::Map::new())).boxed(),
    }
}
