//! A session RPC call's params and result as one Rust value each: [`Params`] and [`Results`]
//! have a variant per [`Method`], holding that method's payload type, so the variant *is* the
//! method and no caller, lane or worker handles a payload as JSON or by downcast.
//!
//! JSON is their form only where bytes leave or enter a process: [`Params::to_map`] and
//! [`Results::to_map`] write what the bus carries (the payload's own serde form, unchanged),
//! [`Params::decode`] and [`Results::decode`] read it back strictly for the method the wire
//! names. Digests are taken from the value's canonical form
//! ([`crate::payload::to_canonical`]), which is byte for byte the canonical form of that JSON.
//!
//! It knows which payload belongs to which method; it does not know how calls travel.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::agent::{
    AgentCommitResult, AgentInitializeParams, AgentInitializeResult, CommitParams, PrepareParams,
    PreparedDecision,
};
use super::environment::{
    AdvanceParams, EnvironmentInitializeParams, EnvironmentInitializeResult, StepResult,
};
use super::method::Method;
use super::state::{
    ActivateRestoreParams, ActivateRestoreResult, CaptureParams, CaptureResult, StageRestoreParams,
    StageRestoreResult,
};
use super::worker::{
    AcknowledgeParams, AcknowledgeResult, HelloParams, HelloResult, ShutdownParams, ShutdownResult,
    StatusParams, StatusResult,
};
use crate::error::ContractError;
use crate::payload::{Payload, from_value};

/// A payload that is one method's params: found in, and wrapped as, a [`Params`].
pub trait ParamsOf: Payload + Into<Params> + 'static {
    /// The method these are the params of.
    const METHOD: Method;
    /// The payload, when `params` are this method's.
    fn of(params: &Params) -> Option<&Self>;
}

/// A payload that is one method's result: found in, and wrapped as, a [`Results`].
pub trait ResultOf: Payload + Into<Results> + 'static {
    /// The method this is the result of.
    const METHOD: Method;
    /// The payload, when `results` are this method's.
    fn of(results: &Results) -> Option<&Self>;
}

/// One JSON object from a payload's serde form.
fn object_of<T: Serialize + ?Sized>(value: &T) -> Result<Map<String, Value>, ContractError> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ContractError::Shape {
            path: String::new(),
            message: format!("params and results are JSON objects, not {other}"),
        }),
        Err(e) => Err(ContractError::Shape {
            path: String::new(),
            message: e.to_string(),
        }),
    }
}

macro_rules! calls {
    ($($method:ident: $params:ident => $result:ident in $stored:ty;)*) => {
        /// A call's params: the variant names the method, the value is its payload.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Params {
            $(
                #[doc = concat!("`", stringify!($params), "`.")]
                $method($params),
            )*
        }

        /// A call's result: the variant names the method, the value is its payload (boxed where
        /// it is large and comes once a run, so that the value every step moves stays small).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Results {
            $(
                #[doc = concat!("`", stringify!($result), "`.")]
                $method($stored),
            )*
        }

        impl Params {
            /// The method these are the params of.
            #[must_use]
            pub fn method(&self) -> Method {
                match self {
                    $(Self::$method(_) => Method::$method,)*
                }
            }

            /// Decodes the params object of a request for `method` (strict shape, scalars,
            /// then [`Payload::validate`]).
            ///
            /// # Errors
            ///
            /// The first refusal, with its field path.
            pub fn decode(method: Method, params: Map<String, Value>) -> Result<Self, ContractError> {
                let value = Value::Object(params);
                Ok(match method {
                    $(Method::$method => Self::$method(from_value(value)?),)*
                })
            }

            /// The contract's rules beyond shape, for params built in this process.
            ///
            /// # Errors
            ///
            /// The first rule broken.
            pub fn validate(&self) -> Result<(), ContractError> {
                match self {
                    $(Self::$method(p) => p.validate(),)*
                }
            }
        }

        impl Results {
            /// The method this is the result of.
            #[must_use]
            pub fn method(&self) -> Method {
                match self {
                    $(Self::$method(_) => Method::$method,)*
                }
            }

            /// Decodes the result object of a reply to `method` (strict shape, scalars, then
            /// [`Payload::validate`]).
            ///
            /// # Errors
            ///
            /// The first refusal, with its field path.
            pub fn decode(method: Method, result: Map<String, Value>) -> Result<Self, ContractError> {
                let value = Value::Object(result);
                Ok(match method {
                    $(Method::$method => Self::$method(from_value::<$result>(value)?.into()),)*
                })
            }
        }

        impl Serialize for Params {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$method(p) => p.serialize(serializer),)*
                }
            }
        }

        impl Serialize for Results {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$method(r) => r.serialize(serializer),)*
                }
            }
        }

        $(
            impl From<$params> for Params {
                fn from(params: $params) -> Self {
                    Self::$method(params)
                }
            }

            impl ParamsOf for $params {
                const METHOD: Method = Method::$method;
                fn of(params: &Params) -> Option<&Self> {
                    match params {
                        Params::$method(p) => Some(p),
                        #[allow(unreachable_patterns, reason = "one arm per method")]
                        _ => None,
                    }
                }
            }

            impl From<$result> for Results {
                fn from(result: $result) -> Self {
                    Self::$method(result.into())
                }
            }

            impl ResultOf for $result {
                const METHOD: Method = Method::$method;
                fn of(results: &Results) -> Option<&Self> {
                    match results {
                        Results::$method(r) => Some(std::borrow::Borrow::borrow(r)),
                        #[allow(unreachable_patterns, reason = "one arm per method")]
                        _ => None,
                    }
                }
            }
        )*
    };
}

// `method: params => result in how the result is stored`. A result is moved through every
// layer of a call (the worker's dispatch, the endpoint, its reply table), so `Results` is as
// large as its largest variant; results over about two cache lines that come once a run (hello,
// initialisation, restore) are boxed, and every step's fit inline (`results_stay_small`).
calls! {
    WorkerHello: HelloParams => HelloResult in Box<HelloResult>;
    WorkerStatus: StatusParams => StatusResult in StatusResult;
    WorkerAcknowledge: AcknowledgeParams => AcknowledgeResult in AcknowledgeResult;
    WorkerShutdown: ShutdownParams => ShutdownResult in ShutdownResult;
    AgentInitialize: AgentInitializeParams => AgentInitializeResult in Box<AgentInitializeResult>;
    AgentPrepare: PrepareParams => PreparedDecision in PreparedDecision;
    AgentCommit: CommitParams => AgentCommitResult in AgentCommitResult;
    EnvironmentInitialize: EnvironmentInitializeParams => EnvironmentInitializeResult
        in Box<EnvironmentInitializeResult>;
    EnvironmentAdvance: AdvanceParams => StepResult in StepResult;
    StateCapture: CaptureParams => CaptureResult in CaptureResult;
    StateStageRestore: StageRestoreParams => StageRestoreResult in StageRestoreResult;
    StateActivateRestore: ActivateRestoreParams => ActivateRestoreResult
        in Box<ActivateRestoreResult>;
}

impl Params {
    /// The JSON object a bus request carries as its `params`.
    ///
    /// # Errors
    ///
    /// A payload serde cannot write as a JSON object (none of the contract's).
    pub fn to_map(&self) -> Result<Map<String, Value>, ContractError> {
        object_of(self)
    }
}

impl Results {
    /// The JSON object a bus reply carries as its `result`.
    ///
    /// # Errors
    ///
    /// A payload serde cannot write as a JSON object (none of the contract's).
    pub fn to_map(&self) -> Result<Map<String, Value>, ContractError> {
        object_of(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every call moves its result through the worker's dispatch, the endpoint and its reply
    /// table: a result of every step fits in three cache lines, and a large one that comes once a
    /// run is boxed, not laid inline in every step's value.
    #[test]
    fn results_stay_small() {
        let size = std::mem::size_of::<Results>();
        assert!(size <= 192, "Results is {size} bytes");
        assert!(
            std::mem::size_of::<EnvironmentInitializeResult>() > 192,
            "the boxed variants are the large ones"
        );
    }

    #[test]
    fn every_method_has_its_own_payloads_and_the_wire_form_decodes_back() {
        let params = Params::from(AcknowledgeParams {
            request_ids: vec![crate::DomainRequestId(4)],
        });
        assert_eq!(params.method(), Method::WorkerAcknowledge);
        let map = params.to_map().unwrap();
        assert_eq!(
            Value::Object(map.clone()),
            serde_json::json!({"requestIds": ["req-4"]})
        );
        assert_eq!(
            Params::decode(Method::WorkerAcknowledge, map.clone()).unwrap(),
            params
        );
        // The same object read as another method's params is refused, never misread.
        assert!(Params::decode(Method::WorkerShutdown, map).is_err());
        assert!(AcknowledgeParams::of(&params).is_some());
        assert!(ShutdownParams::of(&params).is_none());

        let result = Results::from(ShutdownResult { stopping: true });
        assert_eq!(result.method(), Method::WorkerShutdown);
        let map = result.to_map().unwrap();
        assert_eq!(
            Results::decode(Method::WorkerShutdown, map.clone()).unwrap(),
            result
        );
        // Decoding validates: `stopping` must be true.
        let mut refused = map;
        refused.insert("stopping".into(), Value::Bool(false));
        assert!(Results::decode(Method::WorkerShutdown, refused).is_err());
    }
}
