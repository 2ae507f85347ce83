//! [`AppliedControls`]: a step result's `appliedControlsDigest` as this process holds it.
//!
//! On the wire the field is a digest. On the in-memory lane the environment answers with the
//! very controls it applied, shared with the request (and so with the coordinator's batch): the
//! digest is then computed once, by whoever needs it first, which is the row's finishing off the
//! step's path, and the coordinator's check that the environment applied its batch is that the
//! two are the same value. A result decoded from the bus holds the digest it carried.
//!
//! It knows nothing of lanes or rows: only how the one field is held, written and compared.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::PortControl;
use crate::error::ContractError;
use crate::hashed::Hashed;
use crate::scalar::Digest;

/// A batch's controls as the request and the batch share them: their digest is kept beside them
/// once computed.
pub type SharedControls = Arc<Hashed<Vec<PortControl>>>;

/// The controls an environment applied, by digest ([`super::StepResult`]).
#[derive(Debug, Clone)]
pub enum AppliedControls {
    /// The digest as it arrived (from the bus) or was given.
    Digest(Digest),
    /// The applied controls themselves, shared with the request: their digest is the field.
    Shared(SharedControls),
}

impl AppliedControls {
    /// The `appliedControlsDigest`.
    ///
    /// # Errors
    ///
    /// When canonical JSON cannot hold the shared controls.
    pub fn digest(&self) -> Result<Digest, ContractError> {
        match self {
            Self::Digest(digest) => Ok(*digest),
            Self::Shared(controls) => controls.digest(),
        }
    }

    /// Whether these are the controls `batch` holds: the same shared value without hashing, or
    /// the same digest.
    ///
    /// # Errors
    ///
    /// When a digest has to be computed and canonical JSON cannot hold the controls.
    pub fn are(&self, batch: &SharedControls) -> Result<bool, ContractError> {
        match self {
            Self::Shared(controls) if Arc::ptr_eq(controls, batch) => Ok(true),
            _ => Ok(self.digest()? == batch.digest()?),
        }
    }
}

impl PartialEq for AppliedControls {
    /// The same shared value, or the same digest; a digest that cannot be computed equals
    /// nothing.
    fn eq(&self, other: &Self) -> bool {
        if let (Self::Shared(a), Self::Shared(b)) = (self, other)
            && Arc::ptr_eq(a, b)
        {
            return true;
        }
        matches!((self.digest(), other.digest()), (Ok(a), Ok(b)) if a == b)
    }
}

impl Serialize for AppliedControls {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.digest()
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AppliedControls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Digest::deserialize(deserializer).map(Self::Digest)
    }
}

impl JsonSchema for AppliedControls {
    fn inline_schema() -> bool {
        Digest::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Digest::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        Digest::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Digest::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::{AppliedControls, SharedControls};
    use crate::digest::payload_digest;
    use crate::hashed::Hashed;
    use crate::workers::PortControl;

    fn controls(pressed: bool) -> SharedControls {
        let control: PortControl = serde_json::from_value(json!({
            "portId": "p1",
            "buttons": [{"id": "a", "down": pressed}],
            "axes": [],
        }))
        .unwrap();
        Arc::new(Hashed::new(vec![control]))
    }

    /// Shared controls are written as their digest, read back as that digest, and compare
    /// equal to it; other controls do not.
    #[test]
    fn shared_controls_travel_as_their_digest() {
        let (batch, other) = (controls(true), controls(false));
        let expected = payload_digest(&*batch.clone()).unwrap();
        let applied = AppliedControls::Shared(Arc::clone(&batch));
        let text = serde_json::to_string(&applied).unwrap();
        assert_eq!(text, format!("\"{expected}\""));
        let decoded: AppliedControls = serde_json::from_str(&text).unwrap();
        assert!(matches!(decoded, AppliedControls::Digest(d) if d == expected));
        assert_eq!(decoded, applied);
        assert!(decoded.are(&batch).unwrap());
        assert!(applied.are(&batch).unwrap());
        assert!(!decoded.are(&other).unwrap());
        assert!(
            !AppliedControls::Shared(Arc::clone(&other))
                .are(&batch)
                .unwrap()
        );
        assert_ne!(AppliedControls::Shared(other), applied);
    }

    /// The same shared value is recognised without hashing: its digest is still not computed.
    #[test]
    fn the_batch_itself_is_recognised_without_hashing() {
        let batch = controls(true);
        let applied = AppliedControls::Shared(Arc::clone(&batch));
        assert!(applied.are(&batch).unwrap());
        assert!(!batch.is_digested());
    }
}
