//! The scalar types of the contract (contracts §2.1): `Id`, `U64`, `Digest`, `SchemaRef`,
//! `TypedValue`, `Scope` and the four identity spellings.
//!
//! Each type can only hold a valid value: constructors check the rule, and `Deserialize` goes
//! through the same constructor. A deserialisation failure carries the code of the broken rule
//! at the front of its message (`FS0101: ...`), which [`crate::payload`] turns back into the
//! typed [`ContractError`] with its field path.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use crate::error::ContractError;
use crate::json;
use crate::limits::{MAX_SCHEMA_VERSION, MAX_TYPED_VALUE_BYTES};

/// Implements `Display`, `Serialize`, `Deserialize` (via `parse`) and a string `JsonSchema`
/// with a pattern for a string newtype.
macro_rules! string_scalar {
    ($ty:ident, $schema_name:expr, $pattern:literal, $description:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.as_str())
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct(STRING_SCALAR, &Spelled(|| self.as_str()))
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $ty::parse(&text).map_err(coded)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                $schema_name.into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": $description,
                })
            }
        }
        impl std::str::FromStr for $ty {
            type Err = ContractError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $ty::parse(s)
            }
        }
    };
}

/// The newtype name a string scalar (`Id`, `U64`, `Digest`, the identity spellings) serialises
/// its text under. Every serializer here, and serde_json's, writes a newtype as its content, so
/// the JSON is the text; the bus-identity scan ([`crate::json::scan`]), which needs no text, sees
/// the name and skips the spelling (a digest's hex, a number's digits): a string names no member
/// and is always written.
pub(crate) const STRING_SCALAR: &str = "flysim.string-scalar";

/// A string scalar's text, spelled only when a serializer asks for it.
struct Spelled<F>(F);

impl<F, T> Serialize for Spelled<F>
where
    F: Fn() -> T,
    T: std::ops::Deref<Target = str>,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&(self.0)())
    }
}

/// A scalar's text formatted on the stack: serialising or printing a `U64`, a spelled id or a
/// digest (every step writes dozens) allocates nothing.
struct StackText<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    /// `prefix` followed by the decimal digits of `n` (`N` has room for both).
    fn spelled(prefix: &str, n: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut text = Self {
            bytes: [0; N],
            len: 0,
        };
        text.push(prefix.as_bytes());
        text.push(crate::json::canonical::decimal(n, &mut digits));
        text
    }

    /// Lowercase hex of `bytes` (`N` is twice their length).
    fn hex(bytes: &[u8]) -> Self {
        let mut text = Self {
            bytes: [0; N],
            len: 0,
        };
        // Two digits at a time into place (a digest is spelled several times a step).
        for (pair, b) in text.bytes.chunks_exact_mut(2).zip(bytes) {
            let [high, low] = crate::digest::hex_pair(*b);
            pair[0] = high;
            pair[1] = low;
        }
        text.len = (2 * bytes.len()).min(N - N % 2);
        text
    }

    fn push(&mut self, part: &[u8]) {
        let end = (self.len + part.len()).min(N);
        self.bytes[self.len..end].copy_from_slice(&part[..end - self.len]);
        self.len = end;
    }
}

impl<const N: usize> std::ops::Deref for StackText<N> {
    type Target = str;

    fn deref(&self) -> &str {
        // Only ASCII was written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// Wraps a contract error as a serde error whose message starts with its code.
pub(crate) fn coded<E: de::Error>(e: ContractError) -> E {
    E::custom(format_args!("{}: {e}", e.code_str()))
}

/// A stable identifier: 1 to 64 characters of `[a-z0-9._-]`, the first a letter or digit.
///
/// Shared text: ids are cloned into every request, scope, reply and row of every step, and a
/// clone is a reference count, not an allocation. Equality, order and hashing are the text's;
/// two clones of one id compare without reading their text. (`Arc`'s own equality compares the
/// pointers first only for a sized content, not for `str`: hence the impls below.)
#[derive(Debug, Clone)]
pub struct Id(std::sync::Arc<str>);

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

// By the text, as equality.
impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Eq for Id {}

impl Ord for Id {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if std::sync::Arc::ptr_eq(&self.0, &other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Id {
    /// Longest `Id`, in characters.
    pub const MAX_LEN: usize = 64;

    /// Checks `text` against the `Id` rule.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidId`] naming the broken part of the rule.
    pub fn parse(text: &str) -> Result<Self, ContractError> {
        match Self::broken_rule(text) {
            None => Ok(Self(std::sync::Arc::from(text))),
            Some(reason) => Err(ContractError::InvalidId {
                path: String::new(),
                value: text.to_owned(),
                reason,
            }),
        }
    }

    /// Whether `text` is an `Id` ([`Id::parse`] without making one).
    #[must_use]
    pub fn is_valid(text: &str) -> bool {
        Self::broken_rule(text).is_none()
    }

    /// The part of the `Id` rule `text` breaks, if any.
    fn broken_rule(text: &str) -> Option<&'static str> {
        if text.is_empty() {
            Some("it is empty")
        } else if text.len() > Self::MAX_LEN {
            Some("it is longer than 64 characters")
        } else if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Some("it contains an uppercase letter")
        } else if !text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        {
            Some("it contains a character outside a-z, 0-9, `.`, `_`, `-`")
        } else if !text.as_bytes()[0].is_ascii_alphanumeric() {
            Some("it does not start with a letter or digit")
        } else {
            None
        }
    }

    /// The identifier text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// An `Id` the code itself spells as a literal (`"router"`, `"idle"`).
    ///
    /// # Panics
    ///
    /// When the literal is not an `Id`: a programming error that the first test run exposes,
    /// never a property of input.
    #[must_use]
    pub fn from_static(text: &'static str) -> Self {
        match Self::parse(text) {
            Ok(id) => id,
            Err(e) => panic!("`{text}` is not an Id literal: {e}"),
        }
    }
}

string_scalar!(
    Id,
    "Id",
    "^[a-z0-9][a-z0-9._-]{0,63}$",
    "A stable identifier (contracts §2.1)."
);

/// An unsigned 64-bit integer written as a canonical decimal JSON string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct U64(pub u64);

impl U64 {
    /// Parses a canonical decimal: `0`, or digits without a leading zero, at most `u64::MAX`.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidU64`] naming the broken part of the rule.
    pub fn parse(text: &str) -> Result<Self, ContractError> {
        let refuse = |reason| ContractError::InvalidU64 {
            path: String::new(),
            value: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(refuse("it is empty"));
        }
        if !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refuse(
                "only the digits 0-9 are allowed (no sign, space, exponent or hex)",
            ));
        }
        if text.len() > 1 && text.starts_with('0') {
            return Err(refuse("it has a leading zero"));
        }
        text.parse::<u64>()
            .map(Self)
            .map_err(|_| refuse("it exceeds 18446744073709551615"))
    }

    /// The value.
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }

    fn as_string(self) -> StackText<20> {
        StackText::spelled("", self.0)
    }

    /// Appends the decimal digits to `text`, without the formatting machinery: ids spelled
    /// `<prefix>-<n>` are made this way on every step.
    pub fn push_to(self, text: &mut String) {
        crate::json::canonical::put_integer(self.0, false, text);
    }
}

impl fmt::Display for U64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl Serialize for U64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(STRING_SCALAR, &Spelled(|| self.as_string()))
    }
}
impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a U64 decimal string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<U64, E> {
                U64::parse(v).map_err(coded)
            }
        }
        d.deserialize_str(Visitor)
    }
}
impl JsonSchema for U64 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "U64".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(0|[1-9][0-9]*)$",
            "maxLength": 20,
            "description": "An unsigned 64-bit integer as a canonical decimal string (at most 18446744073709551615).",
        })
    }
}
impl std::str::FromStr for U64 {
    type Err = ContractError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A SHA-256 digest as 64 lowercase hexadecimal characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// Parses 64 lowercase hex characters.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidDigest`].
    pub fn parse(text: &str) -> Result<Self, ContractError> {
        let refuse = |reason| ContractError::InvalidDigest {
            path: String::new(),
            value: text.to_owned(),
            reason,
        };
        if text.len() != 64 {
            return Err(refuse("it is not exactly 64 characters"));
        }
        let mut bytes = [0u8; 32];
        if !crate::digest::parse_lower_hex_into(text, &mut bytes) {
            return Err(refuse("only lowercase hexadecimal digits are allowed"));
        }
        Ok(Self(bytes))
    }

    /// Wraps raw digest bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw 32 bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64-character lowercase hex form.
    #[must_use]
    pub fn hex(&self) -> String {
        crate::digest::lower_hex(&self.0)
    }

    /// The hex form, on the stack.
    fn as_str(&self) -> StackText<64> {
        StackText::hex(&self.0)
    }
}

string_scalar!(
    Digest,
    "Digest",
    "^[0-9a-f]{64}$",
    "A SHA-256 digest in lowercase hex."
);

/// Declares an identity spelling `<prefix>-<U64>`.
macro_rules! spelled_id {
    ($(#[$doc:meta])* $ty:ident, $prefix:literal, $expected:literal, $pattern:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $ty(pub u64);

        impl $ty {
            /// Parses the spelling.
            ///
            /// # Errors
            ///
            /// [`ContractError::InvalidIdSpelling`] for any other spelling.
            pub fn parse(text: &str) -> Result<Self, ContractError> {
                text.strip_prefix(concat!($prefix, "-"))
                    .and_then(|n| U64::parse(n).ok())
                    .map(|n| Self(n.0))
                    .ok_or_else(|| ContractError::InvalidIdSpelling {
                        path: String::new(),
                        value: text.to_owned(),
                        expected: $expected,
                    })
            }

            fn as_str(&self) -> StackText<32> {
                StackText::spelled(concat!($prefix, "-"), self.0)
            }
        }

        string_scalar!($ty, stringify!($ty), $pattern, $expected);
    };
}

spelled_id!(
    /// A bus call id, `call-<U64>`.
    BusCallId, "call", "bus call id (call-<U64>)", "^call-(0|[1-9][0-9]*)$"
);
spelled_id!(
    /// A domain request id, `req-<U64>`.
    DomainRequestId, "req", "domain request id (req-<U64>)", "^req-(0|[1-9][0-9]*)$"
);
spelled_id!(
    /// A delivery owner token, `dlv-<U64>`.
    DeliveryToken, "dlv", "delivery token (dlv-<U64>)", "^dlv-(0|[1-9][0-9]*)$"
);
spelled_id!(
    /// A hold or writer owner token, `own-<U64>`.
    HoldToken, "own", "hold token (own-<U64>)", "^own-(0|[1-9][0-9]*)$"
);

/// An owner token: a delivery (`dlv-`) or a hold (`own-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OwnerToken {
    /// A delivery's token.
    Delivery(DeliveryToken),
    /// An explicit hold's or writer's token.
    Hold(HoldToken),
}

impl OwnerToken {
    /// Parses `dlv-<U64>` or `own-<U64>`.
    ///
    /// # Errors
    ///
    /// [`ContractError::InvalidIdSpelling`].
    pub fn parse(text: &str) -> Result<Self, ContractError> {
        DeliveryToken::parse(text)
            .map(Self::Delivery)
            .or_else(|_| HoldToken::parse(text).map(Self::Hold))
            .map_err(|_| ContractError::InvalidIdSpelling {
                path: String::new(),
                value: text.to_owned(),
                expected: "owner token (dlv-<U64> or own-<U64>)",
            })
    }

    fn as_str(&self) -> StackText<32> {
        match self {
            Self::Delivery(d) => d.as_str(),
            Self::Hold(h) => h.as_str(),
        }
    }
}

string_scalar!(
    OwnerToken,
    "OwnerToken",
    "^(dlv|own)-(0|[1-9][0-9]*)$",
    "owner token (dlv-<U64> or own-<U64>)"
);

/// A reference to a registered payload schema.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchemaRef {
    /// The schema's id.
    pub id: Id,
    /// Its version, 1..=65535.
    #[schemars(range(min = 1, max = 65535))]
    pub version: u32,
    /// The digest of its canonical declaration.
    pub digest: Digest,
}

serialize_in_key_order!(SchemaRef {
    "digest" => digest,
    "id" => id,
    "version" => version,
});

impl SchemaRef {
    /// Checks the version range.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at `version`.
    pub fn validate(&self) -> Result<(), ContractError> {
        if self.version == 0 || self.version > MAX_SCHEMA_VERSION {
            return Err(ContractError::rule(
                "version",
                "a schema version is between 1 and 65535",
            ));
        }
        Ok(())
    }
}

/// A value tagged with the schema it conforms to; its canonical JSON is at most 32 KiB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypedValue {
    /// The schema of `value`.
    pub schema: SchemaRef,
    /// The value: always a JSON object.
    pub value: serde_json::Map<String, serde_json::Value>,
}

impl TypedValue {
    /// Checks the schema reference and the canonical size limit.
    ///
    /// # Errors
    ///
    /// [`ContractError::TypedValueTooLarge`], or the schema reference's refusal.
    pub fn validate(&self) -> Result<(), ContractError> {
        self.schema.validate().map_err(|e| e.under("schema"))?;
        // Nearly every value is far under the limit even if each byte of its strings needed
        // an escape: then its exact length is not counted (that walks every byte).
        if self.canonical_len_bound()? <= MAX_TYPED_VALUE_BYTES {
            return Ok(());
        }
        let bytes = self.canonical_len()?;
        if bytes > MAX_TYPED_VALUE_BYTES {
            return Err(ContractError::TypedValueTooLarge {
                path: String::new(),
                bytes,
                limit: MAX_TYPED_VALUE_BYTES,
            });
        }
        Ok(())
    }

    /// The length of this value's canonical JSON.
    ///
    /// # Errors
    ///
    /// A [`ContractError::Json`] if the value holds an integer canonical JSON cannot represent.
    pub fn canonical_len(&self) -> Result<usize, ContractError> {
        let value = json::canonical::object_len(&self.value)?;
        Ok(self.envelope_len() + value)
    }

    /// At least [`TypedValue::canonical_len`]: strings counted as if every byte needed a
    /// six-byte escape, in time that does not grow with their length. Refuses what
    /// `canonical_len` refuses.
    fn canonical_len_bound(&self) -> Result<usize, ContractError> {
        let value = json::canonical::object_len_bound(&self.value)?;
        Ok(self.envelope_len().saturating_add(value))
    }

    /// `{"schema":<schema>,"value":}` around the value, exactly.
    fn envelope_len(&self) -> usize {
        // `{"digest":"<64 hex>","id":"<id>","version":<n>}`: an Id never needs an escape.
        let schema = r#"{"digest":"","id":"","version":}"#.len()
            + 64
            + self.schema.id.as_str().len()
            + self.schema.version.to_string().len();
        r#"{"schema":,"value":}"#.len() + schema
    }
}

/// Where a session request applies: a session, an epoch within it, and a step.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scope {
    /// The session.
    pub session_id: Id,
    /// The epoch within the session.
    pub epoch: Id,
    /// The step (committed boundary the request departs from).
    pub step: U64,
}

impl Scope {
    /// The scope as a JSON value (what serialising it gives), built directly.
    #[must_use]
    pub fn to_value(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        map.insert(
            "sessionId".into(),
            serde_json::Value::String(self.session_id.to_string()),
        );
        map.insert(
            "epoch".into(),
            serde_json::Value::String(self.epoch.to_string()),
        );
        map.insert(
            "step".into(),
            serde_json::Value::String(self.step.to_string()),
        );
        serde_json::Value::Object(map)
    }
}
