//! The CRD schema of a status's `conditions`: what controller-gen writes for a
//! `[]metav1.Condition` marked `+listType=map` and `+listMapKey=type`.
//!
//! A list keyed by `type` lets server-side apply merge conditions one by one: two field
//! managers may each own their own condition instead of fighting over the whole list. Each
//! condition is validated as the API server validates `metav1.Condition`.

use schemars::{Schema, SchemaGenerator, json_schema};

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
