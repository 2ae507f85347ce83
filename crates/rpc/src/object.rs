//! Params and result objects, as JSON or typed, and the terminal outcome of a request.
//!
//! On the bus a method's params and result are JSON objects. On the local lane (contracts §3.11)
//! caller and worker share a process, so an [`Object`] may instead carry the typed value itself:
//! the worker takes it back by type ([`Object::parse`]) and the caller takes the typed result
//! the same way, with no JSON tree built, walked or dropped in between. Every rule still reads
//! the same bytes: a typed object's bus-identity check finds the member names its canonical
//! form would carry ([`Object::refuse_bus_identities`]), its body digest is that form written
//! straight from the value, byte for byte the canonical form of its JSON
//! ([`Object::body_digest`], asked for only when dedup compares two bodies), and anything that
//! leaves the process turns it into JSON first ([`Object::to_map`]).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use flysim_types::digest::{
    body_digest, body_digest_of_canonical, carries_bus_identity, refuse_bus_identities,
};
use flysim_types::payload::{Payload, from_value, to_canonical};
use flysim_types::workers::{Method, SessionRpcFailure, SessionRpcSuccess};
use flysim_types::{ContractError, Digest, DomainRequestId, Id, Scope};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A value that can travel typed on the local lane: it serialises to a JSON object.
pub trait TypedObject: Any + Send + Sync + fmt::Debug {
    /// The JSON object it stands for (what the bus would carry).
    ///
    /// # Errors
    ///
    /// A value that does not serialise to a JSON object.
    fn to_map(&self) -> Result<Map<String, Value>, ContractError>;
    /// Its RFC 8785 form, written straight from the value.
    ///
    /// # Errors
    ///
    /// A value canonical JSON cannot hold.
    fn canonical(&self) -> Result<String, ContractError>;
    /// Whether its canonical form names a bus identity at any depth, mostly found without
    /// writing that form ([`carries_bus_identity`]).
    ///
    /// # Errors
    ///
    /// A value canonical JSON cannot hold.
    fn carries_bus_identity(&self) -> Result<bool, ContractError>;
    /// The value, to be taken back by type.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Serialize + Any + Send + Sync + fmt::Debug> TypedObject for T {
    fn to_map(&self) -> Result<Map<String, Value>, ContractError> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(not_an_object(&other)),
            Err(e) => Err(ContractError::Shape {
                path: String::new(),
                message: e.to_string(),
            }),
        }
    }

    fn canonical(&self) -> Result<String, ContractError> {
        to_canonical(self)
    }

    fn carries_bus_identity(&self) -> Result<bool, ContractError> {
        carries_bus_identity(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A params or result value that is not a JSON object.
fn not_an_object(value: &Value) -> ContractError {
    ContractError::Shape {
        path: String::new(),
        message: format!("params and results are JSON objects, not {value}"),
    }
}

/// A typed value and, once asked for, whether it names a bus identity and its canonical form
/// (each found at most once however often the request is retried or checked). On the happy path
/// only the first is ever asked: the body digest that needs the text is computed only when a
/// second request meets the same dedup key ([`crate::dedup::Body`]).
#[derive(Debug)]
pub struct Typed {
    value: Box<dyn TypedObject>,
    carries: OnceLock<Result<bool, ContractError>>,
    canonical: OnceLock<Result<String, ContractError>>,
}

impl Typed {
    fn carries(&self) -> Result<bool, ContractError> {
        self.carries
            .get_or_init(|| self.value.carries_bus_identity())
            .clone()
    }

    fn canonical(&self) -> Result<&str, ContractError> {
        match self.canonical.get_or_init(|| self.value.canonical()) {
            Ok(text) => Ok(text),
            Err(e) => Err(e.clone()),
        }
    }
}

/// A params or result object: JSON, or on the local lane the typed value it stands for.
#[derive(Debug, Clone)]
pub enum Object {
    /// A JSON object (the bus's form).
    Json(Map<String, Value>),
    /// A typed value, shared between the caller's retries and the worker's reply cache.
    Typed(Arc<Typed>),
}

impl Default for Object {
    fn default() -> Self {
        Self::Json(Map::new())
    }
}

impl From<Map<String, Value>> for Object {
    fn from(map: Map<String, Value>) -> Self {
        Self::Json(map)
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Typed(a), Self::Typed(b)) if Arc::ptr_eq(a, b) => true,
            _ => matches!((self.to_map(), other.to_map()), (Ok(a), Ok(b)) if a == b),
        }
    }
}

impl Object {
    /// `value`, typed.
    #[must_use]
    pub fn typed<T: TypedObject>(value: T) -> Self {
        Self::Typed(Arc::new(Typed {
            value: Box::new(value),
            carries: OnceLock::new(),
            canonical: OnceLock::new(),
        }))
    }

    /// Whether it carries a typed value.
    #[must_use]
    pub fn is_typed(&self) -> bool {
        matches!(self, Self::Typed(_))
    }

    /// The JSON object (built from a typed value).
    ///
    /// # Errors
    ///
    /// A typed value that does not serialise to a JSON object.
    pub fn to_map(&self) -> Result<Map<String, Value>, ContractError> {
        match self {
            Self::Json(map) => Ok(map.clone()),
            Self::Typed(t) => t.value.to_map(),
        }
    }

    /// The JSON object, moved out when it is one.
    ///
    /// # Errors
    ///
    /// As [`Object::to_map`].
    pub fn into_map(self) -> Result<Map<String, Value>, ContractError> {
        match self {
            Self::Json(map) => Ok(map),
            Self::Typed(t) => t.value.to_map(),
        }
    }

    /// The typed value, if it is one of type `T`.
    #[must_use]
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        match self {
            Self::Typed(t) => t.value.as_any().downcast_ref(),
            Self::Json(_) => None,
        }
    }

    /// Refuses a bus identity at any depth, as [`refuse_bus_identities`] does on the JSON.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] naming the first one's path.
    pub fn refuse_bus_identities(&self) -> Result<(), ContractError> {
        match self {
            Self::Json(map) => refuse_bus_identities(map),
            Self::Typed(t) => {
                if t.carries()? {
                    // Rare: the JSON names the path.
                    refuse_bus_identities(&t.value.to_map()?)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The domain body digest of a request with these params (contracts §2.4), the same for
    /// the typed value as for its JSON.
    ///
    /// # Errors
    ///
    /// A bus identity in the params, or params canonical JSON cannot hold.
    pub fn body_digest(
        &self,
        method: Method,
        scope: Option<&Scope>,
    ) -> Result<Digest, ContractError> {
        let method = method.as_str();
        match self {
            Self::Json(map) => body_digest(method, scope, map),
            Self::Typed(t) => {
                self.refuse_bus_identities()?;
                Ok(body_digest_of_canonical(method, scope, t.canonical()?))
            }
        }
    }

    /// Params as payload `T`: a typed `T` is cloned and validated, anything else decoded from
    /// its JSON (strict shape, scalars, then the same validation).
    ///
    /// # Errors
    ///
    /// What decoding or [`Payload::validate`] refuses.
    pub fn parse_payload<T: Payload + Clone + Any>(self) -> Result<T, ContractError> {
        if let Some(value) = self.downcast_ref::<T>() {
            value.validate()?;
            return Ok(value.clone());
        }
        from_value(Value::Object(self.into_map()?))
    }

    /// A result as `T`: a typed `T` is cloned, anything else decoded from its JSON.
    ///
    /// # Errors
    ///
    /// What decoding refuses.
    pub fn parse<T: DeserializeOwned + Clone + Any>(self) -> Result<T, serde_json::Error> {
        if let Some(value) = self.downcast_ref::<T>() {
            return Ok(value.clone());
        }
        let map = self.into_map().map_err(serde::de::Error::custom)?;
        serde_json::from_value(Value::Object(map))
    }
}

/// A terminal reply carrying a method's result: a `SessionRpcSuccess` whose result may be typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    /// The request this answers.
    pub request_id: DomainRequestId,
    /// The answering worker.
    pub worker_id: Id,
    /// Its bus incarnation.
    pub incarnation_id: Id,
    /// The request's scope, echoed.
    pub scope: Option<Scope>,
    /// The result object.
    pub result: Object,
}

impl From<SessionRpcSuccess> for Success {
    fn from(s: SessionRpcSuccess) -> Self {
        Self {
            request_id: s.request_id,
            worker_id: s.worker_id,
            incarnation_id: s.incarnation_id,
            scope: s.scope,
            result: Object::Json(s.result),
        }
    }
}

/// A terminal domain reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The method's result.
    Success(Success),
    /// The method's failure.
    Failure(SessionRpcFailure),
}

impl Outcome {
    /// The `SessionRpcSuccess` or `SessionRpcFailure` object the bus carries.
    ///
    /// # Errors
    ///
    /// A typed result that does not serialise to a JSON object.
    pub fn to_map(&self) -> Result<Map<String, Value>, ContractError> {
        match self {
            Self::Success(s) => {
                // What serialising a `SessionRpcSuccess` gives, built around the result.
                let mut map = Map::new();
                map.insert("type".into(), Value::String("result".into()));
                map.insert("requestId".into(), Value::String(s.request_id.to_string()));
                map.insert("workerId".into(), Value::String(s.worker_id.to_string()));
                map.insert(
                    "incarnationId".into(),
                    Value::String(s.incarnation_id.to_string()),
                );
                map.insert(
                    "scope".into(),
                    s.scope.as_ref().map_or(Value::Null, Scope::to_value),
                );
                map.insert("result".into(), Value::Object(s.result.to_map()?));
                Ok(map)
            }
            Self::Failure(f) => f.to_map(),
        }
    }

    /// Decodes the object a bus reply carries.
    ///
    /// # Errors
    ///
    /// A `type` other than `result` or `error`, or a malformed object.
    pub fn from_map(outcome: Map<String, Value>) -> Result<Self, ContractError> {
        match outcome.get("type").and_then(Value::as_str) {
            Some("result") => Ok(Self::Success(SessionRpcSuccess::from_map(outcome)?.into())),
            Some("error") => Ok(Self::Failure(from_value(Value::Object(outcome))?)),
            other => Err(ContractError::Shape {
                path: "type".into(),
                message: format!("`type` is {other:?}, expected \"result\" or \"error\""),
            }),
        }
    }

    /// The request id, worker, incarnation and scope it names.
    #[must_use]
    pub fn header(&self) -> (DomainRequestId, &Id, &Id, &Option<Scope>) {
        match self {
            Self::Success(s) => (s.request_id, &s.worker_id, &s.incarnation_id, &s.scope),
            Self::Failure(f) => (f.request_id, &f.worker_id, &f.incarnation_id, &f.scope),
        }
    }
}

#[cfg(test)]
mod tests {
    use flysim_types::workers::{AcknowledgeParams, PrepareParams, Stimulus};
    use flysim_types::{RationalNs, SchemaRef, TypedValue, U64};
    use serde_json::json;

    use super::*;

    fn scope() -> Scope {
        Scope {
            session_id: Id::parse("s").unwrap(),
            epoch: Id::parse("e1").unwrap(),
            step: U64(7),
        }
    }

    /// A value with a free-form map inside (where a bus identity could hide).
    #[derive(Debug, Clone, Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Carrier {
        agent_id: Id,
        context: TypedValue,
        notes: Vec<String>,
    }

    fn carrier(value: Value, notes: &[&str]) -> Carrier {
        Carrier {
            agent_id: Id::parse("fly-a").unwrap(),
            context: TypedValue {
                schema: SchemaRef {
                    id: Id::parse("ctx").unwrap(),
                    version: 1,
                    digest: Digest::from_bytes([7; 32]),
                },
                value: value.as_object().unwrap().clone(),
            },
            notes: notes.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    fn prepare() -> PrepareParams {
        PrepareParams {
            agent_id: Id::parse("fly-a").unwrap(),
            profile_digest: Digest::from_bytes([1; 32]),
            interval: RationalNs::MILLISECOND,
            decision_context_digest: Digest::from_bytes([2; 32]),
            pre_step_stimulations: Vec::<Stimulus>::new(),
        }
    }

    #[test]
    fn a_typed_body_has_the_digest_of_its_json() {
        let values = [
            Object::typed(prepare()),
            Object::typed(carrier(
                json!({"b": [1, 2.5, "é\u{1f600}"], "a": {"z": null, "y": true}}),
                &["x", "quote \" and \\ backslash"],
            )),
        ];
        for typed in values {
            let json = Object::Json(typed.to_map().unwrap());
            for scope in [None, Some(scope())] {
                assert_eq!(
                    typed
                        .body_digest(Method::AgentPrepare, scope.as_ref())
                        .unwrap(),
                    json.body_digest(Method::AgentPrepare, scope.as_ref())
                        .unwrap(),
                );
            }
            assert_ne!(
                typed.body_digest(Method::AgentPrepare, None).unwrap(),
                typed.body_digest(Method::AgentCommit, None).unwrap(),
            );
        }
    }

    #[test]
    fn a_bus_identity_is_refused_wherever_the_json_refuses_it_and_only_there() {
        let cases = [
            (json!({"callId": "c-1"}), &[][..], true),
            (json!({"deep": [{"ownerId": 1}]}), &[][..], true),
            (json!({"x": {"expectedIncarnation": null}}), &[][..], true),
            (json!({"deliveryIds": 1, "xcallId": 2}), &[][..], false),
            (json!({"note": "{\"callId\":1}"}), &[][..], false),
            (
                json!({"note": ",\"ownerId\":"}),
                &[",\"ownerId\":"][..],
                false,
            ),
            (json!({}), &["callId", "{\"callId\":\"c\"}"][..], false),
        ];
        for (value, notes, refused) in cases {
            let typed = Object::typed(carrier(value.clone(), notes));
            let json = Object::Json(typed.to_map().unwrap());
            let (t, j) = (typed.refuse_bus_identities(), json.refuse_bus_identities());
            assert_eq!(t.is_err(), refused, "{value} {notes:?}");
            assert_eq!(t, j, "{value} {notes:?}");
            assert_eq!(
                typed.body_digest(Method::AgentCommit, None).is_err(),
                refused,
                "{value}"
            );
        }
    }

    #[test]
    fn typed_params_are_validated_and_another_type_is_decoded_from_json() {
        let empty = Object::typed(AcknowledgeParams {
            request_ids: Vec::new(),
        });
        let refused = empty.parse_payload::<AcknowledgeParams>().unwrap_err();
        assert!(refused.to_string().contains("requestIds"), "{refused}");

        let typed = Object::typed(prepare());
        assert_eq!(
            typed.clone().parse_payload::<PrepareParams>().unwrap(),
            prepare()
        );
        // Not an AcknowledgeParams: decoded from the JSON, which refuses its fields.
        assert!(typed.parse_payload::<AcknowledgeParams>().is_err());
        let json = Object::Json(Object::typed(prepare()).to_map().unwrap());
        assert_eq!(json.parse_payload::<PrepareParams>().unwrap(), prepare());
    }

    #[test]
    fn an_outcome_survives_the_bus_form() {
        let success = Outcome::Success(Success {
            request_id: DomainRequestId(3),
            worker_id: Id::parse("fly-a").unwrap(),
            incarnation_id: Id::parse("inc-1").unwrap(),
            scope: Some(scope()),
            result: Object::typed(prepare()),
        });
        let back = Outcome::from_map(success.to_map().unwrap()).unwrap();
        assert_eq!(back, success);
        let Outcome::Success(s) = back else {
            panic!("{back:?}")
        };
        assert!(!s.result.is_typed());
        assert_eq!(s.result.parse::<PrepareParams>().unwrap(), prepare());
        let mut odd = success.to_map().unwrap();
        odd.insert("type".into(), json!("reply"));
        assert!(Outcome::from_map(odd).is_err());
    }

    #[test]
    fn a_typed_value_that_is_no_json_object_is_refused_never_sent_empty() {
        let number = Object::typed(7_u32);
        let refused = number.to_map().unwrap_err();
        assert!(refused.to_string().contains("not 7"), "{refused}");
        assert!(number.clone().parse_payload::<PrepareParams>().is_err());
        assert_ne!(
            number,
            Object::Json(Map::new()),
            "not equal to an empty object"
        );
    }
}
