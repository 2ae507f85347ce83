//! The SHA-256 digests of contracts §2.4 that concern values, request bodies and operation keys.
//!
//! Every digest here is over RFC 8785 canonical bytes, never over `serde_json` output or source
//! formatting, so any implementation that canonicalises the same value gets the same digest.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::error::ContractError;
use crate::json::canonical::{write_map, write_string};
use crate::json::to_canonical_bytes;
use crate::scalar::{Digest, Id, Scope};

/// Field names that are bus identities and may never appear in domain params (contracts §2.1).
pub const BUS_IDENTITY_FIELDS: [&str; 4] =
    ["callId", "deliveryId", "ownerId", "expectedIncarnation"];

/// Lowercase hex of `bytes`, two digits a byte (a [`Digest`]'s text form, a memory window).
#[must_use]
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; 2 * bytes.len()];
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&hex_pair(*b));
    }
    // Only ASCII hex digits were written.
    String::from_utf8(out).unwrap_or_default()
}

/// The bytes of lowercase hex (the inverse of [`lower_hex`]), written into `out`, which must be
/// half as long as `text`; `false` on a length mismatch or any character but `0-9a-f`.
#[must_use]
pub fn parse_lower_hex_into(text: &str, out: &mut [u8]) -> bool {
    /// Each byte's value as a lowercase hex digit, or `BAD` (a bit no digit has).
    const BAD: u8 = 0x10;
    const NIBBLES: [u8; 256] = {
        let mut table = [BAD; 256];
        let mut d = 0;
        while d < 10 {
            table[b'0' as usize + d] = d as u8;
            d += 1;
        }
        let mut d = 0;
        while d < 6 {
            table[b'a' as usize + d] = 10 + d as u8;
            d += 1;
        }
        table
    };
    if text.len() != 2 * out.len() {
        return false;
    }
    // Every pair is decoded, and checked once at the end: no branch per byte.
    let mut bad = 0;
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        let (high, low) = (NIBBLES[usize::from(pair[0])], NIBBLES[usize::from(pair[1])]);
        bad |= high | low;
        *byte = high << 4 | (low & 0x0f);
    }
    bad & BAD == 0
}

/// The two lowercase hex digits of a byte.
pub(crate) fn hex_pair(b: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]
}

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

/// [`value_digest`] of any serialisable value, its canonical form written straight from it (the
/// same bytes as the canonical form of its JSON, without building the JSON).
///
/// # Errors
///
/// When the value holds a number canonical JSON cannot represent.
pub fn payload_digest<T: serde::Serialize + ?Sized>(value: &T) -> Result<Digest, ContractError> {
    crate::payload::with_canonical(value, |text| sha256(text.as_bytes()))
}

/// Whether `value`'s canonical JSON carries a bus identity at any depth: the answer
/// [`canonical_carries_bus_identity`] gives on that text, found by walking the value without
/// writing it wherever the walk can be sure the text would be written.
///
/// # Errors
///
/// When the value holds a number canonical JSON cannot represent (the writer's refusal).
pub fn carries_bus_identity<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<bool, ContractError> {
    match crate::json::scan::names_any(value, &BUS_IDENTITY_FIELDS) {
        Some(carries) => Ok(carries),
        None => crate::payload::with_canonical(value, canonical_carries_bus_identity),
    }
}

/// Refuses a value canonical JSON cannot hold, by the walk of [`carries_bus_identity`] wherever
/// it can be sure the writer would succeed (nothing is written or hashed then), and otherwise by
/// the writer's own refusal.
///
/// # Errors
///
/// The writer's refusal (a number canonical JSON cannot represent).
pub fn check_canonical<T: serde::Serialize + ?Sized>(value: &T) -> Result<(), ContractError> {
    match crate::json::scan::names_any(value, &[]) {
        Some(_) => Ok(()),
        None => crate::payload::with_canonical(value, |_| ()),
    }
}

/// Refuses params that carry a bus identity at any depth, naming its path.
///
/// # Errors
///
/// [`ContractError::Rule`] at the offending field.
pub fn refuse_bus_identities(params: &Map<String, Value>) -> Result<(), ContractError> {
    /// Whether a bus identity appears anywhere below `value` (no allocation on the way).
    fn carries(value: &Value) -> bool {
        match value {
            Value::Object(map) => map
                .iter()
                .any(|(key, item)| BUS_IDENTITY_FIELDS.contains(&key.as_str()) || carries(item)),
            Value::Array(items) => items.iter().any(carries),
            _ => false,
        }
    }
    /// The path of the first bus identity below `value`, in the order `carries` looks.
    fn first(value: &Value, path: &str) -> Option<String> {
        match value {
            Value::Object(map) => map.iter().find_map(|(key, item)| {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if BUS_IDENTITY_FIELDS.contains(&key.as_str()) {
                    Some(here)
                } else {
                    first(item, &here)
                }
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| first(item, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    let found = params
        .iter()
        .any(|(key, item)| BUS_IDENTITY_FIELDS.contains(&key.as_str()) || carries(item));
    if !found {
        return Ok(());
    }
    let path = params
        .iter()
        .find_map(|(key, item)| {
            if BUS_IDENTITY_FIELDS.contains(&key.as_str()) {
                Some(key.clone())
            } else {
                first(item, key)
            }
        })
        .unwrap_or_default();
    Err(ContractError::rule(
        path,
        "domain params never carry bus identities (callId, deliveryId, ownerId, expectedIncarnation)",
    )
    .under("params"))
}

/// The domain body digest: SHA-256 of `{"method":m,"scope":scope|null,"params":p}` in canonical form.
///
/// The canonical bytes are written straight from the parts (`method` < `params` < `scope` is
/// their UTF-16 order), without assembling the object first.
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
    let mut text = String::with_capacity(256);
    write_map(params, &mut text)?;
    Ok(body_digest_of_canonical(method, scope, &text))
}

/// [`body_digest`] from the params' canonical form, already written (the local lane writes it
/// straight from a typed value); the caller has checked it for bus identities
/// ([`canonical_carries_bus_identity`]).
#[must_use]
pub fn body_digest_of_canonical(method: &str, scope: Option<&Scope>, params: &str) -> Digest {
    let mut out = String::with_capacity(params.len() + 128);
    out.push_str("{\"method\":");
    write_string(method, &mut out);
    out.push_str(",\"params\":");
    out.push_str(params);
    out.push_str(",\"scope\":");
    match scope {
        None => out.push_str("null"),
        Some(scope) => {
            // `epoch` < `sessionId` < `step`; every value is a string.
            out.push_str("{\"epoch\":");
            write_string(scope.epoch.as_str(), &mut out);
            out.push_str(",\"sessionId\":");
            write_string(scope.session_id.as_str(), &mut out);
            out.push_str(",\"step\":");
            // Digits only: nothing to escape, and no string to build.
            let _ = write!(out, "\"{}\"", scope.step.get());
            out.push('}');
        }
    }
    out.push('}');
    sha256(out.as_bytes())
}

/// Whether canonical JSON `text` has a bus identity (`callId`, ...) as a member name at any
/// depth: the same answer as [`refuse_bus_identities`] on the parsed object, read from the text.
///
/// In canonical JSON a `"` inside a string is always escaped, so `{"` and `,"` occur only where
/// a member name begins; a string value can never imitate one.
#[must_use]
pub fn canonical_carries_bus_identity(text: &str) -> bool {
    // One pass over the quotes: a quote right after `{` or `,` opens a member name.
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'"') {
        let quote = at + offset;
        if quote > 0 && matches!(bytes[quote - 1], b'{' | b',') {
            let name = &bytes[quote + 1..];
            let named = BUS_IDENTITY_FIELDS.iter().any(|field| {
                name.starts_with(field.as_bytes())
                    && name.get(field.len()) == Some(&b'"')
                    && name.get(field.len() + 1) == Some(&b':')
            });
            if named {
                return true;
            }
        }
        at = quote + 1;
    }
    false
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
