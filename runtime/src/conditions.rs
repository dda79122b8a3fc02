//! Status conditions: the standard types (`Available`, `Progressing`, `Degraded`) as the
//! Kubernetes API conventions describe them, how a controller sets them, and their CRD schema:
//! what controller-gen writes for a `[]metav1.Condition` marked `+listType=map` and
//! `+listMapKey=type`.
//!
//! A list keyed by `type` lets server-side apply merge conditions one by one: two field
//! managers may each own their own condition instead of fighting over the whole list. Each
//! condition is validated as the API server validates `metav1.Condition`.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use schemars::{Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The schema of `status.conditions`, for `#[schemars(schema_with = "...")]`.
pub fn schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "description": "When the condition last changed from one status to another.",
                    "type": "string",
                    "format": "date-time"
                },
                "message": {
                    "description": "A human readable message with details about the transition.",
                    "type": "string",
                    "maxLength": 32768
                },
                "observedGeneration": {
                    "description": "The .metadata.generation the condition was set for.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0
                },
                "reason": {
                    "description": "A programmatic identifier of the reason for the last transition, in CamelCase.",
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "status": {
                    "description": "The status of the condition.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"]
                },
                "type": {
                    "description": "The type of condition, in CamelCase or in foo.example.com/CamelCase.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                }
            }
        }
    })
}
/// The resource is fully functional.
pub const AVAILABLE: &str = "Available";
/// The resource is being created or changed.
pub const PROGRESSING: &str = "Progressing";
/// The resource failed to reach or keep its desired state.
pub const DEGRADED: &str = "Degraded";

/// A condition's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    /// The controller cannot tell (yet), e.g. while it waits for something it made.
    Unknown,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        })
    }
}

/// Whether `conditions` holds the condition `type_` with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == Status::True.to_string())
}

/// Returns `conditions` with the condition of `type_` set to the given values.
///
/// `lastTransitionTime` only moves when the status changes, so a resync does not rewrite it.
pub fn set(
    conditions: &[Condition],
    type_: &str,
    status: Status,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> Vec<Condition> {
    let status = status.to_string();
    let previous = conditions.iter().find(|c| c.type_ == type_);
    let last_transition_time = match previous {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    let condition = Condition {
        type_: type_.to_string(),
        status,
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time,
    };
    let mut out: Vec<Condition> = conditions
        .iter()
        .filter(|c| c.type_ != type_)
        .cloned()
        .collect();
    out.push(condition);
    out.sort_by(|a, b| a.type_.cmp(&b.type_));
    out
}

/// Writes `status` to `obj` with server-side apply as field manager `manager`, taking over
/// the fields it sets (`force`): of its conditions, only the types in `owned`, so that another
/// manager's conditions stay its own (a status apply lists every condition it read from the
/// cache otherwise, and takes them all).
pub async fn apply_status<K>(
    api: &Api<K>,
    obj: &K,
    status: &impl Serialize,
    owned: &[&str],
    manager: &str,
) -> kube::Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug,
{
    let mut status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        conditions.retain(|c| c["type"].as_str().is_some_and(|t| owned.contains(&t)));
    }
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    let params = PatchParams::apply(manager).force();
    api.patch_status(&obj.name_any(), &params, &Patch::Apply(patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_transition_time_while_status_is_unchanged() {
        let first = set(&[], AVAILABLE, Status::True, "Reconciled", "ready", Some(1));
        let again = set(
            &first,
            AVAILABLE,
            Status::True,
            "Reconciled",
            "still ready",
            Some(2),
        );
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].last_transition_time, first[0].last_transition_time);
        assert_eq!(again[0].message, "still ready");
        assert_eq!(again[0].observed_generation, Some(2));
    }

    #[test]
    fn replaces_only_the_condition_of_the_same_type() {
        let both = set(
            &set(&[], AVAILABLE, Status::True, "A", "", None),
            DEGRADED,
            Status::Unknown,
            "D",
            "",
            None,
        );
        let flipped = set(&both, AVAILABLE, Status::False, "Failed", "", None);
        let types: Vec<_> = flipped
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(types, [(AVAILABLE, "False"), (DEGRADED, "Unknown")]);
        assert!(!is_true(&flipped, AVAILABLE));
        assert!(is_true(&both, AVAILABLE));
    }

    /// Another manager's condition, read from the cache, is not in the apply: it stays theirs.
    #[cfg(feature = "testing")]
    #[tokio::test]
    async fn a_status_apply_carries_only_the_controllers_own_conditions() {
        use k8s_openapi::api::core::v1::ConfigMap;

        let (ctx, server) = crate::testing::mock::context();
        let path = "/api/v1/namespaces/default/configmaps/test";
        let mut obj = ConfigMap::default();
        obj.metadata.name = Some("test".into());
        obj.metadata.namespace = Some("default".into());
        server.insert(path, &obj);
        let theirs = set(&[], "Audited", Status::True, "Checked", "ok", None);
        let both = set(
            &theirs,
            AVAILABLE,
            Status::True,
            "Reconciled",
            "ok",
            Some(3),
        );
        let status = serde_json::json!({"observedGeneration": 3, "conditions": both});
        let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), "default");
        apply_status(&api, &obj, &status, &[AVAILABLE], "tester")
            .await
            .unwrap();

        let writes = server.writes();
        assert_eq!(writes.len(), 1, "{writes:?}");
        assert_eq!(writes[0].path, format!("{path}/status"));
        assert!(
            writes[0].query.contains("fieldManager=tester"),
            "{}",
            writes[0].query
        );
        assert!(
            writes[0].query.contains("force=true"),
            "{}",
            writes[0].query
        );
        let applied = &writes[0].body["status"];
        assert_eq!(applied["observedGeneration"], 3);
        let types: Vec<&Value> = applied["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, [AVAILABLE]);
        assert_eq!(writes[0].body["kind"], "ConfigMap");
    }
}
