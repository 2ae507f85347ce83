//! Session RPC over Flybus (contracts §4): domain request ids, operation keys, result caches for
//! the current and previous step, the `CONFLICT` / `IN_PROGRESS` / `RESULT_EXPIRED` /
//! `STALE_STEP` rules, `Worker.Acknowledge` retention, and the retry rule.
//!
//! - [`dedup`]: the worker-side table that decides execute, replay or refuse, before any phase
//!   check or artifact access.
//! - [`endpoint`]: serves bus requests through the table, caching replies with their artifacts.
//! - [`caller`]: the caller side: request ids, reply matching, and retries that resend the same
//!   request id and body under a new bus call id.
//! - [`local`]: the local lane to a worker in this process (contracts §3.11): the same endpoint
//!   without the bus round trip.
//! - [`outcome`]: the terminal outcome of a request, its result typed.
//!
//! **Invariant:** this crate knows the session RPC envelope and its dedup rules, not what any
//! method does; phases, steps' meaning and backends live in the worker shell and the session.

pub mod caller;
pub mod dedup;
pub mod endpoint;
pub mod error;
pub mod local;
pub mod outcome;

pub use caller::{CallInfo, PreparedRequest, RetryPolicy, RpcCaller, RpcReply};
pub use dedup::{Admission, Body, Cached, DedupTable, MethodClass, OperationKey, method_class};
pub use endpoint::{Executed, RpcEndpoint, RpcRequest};
pub use error::RpcError;
pub use outcome::{Outcome, Success};

/// Lifecycle replies a worker keeps unacknowledged before answering `BUSY` (contracts §4).
pub const MAX_UNACKNOWLEDGED: usize = flysim_types::limits::MAX_ACKNOWLEDGE;
