//! Reading contract payloads: strict JSON, typed decoding, then the contract's validation rules.
//!
//! [`parse_payload`] is the one way bytes become a contract type. It refuses in this order:
//! strict JSON ([`crate::json`]), a non-object document, unknown or missing fields and wrong JSON
//! types (with the field path), scalar rules (with their own codes and the field path), and last
//! the cross-field rules of [`Payload::validate`].

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ContractError;
use crate::json;
use crate::rational::RationalNs;
use crate::scalar::{
    BusCallId, DeliveryToken, Digest, DomainRequestId, HoldToken, Id, OwnerToken, TypedValue, U64,
};

/// A contract type that can be read from and written to canonical JSON.
pub trait Payload: Serialize + DeserializeOwned {
    /// The contract's rules beyond shape and scalars; a refusal names the field path and rule.
    ///
    /// # Errors
    ///
    /// The first rule broken.
    fn validate(&self) -> Result<(), ContractError>;
}

/// Strict-parses `bytes` as a payload of type `T` and validates it.
///
/// # Errors
///
/// The first refusal, with its code and field path.
pub fn parse_payload<T: Payload>(bytes: &[u8]) -> Result<T, ContractError> {
    let object = json::parse_object(bytes)?;
    from_value(Value::Object(object))
}

/// Decodes and validates an already strict-parsed value.
///
/// # Errors
///
/// As [`parse_payload`], without the JSON-level refusals.
pub fn from_value<T: Payload>(value: Value) -> Result<T, ContractError> {
    // The plain decode first; only a refusal pays for the path tracking that names the field.
    let decoded: T = match T::deserialize(&value) {
        Ok(v) => v,
        Err(_) => match serde_path_to_error::deserialize(&value) {
            Ok(v) => v,
            Err(e) => return Err(shape_error(&value, &e)),
        },
    };
    decoded.validate()?;
    Ok(decoded)
}

/// Decodes a payload object whose field `field` is a free JSON object (a request's `params`, a
/// result's `result`) without copying that object: it moves into the decoded value.
///
/// The result, and every refusal, is what [`from_value`] gives for the same object: the other
/// fields are decoded with `field` standing in as an empty object (a free object cannot fail to
/// decode, so no refusal depends on its content), then `field` is put in place and the whole
/// value is validated.
///
/// # Errors
///
/// As [`from_value`].
pub fn from_map_moving<T: Payload>(
    mut map: serde_json::Map<String, Value>,
    field: &str,
    put: impl FnOnce(&mut T, serde_json::Map<String, Value>),
) -> Result<T, ContractError> {
    let object = match map.get_mut(field) {
        Some(Value::Object(object)) => std::mem::take(object),
        _ => return from_value(Value::Object(map)),
    };
    let value = Value::Object(map);
    let mut decoded: T = match T::deserialize(&value) {
        Ok(v) => v,
        Err(_) => match serde_path_to_error::deserialize(&value) {
            Ok(v) => v,
            Err(e) => return Err(shape_error(&value, &e)),
        },
    };
    put(&mut decoded, object);
    decoded.validate()?;
    Ok(decoded)
}

/// The canonical JSON of a payload.
///
/// # Errors
///
/// When the payload holds a value canonical JSON cannot represent.
pub fn to_canonical<T: Serialize + ?Sized>(payload: &T) -> Result<String, ContractError> {
    // Room for a typical step payload, so the text is not regrown from empty every time.
    to_canonical_sized(payload, 256)
}

/// [`to_canonical`] into a text made with room for `capacity` bytes, for a caller that knows
/// its payloads run larger (a trace row).
///
/// # Errors
///
/// As [`to_canonical`].
pub fn to_canonical_sized<T: Serialize + ?Sized>(
    payload: &T,
    capacity: usize,
) -> Result<String, ContractError> {
    let mut out = String::with_capacity(capacity);
    write_canonical(payload, &mut out)?;
    Ok(out)
}

/// Calls `f` with the canonical JSON of a payload, written into a buffer this thread keeps for
/// the next call: for text that is only looked at (hashed, scanned) and then dropped.
///
/// # Errors
///
/// As [`to_canonical`].
pub fn with_canonical<T: Serialize + ?Sized, R>(
    payload: &T,
    f: impl FnOnce(&str) -> R,
) -> Result<R, ContractError> {
    thread_local! {
        static TEXT: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
    }
    // A call inside `f` or inside a `Serialize` impl finds the buffer taken and starts empty.
    let mut out = TEXT.take();
    out.clear();
    let result = write_canonical(payload, &mut out).map(|()| f(&out));
    if out.capacity() <= json::writer::KEEP_BYTES {
        TEXT.set(out);
    }
    result
}

/// Appends the canonical JSON of a payload to `out`: written straight from the `Serialize`
/// impl, byte for byte `json::to_canonical(&serde_json::to_value(payload)?)`, without building
/// the tree.
fn write_canonical<T: Serialize + ?Sized>(
    payload: &T,
    out: &mut String,
) -> Result<(), ContractError> {
    json::writer::write(payload, out).map_err(|e| match e {
        json::writer::Error::Json(e) => ContractError::from(e),
        json::writer::Error::Shape(message) => ContractError::Shape {
            path: String::new(),
            message,
        },
    })
}

/// Turns a serde error back into the typed refusal it stands for.
fn shape_error(root: &Value, e: &serde_path_to_error::Error<serde_json::Error>) -> ContractError {
    let path = render_path(e.path());
    let message = e.inner().to_string();
    // serde_json appends " at line L column C" to some messages; values carry no lines.
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_owned();
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next())
    {
        return ContractError::UnknownField {
            path,
            field: field.to_owned(),
        };
    }
    let code = message
        .get(..6)
        .filter(|c| c.starts_with("FS") && message[6..].starts_with(": "));
    match code.and_then(|code| rebuild(code, &message, value_at(root, e.path()))) {
        Some(err) => err.under(&path),
        None => ContractError::Shape { path, message },
    }
}

/// Re-runs the scalar rule that produced `code` on the offending value to recover the typed error.
fn rebuild(code: &str, message: &str, value: Option<&Value>) -> Option<ContractError> {
    let value = value?;
    let text = value.as_str();
    match code {
        "FS0101" => Id::parse(text?).err(),
        "FS0102" => U64::parse(text?).err(),
        "FS0103" => Digest::parse(text?).err(),
        "FS0104" => {
            let n = U64::parse(value.get("numerator")?.as_str()?).ok()?;
            let d = U64::parse(value.get("denominator")?.as_str()?).ok()?;
            RationalNs::new(n.get(), d.get()).err()
        }
        "FS0106" => {
            // The message names the spelling the field expects (see `ContractError::InvalidIdSpelling`).
            let t = text?;
            if message.contains("bus call id") {
                BusCallId::parse(t).err()
            } else if message.contains("delivery token") {
                DeliveryToken::parse(t).err()
            } else if message.contains("hold token") {
                HoldToken::parse(t).err()
            } else if message.contains("owner token") {
                OwnerToken::parse(t).err()
            } else {
                DomainRequestId::parse(t).err()
            }
        }
        "FS0107" | "FS0122" => {
            let typed: TypedValue = serde_json::from_value(value.clone()).ok()?;
            typed.validate().err()
        }
        _ => None,
    }
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

fn value_at<'v>(root: &'v Value, path: &serde_path_to_error::Path) -> Option<&'v Value> {
    use serde_path_to_error::Segment;
    let mut here = root;
    for segment in path.iter() {
        here = match segment {
            Segment::Seq { index } => here.get(*index)?,
            Segment::Map { key } => here.get(key.as_str())?,
            Segment::Enum { .. } | Segment::Unknown => here,
        };
    }
    Some(here)
}

/// Validation helpers shared by payload types.
pub mod check {
    use std::collections::BTreeSet;

    use crate::error::ContractError;

    /// Refuses a list longer than `max`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `path`.
    pub fn at_most<T>(
        items: &[T],
        max: usize,
        path: &str,
        what: &str,
    ) -> Result<(), ContractError> {
        if items.len() > max {
            return Err(ContractError::rule(
                path,
                format!("at most {max} {what}, found {}", items.len()),
            ));
        }
        Ok(())
    }

    /// Refuses a list whose keys repeat, naming the second occurrence.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `path[i]`.
    pub fn unique_by<'a, T, K: Ord + std::fmt::Display>(
        items: &'a [T],
        key: impl Fn(&'a T) -> K,
        path: &str,
        what: &str,
    ) -> Result<(), ContractError> {
        let repeated = |i: usize, k: &K| {
            ContractError::rule(
                format!("{path}[{i}]"),
                format!("{what} `{k}` appears twice"),
            )
        };
        // Short lists (ports, buttons, stimuli: the common case on every step) are compared
        // pairwise, without allocating; the first repeat found is the same either way.
        if items.len() <= 16 {
            for (i, item) in items.iter().enumerate() {
                let k = key(item);
                if items[..i].iter().any(|earlier| key(earlier) == k) {
                    return Err(repeated(i, &k));
                }
            }
            return Ok(());
        }
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let k = key(item);
            if seen.contains(&k) {
                return Err(repeated(i, &k));
            }
            seen.insert(k);
        }
        Ok(())
    }

    /// Refuses a number that is not finite (values built in code; the reader never yields one).
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `path`.
    pub fn finite(v: f64, path: &str) -> Result<(), ContractError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(ContractError::rule(path, "the number must be finite"))
        }
    }

    /// Runs `f` on each item, placing refusals under `path[i]`.
    ///
    /// # Errors
    ///
    /// The first item's refusal.
    pub fn each<T>(
        items: &[T],
        path: &str,
        f: impl Fn(&T) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        for (i, item) in items.iter().enumerate() {
            f(item).map_err(|e| e.under(&format!("{path}[{i}]")))?;
        }
        Ok(())
    }
}

/// Deserialises a field that is required but may be `null` (`T | null` in the contract).
///
/// Serde fills a missing `Option` field with `None`; routing the field through this function
/// (`#[serde(deserialize_with = "required_nullable")]`) makes absence an error, so `null` must
/// be written explicitly.
///
/// # Errors
///
/// As `Option<T>`'s own deserialisation.
pub fn required_nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// The JSON Schema of a required-but-nullable field: `T` or `null`, and listed as required.
///
/// Use as `#[schemars(with = "Nullable<T>")]` beside
/// `#[serde(deserialize_with = "required_nullable")]`; schemars would otherwise either drop the
/// field from `required` (a plain `Option`) or drop `null` (`#[schemars(required)]`).
pub struct Nullable<T>(std::marker::PhantomData<T>);

impl<T: schemars::JsonSchema> schemars::JsonSchema for Nullable<T> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<Option<T>>()
    }
}

/// A `SessionRpcRequest` body (contracts §2.1): a domain request id, a scope, and params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionRpcRequest {
    /// The domain request id, `req-<U64>`.
    pub request_id: DomainRequestId,
    /// The scope, or null for scope-free methods (Hello, Status).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<crate::scalar::Scope>")]
    pub scope: Option<crate::scalar::Scope>,
    /// The method's params; never a bus identity at any depth.
    pub params: serde_json::Map<String, Value>,
}

impl Payload for SessionRpcRequest {
    fn validate(&self) -> Result<(), ContractError> {
        crate::digest::refuse_bus_identities(&self.params)
    }
}

impl SessionRpcRequest {
    /// Decodes a request object, moving its params rather than copying them; the same result
    /// and refusals as [`from_value`].
    ///
    /// # Errors
    ///
    /// As [`from_value`].
    pub fn from_map(map: serde_json::Map<String, Value>) -> Result<Self, ContractError> {
        from_map_moving(map, "params", |r: &mut Self, params| r.params = params)
    }

    /// The request object (the inverse of [`SessionRpcRequest::from_map`]), built without a
    /// serialisation pass.
    #[must_use]
    pub fn to_map(&self) -> serde_json::Map<String, Value> {
        let mut map = serde_json::Map::new();
        map.insert(
            "requestId".into(),
            Value::String(self.request_id.to_string()),
        );
        map.insert(
            "scope".into(),
            self.scope
                .as_ref()
                .map_or(Value::Null, crate::scalar::Scope::to_value),
        );
        map.insert("params".into(), Value::Object(self.params.clone()));
        map
    }
}

impl Payload for crate::scalar::Scope {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

impl Payload for crate::scalar::SchemaRef {
    fn validate(&self) -> Result<(), ContractError> {
        crate::scalar::SchemaRef::validate(self)
    }
}

impl Payload for TypedValue {
    fn validate(&self) -> Result<(), ContractError> {
        TypedValue::validate(self)
    }
}

/// A bare `RationalNs` document, as payload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct RationalDocument(pub RationalNs);

impl Payload for RationalDocument {
    fn validate(&self) -> Result<(), ContractError> {
        Ok(())
    }
}

/// A named payload type: how `flysim canon --type NAME` checks a document and which JSON Schema
/// `flysim schema NAME` prints.
#[derive(Clone, Copy)]
pub struct PayloadKind {
    /// The kebab-case name, e.g. `agent-prepare-params`.
    pub name: &'static str,
    /// Strict-parses, decodes and validates bytes; returns the validated value re-serialised.
    pub check: fn(&[u8]) -> Result<Value, ContractError>,
    /// As `check`, then the canonical JSON written from the typed value ([`to_canonical`]).
    pub canonical: fn(&[u8]) -> Result<String, ContractError>,
    /// The type's JSON Schema.
    pub schema: fn() -> schemars::Schema,
}

impl std::fmt::Debug for PayloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Builds the [`PayloadKind`] of a payload type.
#[macro_export]
macro_rules! payload_kind {
    ($ty:ty, $name:literal) => {
        $crate::payload::PayloadKind {
            name: $name,
            check: |bytes| {
                let v: $ty = $crate::payload::parse_payload(bytes)?;
                serde_json::to_value(&v).map_err(|e| $crate::ContractError::Shape {
                    path: String::new(),
                    message: e.to_string(),
                })
            },
            canonical: |bytes| {
                let v: $ty = $crate::payload::parse_payload(bytes)?;
                $crate::payload::to_canonical(&v)
            },
            schema: || schemars::schema_for!($ty),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::check::unique_by;
    use super::{to_canonical, with_canonical};
    use crate::digest::{payload_digest, sha256};

    /// A value whose `Serialize` hashes its child with [`payload_digest`] and writes the digest.
    struct Digesting(serde_json::Value);

    impl serde::Serialize for Digesting {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let digest = payload_digest(&self.0).map_err(serde::ser::Error::custom)?;
            serializer.serialize_str(&digest.hex())
        }
    }

    #[test]
    fn the_kept_text_serves_a_call_inside_a_call_and_the_next_call_whole() {
        let child = serde_json::json!({"b": [1, 2], "a": "x"});
        let child_digest = sha256(br#"{"a":"x","b":[1,2]}"#);
        let value = serde_json::json!({"k": 1});
        // The outer call takes the kept text; the `payload_digest` inside the value's
        // serialisation finds it taken and writes into a text of its own.
        let outer = with_canonical(&[Digesting(child.clone())], |text| text.to_owned()).unwrap();
        assert_eq!(outer, format!("[\"{}\"]", child_digest.hex()));
        // A longer text, then a shorter one: the kept text holds only the second.
        let long = with_canonical(&child, str::len).unwrap();
        assert_eq!(long, 19);
        assert_eq!(
            with_canonical(&value, str::to_owned).unwrap(),
            to_canonical(&value).unwrap()
        );
        assert_eq!(payload_digest(&child).unwrap(), child_digest);
    }

    #[test]
    fn a_repeat_is_named_at_its_second_occurrence_in_short_and_long_lists() {
        for len in [4usize, 16, 17, 40] {
            let mut items: Vec<u32> = (0..u32::try_from(len).unwrap()).collect();
            assert!(unique_by(&items, |i| i, "xs", "x").is_ok(), "{len}");
            // Two repeats: the earlier second occurrence is the one named.
            let last = items.len() - 1;
            items[last] = 0;
            items[last - 1] = 1;
            let e = unique_by(&items, |i| i, "xs", "x").unwrap_err();
            assert_eq!(
                e.to_string(),
                super::ContractError::rule(format!("xs[{}]", last - 1), "x `1` appears twice")
                    .to_string(),
                "{len}"
            );
        }
    }
}
