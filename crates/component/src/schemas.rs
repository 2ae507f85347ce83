//! Schema references: how a payload schema is named and digested, and the references of the
//! payloads every brain, task and executor shares (action contexts and decisions, episode
//! outcomes).
//!
//! A `SchemaRef` digest is SHA-256 of the RFC 8785 JSON of the schema's declaration
//! `{"registry": "fly-session-payload-schema-v1", "id", "version", "source": "flysim", "fields"}`
//! (contracts §2.4), so the reference changes exactly when the declaration does. Each built-in
//! reference is computed once: it is a function of constants, and it is needed on every step.

use std::sync::OnceLock;

use flysim_types::digest::value_digest;
use flysim_types::{Id, SchemaRef};
use serde_json::json;

/// The payload schema registry every declaration names.
pub const REGISTRY: &str = "fly-session-payload-schema-v1";

/// The reference of the schema `id` at `version` declaring `fields` (name, type) in order.
#[must_use]
pub fn schema_ref(id: &str, version: u32, fields: &[(&str, &str)]) -> SchemaRef {
    let declared: Vec<_> = fields
        .iter()
        .map(|(name, ty)| json!({"name": name, "type": ty}))
        .collect();
    let declaration = json!({
        "registry": REGISTRY, "id": id, "version": version, "source": "flysim", "fields": declared,
    });
    SchemaRef {
        id: Id::parse(id).unwrap_or_else(|e| {
            unreachable!("schema ids are constants of the code, and `{id}` is not an id: {e}")
        }),
        version,
        digest: value_digest(&declaration).unwrap_or_else(|e| {
            unreachable!("a declaration of strings and an integer always has canonical JSON: {e}")
        }),
    }
}

/// The progress value of a task, declaring `fields` (name, type) in order.
#[must_use]
pub fn task_progress(fields: &[(&str, &str)]) -> SchemaRef {
    schema_ref("task-progress", 1, fields)
}

/// The decision context of an agent: `{"availableActions": [Id...]}`, the actions its readout
/// may choose among (the mask). Extra task fields are not allowed.
#[must_use]
pub fn action_context() -> SchemaRef {
    static REF: OnceLock<SchemaRef> = OnceLock::new();
    REF.get_or_init(|| schema_ref("action-context", 1, &[("availableActions", "array<Id>")]))
        .clone()
}

/// A selected semantic action: `{"action": Id}`; `idle` means no button.
#[must_use]
pub fn action_decision() -> SchemaRef {
    static REF: OnceLock<SchemaRef> = OnceLock::new();
    REF.get_or_init(|| schema_ref("action-decision", 1, &[("action", "Id")]))
        .clone()
}

/// An episode outcome: `{"step": U64}`.
#[must_use]
pub fn episode_outcome() -> SchemaRef {
    static REF: OnceLock<SchemaRef> = OnceLock::new();
    REF.get_or_init(|| schema_ref("episode-outcome", 1, &[("step", "U64")]))
        .clone()
}

/// The action that presses no button.
pub const IDLE: &str = "idle";

#[cfg(test)]
mod tests {
    use super::schema_ref;

    #[test]
    fn a_reference_digests_its_declaration_and_changes_with_it() {
        let a = schema_ref("task-progress", 1, &[("score", "number")]);
        assert_eq!(a.id.as_str(), "task-progress");
        assert_eq!(a, schema_ref("task-progress", 1, &[("score", "number")]));
        assert_ne!(
            a.digest,
            schema_ref("task-progress", 1, &[("score", "integer")]).digest
        );
        assert_ne!(
            a.digest,
            schema_ref("task-progress", 2, &[("score", "number")]).digest
        );
        assert_ne!(a.digest, flysim_types::Digest::from_bytes([0; 32]));
    }

    #[test]
    #[should_panic(expected = "is not an id")]
    fn an_id_that_is_not_one_is_a_bug_not_a_schema_called_schema() {
        let _ = schema_ref("Not An Id", 1, &[]);
    }
}
