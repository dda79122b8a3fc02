// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The conversion webhook: the API server posts a ConversionReview to `/convert` whenever it
//! reads or writes a kind in a version other than the one it stores. Every version of a kind
//! converts to and from one version, the hub, with the `From` impls in
//! `src/api/<group>/<version>/<kind>_conversion.rs`: n versions need 2(n-1) conversions.
//! `kube-scaffold create webhook --conversion --spoke <version>` adds them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::Resource;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Where the API server posts ConversionReviews.
pub const PATH: &str = "/convert";

/// Every conversion of the project: one per version of a kind other than its hub.
pub fn conversions() -> Vec<Conversion> {
    vec![
        // +kube-scaffold:scaffold:conversions
    ]
}

/// Converts an object, as JSON, to another version.
type Convert = fn(Value) -> Result<Value, String>;

/// How one version of a kind (a spoke) converts to and from the kind's hub version.
pub struct Conversion {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub hub: String,
    pub spoke: String,
    to_hub: Convert,
    from_hub: Convert,
}

impl Conversion {
    /// `S`, a version of the kind of `H` (the hub), converted both ways with `From`.
    pub fn between<H, S>() -> Self
    where
        H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + From<S>,
        S: Resource<DynamicType = ()> + Serialize + DeserializeOwned + From<H>,
    {
        Self {
            group: H::group(&()).to_string(),
            kind: H::kind(&()).to_string(),
            plural: H::plural(&()).to_string(),
            hub: H::version(&()).to_string(),
            spoke: S::version(&()).to_string(),
            to_hub: through::<S, H>,
            from_hub: through::<H, S>,
        }
    }
}

/// `value`, an `A`, as a `B`.
fn through<A: DeserializeOwned, B: Serialize + From<A>>(value: Value) -> Result<Value, String> {
    let a: A = serde_json::from_value(value).map_err(|err| format!("invalid object: {err}"))?;
    serde_json::to_value(B::from(a)).map_err(|err| err.to_string())
}

/// `object` in the API version `desired` (`<group>/<version>`), through its kind's hub.
pub fn convert(conversions: &[Conversion], object: Value, desired: &str) -> Result<Value, String> {
    let field = |name: &str| {
        object[name]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("an object without {name}"))
    };
    let (api_version, kind) = (field("apiVersion")?, field("kind")?);
    if api_version == desired {
        return Ok(object);
    }
    let split = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map(|(group, version)| (group.to_string(), version.to_string()))
            .ok_or_else(|| format!("`{api_version}` is not <group>/<version>"))
    };
    let ((group, from), (desired_group, to)) = (split(&api_version)?, split(desired)?);
    if group != desired_group {
        return Err(format!(
            "cannot convert {kind} of {group} to {desired_group}"
        ));
    }
    let of_kind: Vec<&Conversion> = conversions
        .iter()
        .filter(|c| c.group == group && c.kind == kind)
        .collect();
    let Some(hub) = of_kind.first().map(|c| c.hub.clone()) else {
        return Err(format!("{kind}.{group} has no conversions"));
    };
    let spoke = |version: &str| {
        of_kind
            .iter()
            .find(|c| c.spoke == version)
            .ok_or_else(|| format!("{kind}.{group} has no conversion between {version} and {hub}"))
    };
    let at_hub = match from == hub {
        true => object,
        false => (spoke(&from)?.to_hub)(object)?,
    };
    match to == hub {
        true => Ok(at_hub),
        false => (spoke(&to)?.from_hub)(at_hub),
    }
}

/// The answer to one ConversionReview: every object converted, or a failure that says why.
pub fn review(conversions: &[Conversion], review: ConversionReview) -> ConversionReview {
    let mut request = match ConversionRequest::try_from(review) {
        Ok(request) => request,
        Err(err) => {
            let status = Status::failure(&err.to_string(), "BadRequest");
            return ConversionResponse::invalid(status).into_review();
        }
    };
    let objects = std::mem::take(&mut request.objects);
    let desired = request.desired_api_version.clone();
    let response = ConversionResponse::for_request(request);
    let converted: Result<Vec<Value>, String> = objects
        .into_iter()
        .map(|object| convert(conversions, object, &desired))
        .collect();
    match converted {
        Ok(objects) => response.success(objects),
        Err(reason) => response.failure(Status::failure(&reason, "ConversionFailed")),
    }
    .into_review()
}

/// `crds` with the CRD of each kind that has conversions converted by the webhook, as
/// `make manifests` writes them.
pub fn by_webhook(crds: &mut [CustomResourceDefinition], conversions: &[Conversion]) {
    for crd in crds {
        let (group, kind) = (&crd.spec.group, &crd.spec.names.kind);
        if conversions
            .iter()
            .any(|c| c.group == *group && c.kind == *kind)
        {
            crd.spec.conversion = Some(CustomResourceConversion {
                strategy: "Webhook".into(),
                webhook: Some(WebhookConversion {
                    client_config: Some(WebhookClientConfig {
                        service: Some(ServiceReference {
                            name: "webhook-service".into(),
                            namespace: "system".into(),
                            path: Some(PATH.into()),
                            ..ServiceReference::default()
                        }),
                        ..WebhookClientConfig::default()
                    }),
                    conversion_review_versions: vec!["v1".into()],
                }),
            });
        }
    }
}

/// Round trips of the conversions, over objects of any shape a version's schema allows.
#[cfg(test)]
pub mod testing {
    use std::fmt::Debug;

    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    };
    use kube::CustomResourceExt;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};

    use super::*;

    /// Checks that any `K` its schema allows converts to `H` and back unchanged; panics with
    /// the smallest object that does not.
    pub fn round_trips<K, H>()
    where
        K: CustomResourceExt + Resource<DynamicType = ()> + DeserializeOwned,
        K: From<H> + Clone + PartialEq + Debug,
        H: From<K>,
    {
        let crd = K::crd();
        let schema = crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.clone())
            .expect("a CRD with a schema");
        let objects = object(&K::api_version(&()), &K::kind(&()), &schema);
        let config = Config {
            failure_persistence: None,
            ..Config::default()
        };
        let result = TestRunner::new(config).run(&objects, |value| {
            let original: K = serde_json::from_value(value.clone()).map_err(|err| {
                TestCaseError::fail(format!("{value} does not read as the type: {err}"))
            })?;
            let back = K::from(H::from(original.clone()));
            prop_assert_eq!(back, original);
            Ok(())
        });
        if let Err(err) = result {
            panic!("{err}");
        }
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
                let required = schema.required.iter().flatten().any(|r| r == name);
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
                    && let Some(JSONSchemaPropsOrBool::Schema(values)) =
                        &schema.additional_properties
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(objects: Vec<Value>, desired: &str) -> ConversionReview {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "desiredAPIVersion": desired,
                "objects": objects,
            }
        }))
        .unwrap()
    }

    #[test]
    fn an_object_of_a_kind_without_conversions_is_a_failure_that_says_so() {
        let object = serde_json::json!({"apiVersion": "a.io/v1", "kind": "Thing"});
        let answer = super::review(&conversions(), review(vec![object], "a.io/v2"));
        let response = answer.response.unwrap();
        assert_eq!(response.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response.result.message, "Thing.a.io has no conversions");
        assert!(response.converted_objects.is_empty());
    }

    #[test]
    fn an_object_in_the_desired_version_is_returned_as_it_is() {
        let object = serde_json::json!({"apiVersion": "a.io/v1", "kind": "Thing", "x": 1});
        let answer = super::review(&[], review(vec![object.clone()], "a.io/v1"));
        assert_eq!(answer.response.unwrap().converted_objects, vec![object]);
    }

    #[test]
    fn every_conversion_is_between_two_versions_of_one_kind() {
        for conversion in conversions() {
            assert_ne!(conversion.hub, conversion.spoke, "{}", conversion.kind);
            let hubs: Vec<_> = conversions()
                .into_iter()
                .filter(|c| (&c.group, &c.kind) == (&conversion.group, &conversion.kind))
                .map(|c| c.hub)
                .collect();
            assert!(hubs.iter().all(|hub| *hub == conversion.hub), "{hubs:?}");
        }
    }
}
