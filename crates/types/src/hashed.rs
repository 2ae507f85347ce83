//! [`Hashed`]: a payload field whose contract digest is computed at most once, by whoever needs
//! it first, and then travels with the value.
//!
//! Some values are digested on both sides of a call: the coordinator writes a batch's
//! `controlDigest` and the environment answers the `appliedControlsDigest` of the same controls;
//! the coordinator records a next decision context's digest and the agent answers the
//! `decisionContextDigest` of the context it adopted. On the in-memory lane both sides hold the
//! very same value (the params travel in one `Arc`), so the second digest would hash the same
//! bytes again. A `Hashed` value keeps the digest it computed beside the value; the value cannot
//! be changed after construction (there is no mutable access), so the digest kept is always the
//! digest of the value held. A value decoded from the bus is a new `Hashed` with no digest yet:
//! the receiving side computes its own from what arrived.
//!
//! Nothing else changes: a `Hashed<T>` serialises, deserialises and describes its schema exactly
//! as `T`, and two are equal when their values are.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ContractError;
use crate::Digest;
use crate::digest::payload_digest;

/// A value and, once asked for, its [`payload_digest`].
#[derive(Debug, Clone)]
pub struct Hashed<T> {
    value: T,
    digest: OnceLock<Digest>,
}

impl<T> Hashed<T> {
    /// Wraps a value; its digest is computed the first time [`Hashed::digest`] is called.
    pub const fn new(value: T) -> Self {
        Self {
            value,
            digest: OnceLock::new(),
        }
    }

    /// The value, to change: the digest kept (if any) is dropped, to be computed again from the
    /// changed value when next asked for.
    pub fn get_mut(&mut self) -> &mut T {
        self.digest.take();
        &mut self.value
    }

    /// Whether the digest has been computed.
    #[cfg(test)]
    pub(crate) fn is_digested(&self) -> bool {
        self.digest.get().is_some()
    }
}

impl<T: Serialize> Hashed<T> {
    /// The digest of the value's canonical JSON ([`payload_digest`]), computed on the first call
    /// and kept.
    ///
    /// # Errors
    ///
    /// When canonical JSON cannot hold the value (an unsafe integer); nothing is kept then.
    pub fn digest(&self) -> Result<Digest, ContractError> {
        if let Some(digest) = self.digest.get() {
            return Ok(*digest);
        }
        let digest = payload_digest(&self.value)?;
        Ok(*self.digest.get_or_init(|| digest))
    }
}

impl<T> std::ops::Deref for Hashed<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: PartialEq> PartialEq for Hashed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Hashed<T> {}

impl<T: Serialize> Serialize for Hashed<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Hashed<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Self::new)
    }
}

impl<T: JsonSchema> JsonSchema for Hashed<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_digest_is_the_payload_digest_computed_once_and_carried_by_clones() {
        let value = json!({"b": [1, 2], "a": "x"});
        let hashed = Hashed::new(value.clone());
        assert!(!hashed.is_digested());
        let expected = payload_digest(&value).unwrap();
        assert_eq!(hashed.digest().unwrap(), expected);
        assert!(hashed.is_digested());
        let copy = hashed.clone();
        assert!(
            copy.is_digested(),
            "a clone keeps the digest of the equal value"
        );
        assert_eq!(copy.digest().unwrap(), expected);
        let mut changed = copy;
        changed.get_mut()["b"][1] = json!(3);
        assert!(!changed.is_digested(), "a changed value drops its digest");
        assert_eq!(
            changed.digest().unwrap(),
            payload_digest(&json!({"b": [1, 3], "a": "x"})).unwrap()
        );
        assert_ne!(changed.digest().unwrap(), expected);
    }

    #[test]
    fn on_the_wire_and_in_the_schema_it_is_its_value() {
        let value = json!({"b": [1, 2], "a": "x"});
        let hashed = Hashed::new(value.clone());
        hashed.digest().unwrap();
        assert_eq!(serde_json::to_value(&hashed).unwrap(), value);
        let back: Hashed<serde_json::Value> = serde_json::from_value(value.clone()).unwrap();
        assert!(
            !back.is_digested(),
            "a decoded value is hashed by its receiver"
        );
        assert_eq!(back, hashed);
        assert_eq!(
            serde_json::to_value(schemars::schema_for!(Hashed<Vec<u32>>)).unwrap(),
            serde_json::to_value(schemars::schema_for!(Vec<u32>)).unwrap()
        );
    }

    #[test]
    fn a_value_canonical_json_cannot_hold_is_refused_and_nothing_is_kept() {
        let hashed = Hashed::new(u64::MAX);
        assert!(hashed.digest().is_err());
        assert!(!hashed.is_digested());
    }
}
