//! Flybus integration tests. Every scenario runs on every transport (the in-memory byte pipe,
//! the in-process envelope link and the Unix socket) through the shared harness's `both!`,
//! which also checks that the behaviour traces are identical. Wire-level tests (raw bytes,
//! one-byte reads and writes) use the byte pipe where the transport is the link, which has no
//! bytes.

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits with deadlines of their own"
)]

mod artifacts;
mod codes;
mod faults;
mod frames;
mod fuzz;
mod pubsub;
mod rpc;

use serde_json::{Map, Value};

/// A JSON object from a `json!` literal.
pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}
