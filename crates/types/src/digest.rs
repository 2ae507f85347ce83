//! The SHA-256 digests of contracts §2.4 that concern values, request bodies and operation keys.
//!
//! Every digest here is over RFC 8785 canonical bytes, never over `serde_json` output or source
//! formatting, so any implementation that canonicalises the same value gets the same digest.

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::error::ContractError;
use crate::json::to_canonical_bytes;
use crate::scalar::{Digest, Id, Scope};

/// Field names that are bus identities and may never appear in domain params (contracts §2.1).
pub const BUS_IDENTITY_FIELDS: [&str; 4] =
    ["callId", "deliveryId", "ownerId", "expectedIncarnation"];

/// SHA-256 of raw bytes.
#[must_use]
pub fn sha256(bytes: &[u8]) -> Digest {
    Digest::from_bytes(Sha256::digest(bytes).into())
}

/// The value digest: SHA-256 of the canonical JSON of `value`.
///
/// # Errors
///
/// When `value` holds an integer canonical JSON cannot represent.
pub fn value_digest(value: &Value) -> Result<Digest, ContractError> {
    Ok(sha256(&to_canonical_bytes(value)?))
}

/// Refuses params that carry a bus identity at any depth, naming its path.
///
/// # Errors
///
/// [`ContractError::Rule`] at the offending field.
pub fn refuse_bus_identities(params: &Map<String, Value>) -> Result<(), ContractError> {
    fn walk(value: &Value, path: &str) -> Result<(), ContractError> {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let here = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    if BUS_IDENTITY_FIELDS.contains(&key.as_str()) {
                        return Err(ContractError::rule(
                            here,
                            "domain params never carry bus identities (callId, deliveryId, ownerId, expectedIncarnation)",
                        ));
                    }
                    walk(item, &here)?;
                }
                Ok(())
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| walk(item, &format!("{path}[{i}]"))),
            _ => Ok(()),
        }
    }
    walk(&Value::Object(params.clone()), "").map_err(|e| e.under("params"))
}

/// The domain body digest: SHA-256 of `{"method":m,"scope":scope|null,"params":p}` in canonical form.
///
/// # Errors
///
/// [`ContractError::Rule`] if `params` carries a bus identity.
pub fn body_digest(
    method: &str,
    scope: Option<&Scope>,
    params: &Map<String, Value>,
) -> Result<Digest, ContractError> {
    refuse_bus_identities(params)?;
    value_digest(&json!({ "method": method, "scope": scope, "params": params }))
}

/// The operation-key digest: SHA-256 of `{"method":m,"scope":{...},"workerId":w}` in canonical form.
///
/// # Errors
///
/// Never in practice; the signature keeps canonicalisation failures typed.
pub fn operation_key_digest(
    method: &str,
    scope: &Scope,
    worker_id: &Id,
) -> Result<Digest, ContractError> {
    value_digest(&json!({ "method": method, "scope": scope, "workerId": worker_id }))
}
