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

/// The names of the CRDs `conversions` convert, each once.
pub fn crd_names(conversions: &[Conversion]) -> Vec<String> {
    let mut names: Vec<String> = conversions
        .iter()
        .map(|c| format!("{}.{}", c.plural, c.group))
        .collect();
    names.sort();
    names.dedup();
    names
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
        let answer = super::review(&[], review(vec![object], "a.io/v2"));
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
}
