//! Webhooks: the server the API server posts its AdmissionReviews and ConversionReviews to,
//! over TLS, and the configurations `make manifests` writes to `config/webhook/manifests.yaml`.
//! `kube-scaffold create webhook` adds a hook per kind and kind of hook, each in its module,
//! and the conversions between the versions of a kind (`conversion`).
//!
//! The serving certificate is read from `--webhook-cert-path` (`tls.crt` and `tls.key`, as
//! cert-manager writes them into the Secret the manager mounts) and read again when the files
//! change. HTTP/2 is off unless asked for (`--enable-http2`), as in kubebuilder: its rapid
//! reset and stream cancellation attacks (CVE-2023-44487, CVE-2023-39325) stay out.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::Resource;
use kube::api::ObjectMeta;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "webhooks")]
pub(crate) mod certs;
pub mod conversion;
#[cfg(all(test, feature = "webhooks"))]
pub(crate) mod fake;
#[cfg(feature = "webhooks")]
pub(crate) mod local;
#[cfg(feature = "webhooks")]
pub(crate) mod server;

#[cfg(feature = "webhooks")]
pub use local::FailurePolicy;
#[cfg(feature = "webhooks")]
pub(crate) use server::serve;

/// What a validator says of an object: allowed, with warnings for whoever sent it, or denied,
/// with the reason.
pub type Verdict = Result<Vec<String>, String>;

/// A validator's answers to the operations on an object of kind `K`, as functions.
pub struct Validator<K> {
    pub create: fn(&K) -> Verdict,
    /// `(old, new)`.
    pub update: fn(&K, &K) -> Verdict,
    pub delete: fn(&K) -> Verdict,
}

/// What validates objects of kind `K` (controller-runtime's `CustomValidator`): a
/// [`Validator`] of functions, or a type of your own that holds what its answers need (a
/// client, settings read from flags).
pub trait Validate<K>: Send + Sync + 'static {
    /// The answer to the creation of `new`.
    fn create(&self, new: &K) -> Verdict;
    /// The answer to the update of `old` into `new`.
    fn update(&self, old: &K, new: &K) -> Verdict;
    /// The answer to the deletion of `old`.
    fn delete(&self, old: &K) -> Verdict;
}

impl<K: 'static> Validate<K> for Validator<K> {
    fn create(&self, new: &K) -> Verdict {
        (self.create)(new)
    }

    fn update(&self, old: &K, new: &K) -> Verdict {
        (self.update)(old, new)
    }

    fn delete(&self, old: &K) -> Verdict {
        (self.delete)(old)
    }
}

/// How a hook answers a review.
type Answer = Box<dyn Fn(&AdmissionRequest<DynamicObject>) -> AdmissionResponse + Send + Sync>;

/// One webhook: where the API server posts reviews of which objects, and how it answers.
pub struct Hook {
    /// `/mutate-<group>-<version>-<kind>` or `/validate-...`, with dashes for dots.
    pub path: String,
    /// A defaulting (mutating) webhook, else a validating one.
    pub mutating: bool,
    /// The webhook's name in its configuration: `<m|v><kind>-<version>.<group>`, or
    /// `...<group or core>.kb.io` for a group without a dot (the API server wants three
    /// segments).
    pub name: String,
    pub group: String,
    pub version: String,
    pub plural: String,
    /// The operations the API server sends for review (`CREATE`, `UPDATE`, `DELETE`).
    pub operations: Vec<String>,
    /// An object a validating hook refuses, for the end-to-end test (`refusing`).
    pub refused: Option<serde_json::Value>,
    /// Namespaces whose objects the API server does not send (`outside`).
    pub excluded_namespaces: Vec<String>,
    answer: Answer,
}

impl Hook {
    /// A defaulting webhook for `K`: `default` (a function, or a closure holding what it
    /// needs) sets what an object left unset; the API server gets the difference as a JSON
    /// patch.
    pub fn defaulting<K>(default: impl Fn(&mut K) + Send + Sync + 'static) -> Self
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + 'static,
    {
        let answer = move |request: &AdmissionRequest<DynamicObject>| {
            let response = AdmissionResponse::from(request);
            let Some(object) = &request.object else {
                return response;
            };
            let before = match serde_json::to_value(object) {
                Ok(value) => value,
                Err(err) => return response.deny(err),
            };
            let mut typed: K = match serde_json::from_value(before.clone()) {
                Ok(typed) => typed,
                Err(err) => return response.deny(format!("the object is invalid: {err}")),
            };
            // What the type keeps of the object: a field it does not know (added to the CRD
            // after this manager was built, or newer than k8s-openapi) is not in it, and is
            // not the defaulter's to remove (controller-runtime drops such removals too).
            let known = match serde_json::to_value(&typed) {
                Ok(value) => value,
                Err(err) => return response.deny(err),
            };
            default(&mut typed);
            let after = match serde_json::to_value(&typed) {
                Ok(value) => value,
                Err(err) => return response.deny(err),
            };
            let mut patch = json_patch::diff(&before, &after);
            patch.0.retain(|operation| match operation {
                json_patch::PatchOperation::Remove(remove) => {
                    known.pointer(remove.path.as_str()).is_some()
                }
                _ => true,
            });
            if patch.0.is_empty() {
                return response;
            }
            response
                .with_patch(patch)
                .unwrap_or_else(|err| AdmissionResponse::from(request).deny(err))
        };
        Self::of::<K>(true, &["CREATE", "UPDATE"], Box::new(answer))
    }

    /// A validating webhook for `K`, which answers creates and updates (add `DELETE` to
    /// `operations` to be asked about deletes too). The update of an object being deleted is
    /// allowed unasked, so that its finalizers can be removed whatever its spec.
    pub fn validating<K>(validator: impl Validate<K>) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + 'static,
    {
        let answer = move |request: &AdmissionRequest<DynamicObject>| {
            let response = AdmissionResponse::from(request);
            let typed = |object: &Option<DynamicObject>| -> Result<K, String> {
                let object = object
                    .as_ref()
                    .ok_or("the review has no object".to_string())?;
                let value = serde_json::to_value(object).map_err(|err| err.to_string())?;
                serde_json::from_value(value).map_err(|err| format!("the object is invalid: {err}"))
            };
            let verdict = match request.operation {
                Operation::Create => typed(&request.object).and_then(|new| validator.create(&new)),
                // An object being deleted only loses finalizers: refusing that would keep it
                // for ever.
                Operation::Update if deleting(&request.object) => Ok(Vec::new()),
                Operation::Update => typed(&request.old_object).and_then(|old| {
                    typed(&request.object).and_then(|new| validator.update(&old, &new))
                }),
                Operation::Delete => {
                    typed(&request.old_object).and_then(|old| validator.delete(&old))
                }
                Operation::Connect => Ok(Vec::new()),
            };
            match verdict {
                Ok(warnings) if warnings.is_empty() => response,
                Ok(warnings) => {
                    let mut response = response;
                    response.warnings = Some(warnings);
                    response
                }
                Err(reason) => response.deny(reason),
            }
        };
        Self::of::<K>(false, &["CREATE", "UPDATE"], Box::new(answer))
    }

    fn of<K: Resource<DynamicType = ()>>(
        mutating: bool,
        operations: &[&str],
        answer: Answer,
    ) -> Self {
        let (group, version, kind) = (K::group(&()), K::version(&()), K::kind(&()));
        let (prefix, path) = match mutating {
            true => ("m", "mutate"),
            false => ("v", "validate"),
        };
        let kind = kind.to_lowercase();
        let name = match (group.contains('.'), group.is_empty()) {
            (true, _) => format!("{prefix}{kind}-{version}.{group}"),
            (false, true) => format!("{prefix}{kind}-{version}.core.kb.io"),
            (false, false) => format!("{prefix}{kind}-{version}.{group}.kb.io"),
        };
        Self {
            path: format!("/{path}-{}-{version}-{kind}", group.replace('.', "-")),
            mutating,
            name,
            group: group.to_string(),
            version: version.to_string(),
            plural: K::plural(&()).to_string(),
            operations: operations.iter().map(|op| op.to_string()).collect(),
            refused: None,
            excluded_namespaces: Vec::new(),
            answer,
        }
    }

    /// This hook, not sent the objects of `namespaces`. A hook on a kind Kubernetes defines
    /// leaves out `kube-system` and the manager's own namespace: while the manager is down,
    /// the API server refuses what the hook would review, and the manager's own pods must
    /// still start.
    pub fn outside(mut self, namespaces: &[&str]) -> Self {
        self.excluded_namespaces = namespaces.iter().map(|n| n.to_string()).collect();
        self
    }

    /// The namespaces the API server sends this hook's objects from: all but the excluded.
    fn namespace_selector(&self) -> Option<LabelSelector> {
        if self.excluded_namespaces.is_empty() {
            return None;
        }
        Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "kubernetes.io/metadata.name".into(),
                operator: "NotIn".into(),
                values: Some(self.excluded_namespaces.clone()),
            }]),
            ..LabelSelector::default()
        })
    }

    /// This hook, with `object`, one it refuses: `make test-e2e` creates it (a dry run) and
    /// checks that the API server asked this hook, which refused it.
    pub fn refusing<K: Serialize>(mut self, object: Option<K>) -> Self {
        self.refused = object.and_then(|object| serde_json::to_value(object).ok());
        self
    }

    /// The answer to one AdmissionReview.
    pub fn review(&self, review: AdmissionReview<DynamicObject>) -> AdmissionReview<DynamicObject> {
        let request: Result<AdmissionRequest<DynamicObject>, _> = review.try_into();
        let response = match request {
            Ok(request) => (self.answer)(&request),
            Err(err) => AdmissionResponse::invalid(err),
        };
        response.into_review()
    }

    fn rule(&self) -> RuleWithOperations {
        RuleWithOperations {
            api_groups: Some(vec![self.group.clone()]),
            api_versions: Some(vec![self.version.clone()]),
            operations: Some(self.operations.clone()),
            resources: Some(vec![self.plural.clone()]),
            ..RuleWithOperations::default()
        }
    }

    /// Where the API server finds the hook: the manager's `webhook-service`.
    fn client_config(&self) -> WebhookClientConfig {
        WebhookClientConfig {
            service: Some(ServiceReference {
                name: "webhook-service".into(),
                namespace: "system".into(),
                path: Some(self.path.clone()),
                ..ServiceReference::default()
            }),
            ..WebhookClientConfig::default()
        }
    }
}

/// Whether `object` is being deleted (it has a deletion timestamp).
fn deleting(object: &Option<DynamicObject>) -> bool {
    object
        .as_ref()
        .is_some_and(|o| o.metadata.deletion_timestamp.is_some())
}

/// The webhook configurations of `hooks`, as `make manifests` writes them: one mutating and
/// one validating configuration (each only if it has a hook). A hook the manager cannot
/// answer fails the request (`failurePolicy: Fail`), as kubebuilder's do.
pub fn configurations(
    hooks: &[Hook],
) -> (
    Option<MutatingWebhookConfiguration>,
    Option<ValidatingWebhookConfiguration>,
) {
    let meta = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    let mutating: Vec<MutatingWebhook> = hooks
        .iter()
        .filter(|hook| hook.mutating)
        .map(|hook| MutatingWebhook {
            admission_review_versions: vec!["v1".into()],
            client_config: hook.client_config(),
            failure_policy: Some("Fail".into()),
            name: hook.name.clone(),
            namespace_selector: hook.namespace_selector(),
            rules: Some(vec![hook.rule()]),
            side_effects: "None".into(),
            ..MutatingWebhook::default()
        })
        .collect();
    let validating: Vec<ValidatingWebhook> = hooks
        .iter()
        .filter(|hook| !hook.mutating)
        .map(|hook| ValidatingWebhook {
            admission_review_versions: vec!["v1".into()],
            client_config: hook.client_config(),
            failure_policy: Some("Fail".into()),
            name: hook.name.clone(),
            namespace_selector: hook.namespace_selector(),
            rules: Some(vec![hook.rule()]),
            side_effects: "None".into(),
            ..ValidatingWebhook::default()
        })
        .collect();
    let mutating = (!mutating.is_empty()).then(|| MutatingWebhookConfiguration {
        metadata: meta("mutating-webhook-configuration"),
        webhooks: Some(mutating),
    });
    let validating = (!validating.is_empty()).then(|| ValidatingWebhookConfiguration {
        metadata: meta("validating-webhook-configuration"),
        webhooks: Some(validating),
    });
    (mutating, validating)
}

/// A mutating or a validating webhook configuration: what the manager changes in each of its
/// webhooks (where the API server reaches it, the CA it trusts, what happens when it cannot)
/// is the same in both.
pub trait Configuration:
    Resource<DynamicType = ()>
    + k8s_openapi::Resource
    + Clone
    + std::fmt::Debug
    + Serialize
    + DeserializeOwned
{
    /// Each webhook's settings.
    fn webhooks_mut(&mut self) -> Vec<Settings<'_>>;
}

/// The settings of one webhook of a `Configuration` that the manager may change.
pub struct Settings<'a> {
    pub client_config: &'a mut WebhookClientConfig,
    pub failure_policy: &'a mut Option<String>,
    pub timeout_seconds: &'a mut Option<i32>,
}

impl Configuration for MutatingWebhookConfiguration {
    fn webhooks_mut(&mut self) -> Vec<Settings<'_>> {
        let hooks = self.webhooks.iter_mut().flatten();
        hooks
            .map(|hook| Settings {
                client_config: &mut hook.client_config,
                failure_policy: &mut hook.failure_policy,
                timeout_seconds: &mut hook.timeout_seconds,
            })
            .collect()
    }
}

impl Configuration for ValidatingWebhookConfiguration {
    fn webhooks_mut(&mut self) -> Vec<Settings<'_>> {
        let hooks = self.webhooks.iter_mut().flatten();
        hooks
            .map(|hook| Settings {
                client_config: &mut hook.client_config,
                failure_policy: &mut hook.failure_policy,
                timeout_seconds: &mut hook.timeout_seconds,
            })
            .collect()
    }
}

#[cfg(all(test, feature = "webhooks"))]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::fake::{admission_review as review, label};
    use super::*;

    /// What `hook` answers to the creation of `object`: the review's response, as JSON.
    fn answer_to(hook: &Hook, object: serde_json::Value) -> serde_json::Value {
        let review = serde_json::from_str(&review(object)).unwrap();
        serde_json::to_value(hook.review(review)).unwrap()
    }

    /// The JSON patch a defaulting hook answers `object` with.
    fn patch_of(hook: &Hook, object: serde_json::Value) -> serde_json::Value {
        let response = answer_to(hook, object);
        let bytes: Vec<u8> =
            serde_json::from_value(response["response"]["patch"].clone()).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    #[test]
    fn a_defaulter_keeps_the_fields_its_type_does_not_know() {
        let hook = Hook::defaulting::<ConfigMap>(label);
        let object = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "newer", "namespace": "default"},
            "data": {"kept": "yes"},
            "fieldOfANewerKubernetes": {"nested": [1, 2]},
        });
        let patch = patch_of(&hook, object);
        assert_eq!(
            patch,
            serde_json::json!([
                {"op": "add", "path": "/metadata/labels", "value": {"defaulted": "yes"}}
            ])
        );
    }

    #[test]
    fn a_defaulter_may_remove_a_field_its_type_knows() {
        let hook = Hook::defaulting::<ConfigMap>(|cm| cm.data = None);
        let object = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "emptied", "namespace": "default"},
            "data": {"gone": "yes"},
            "fieldOfANewerKubernetes": true,
        });
        let patch = patch_of(&hook, object);
        assert_eq!(
            patch,
            serde_json::json!([{"op": "remove", "path": "/data"}])
        );
    }

    /// A validator of the project's own type, which holds what it reads.
    struct Allowed(Vec<String>);

    impl Validate<ConfigMap> for Allowed {
        fn create(&self, new: &ConfigMap) -> Verdict {
            let mut keys = new.data.iter().flatten().map(|(key, _)| key);
            match keys.find(|key| !self.0.contains(key)) {
                Some(key) => Err(format!("{key} is not one of {:?}", self.0)),
                None => Ok(Vec::new()),
            }
        }

        fn update(&self, _: &ConfigMap, new: &ConfigMap) -> Verdict {
            self.create(new)
        }

        fn delete(&self, _: &ConfigMap) -> Verdict {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_defaulter_and_a_validator_may_hold_what_they_need() {
        let object = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "held", "namespace": "default"},
            "data": {"color": "blue", "size": "9"},
        });
        let team = String::from("blue-team");
        let hook = Hook::defaulting::<ConfigMap>(move |cm| {
            cm.metadata.labels = Some([("team".to_string(), team.clone())].into());
        });
        assert_eq!(
            patch_of(&hook, object.clone()),
            serde_json::json!([
                {"op": "add", "path": "/metadata/labels", "value": {"team": "blue-team"}}
            ])
        );
        let hook = Hook::validating(Allowed(vec!["color".into()]));
        let response = answer_to(&hook, object);
        assert_eq!(response["response"]["allowed"], false, "{response}");
        let message = response["response"]["status"]["message"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(message, r#"size is not one of ["color"]"#, "{response}");
    }

    #[test]
    fn a_hook_is_named_and_registered_as_kubebuilder_does() {
        let hook = Hook::defaulting::<ConfigMap>(label);
        assert_eq!(hook.path, "/mutate--v1-configmap");
        assert_eq!(hook.name, "mconfigmap-v1.core.kb.io");
        let (mutating, validating) = configurations(&[hook]);
        assert!(validating.is_none());
        let webhook = &mutating.unwrap().webhooks.unwrap()[0];
        assert_eq!(webhook.failure_policy.as_deref(), Some("Fail"));
        assert_eq!(webhook.side_effects, "None");
        let rule = &webhook.rules.as_ref().unwrap()[0];
        assert_eq!(rule.resources, Some(vec!["configmaps".to_string()]));
    }

    #[test]
    fn a_hook_outside_namespaces_is_not_sent_their_objects() {
        let hook = Hook::defaulting::<ConfigMap>(label).outside(&["kube-system"]);
        let (mutating, _) = configurations(&[hook]);
        let webhook = &mutating.unwrap().webhooks.unwrap()[0];
        let selector = webhook.namespace_selector.as_ref().unwrap();
        let requirement = &selector.match_expressions.as_ref().unwrap()[0];
        assert_eq!(requirement.key, "kubernetes.io/metadata.name");
        assert_eq!(requirement.operator, "NotIn");
        assert_eq!(requirement.values, Some(vec!["kube-system".to_string()]));
    }
}
