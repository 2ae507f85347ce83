//! The terminal outcome of a request: a method's typed result, or its domain failure.
//!
//! A result is a [`Results`] value wherever it is in a process (the worker's reply table, the
//! local lane, the caller); it becomes the JSON a `SessionRpcSuccess` carries only where a
//! reply goes onto the bus ([`Outcome::to_map`]) and is decoded, for the method the request
//! named, only where one comes off it ([`Outcome::from_map`]).

use std::sync::Arc;

use flysim_types::payload::from_value;
use flysim_types::workers::{Method, Results, SessionRpcFailure, SessionRpcSuccess};
use flysim_types::{ContractError, DomainRequestId, Id, Scope};
use serde_json::{Map, Value};

/// A terminal reply carrying a method's result: a `SessionRpcSuccess` with its result typed.
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
    /// The result, shared between the worker's reply table, its replays and the caller.
    pub result: Arc<Results>,
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
    /// A result serde cannot write as a JSON object (none of the contract's).
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
            Self::Failure(f) => match serde_json::to_value(f) {
                Ok(Value::Object(map)) => Ok(map),
                // A failure is a struct of strings and enums: serde writes it as an object.
                other => unreachable!("a SessionRpcFailure serialised as {other:?}"),
            },
        }
    }

    /// Decodes the object a bus reply to `method` carries, its result as that method's.
    ///
    /// # Errors
    ///
    /// A `type` other than `result` or `error`, or a malformed object or result.
    pub fn from_map(method: Method, outcome: Map<String, Value>) -> Result<Self, ContractError> {
        match outcome.get("type").and_then(Value::as_str) {
            Some("result") => {
                let s = SessionRpcSuccess::from_map(outcome)?;
                let result = Results::decode(method, s.result).map_err(|e| e.under("result"))?;
                Ok(Self::Success(Success {
                    request_id: s.request_id,
                    worker_id: s.worker_id,
                    incarnation_id: s.incarnation_id,
                    scope: s.scope,
                    result: Arc::new(result),
                }))
            }
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
    use flysim_types::workers::{AcknowledgeResult, ShutdownResult};
    use flysim_types::{U64, workers::FailureType};
    use serde_json::json;

    use super::*;

    fn success(result: Results) -> Outcome {
        Outcome::Success(Success {
            request_id: DomainRequestId(3),
            worker_id: Id::parse("fly-a").unwrap(),
            incarnation_id: Id::parse("inc-1").unwrap(),
            scope: Some(Scope {
                session_id: Id::parse("s").unwrap(),
                epoch: Id::parse("e1").unwrap(),
                step: U64(7),
            }),
            result: Arc::new(result),
        })
    }

    #[test]
    fn an_outcome_survives_the_bus_form_read_as_its_method() {
        let acknowledged = AcknowledgeResult {
            acknowledged: vec![DomainRequestId(1), DomainRequestId(2)],
        };
        let outcome = success(acknowledged.clone().into());
        let map = outcome.to_map().unwrap();
        assert_eq!(map["type"], "result");
        assert_eq!(map["result"], json!({"acknowledged": ["req-1", "req-2"]}));
        assert_eq!(map["scope"]["step"], "7");
        let back = Outcome::from_map(Method::WorkerAcknowledge, map.clone()).unwrap();
        assert_eq!(back, outcome);
        let Outcome::Success(s) = back else {
            panic!("{back:?}")
        };
        assert_eq!(*s.result, Results::WorkerAcknowledge(acknowledged));
        // The same reply read as another method's: its result is refused, named by its path.
        let refused = Outcome::from_map(Method::WorkerShutdown, map.clone()).unwrap_err();
        assert!(refused.to_string().contains("result"), "{refused}");
        let mut odd = map;
        odd.insert("type".into(), json!("reply"));
        assert!(Outcome::from_map(Method::WorkerAcknowledge, odd).is_err());
    }

    #[test]
    fn a_failure_survives_the_bus_form_whatever_the_method() {
        let failure = Outcome::Failure(SessionRpcFailure {
            kind: FailureType::Error,
            request_id: DomainRequestId(4),
            worker_id: Id::parse("fly-a").unwrap(),
            incarnation_id: Id::parse("inc-1").unwrap(),
            scope: None,
            error: flysim_types::workers::DomainError {
                code: flysim_types::workers::DomainErrorCode::Busy,
                message: "busy".into(),
                mutation: flysim_types::workers::Mutation::None,
            },
        });
        let map = failure.to_map().unwrap();
        assert_eq!(map["type"], "error");
        assert_eq!(map["error"]["code"], "BUSY");
        for method in [Method::WorkerShutdown, Method::AgentPrepare] {
            assert_eq!(Outcome::from_map(method, map.clone()).unwrap(), failure);
        }
        let shutdown = success(ShutdownResult { stopping: true }.into());
        assert_eq!(shutdown.header().0, DomainRequestId(3));
    }
}
