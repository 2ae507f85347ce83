//! The flysim contract: every type and rule that crosses a process, a file or a digest.
//!
//! This crate owns the scalars of the session contract ([`scalar`], [`rational`]), the strict
//! JSON reader and RFC 8785 writer ([`json`]), every value digest ([`digest`]), seed derivation
//! v1 ([`seed`]), the worker payloads with their validation ([`payload`], [`workers`]), the
//! named limits ([`limits`]), the launch plan ([`plan`]), the behaviour trace, run digest and
//! run manifest ([`trace`]), what a session publishes for watchers ([`publish`]), the shape of a backend's spec ([`spec`]) and the JSON Schemas
//! generated from those types ([`schema`]).
//!
//! **Invariant:** it does no I/O, spawns nothing, reads no clock or environment, and knows
//! nothing of KDL, the bus transport, emulators or neurons: backends are known only by the
//! names in the launch-plan contract's vocabulary (`plan::CONTRACT_BACKENDS`, schema text).
//! Everything here is a pure function of its inputs, so every other crate can hash and compare
//! what it produces.

#[macro_use]
mod ordered;

pub mod checkpoint;
pub mod digest;
pub mod error;
pub mod hashed;
pub mod json;
pub mod limits;
pub mod memory;
pub mod payload;
pub mod plan;
pub mod publish;
pub mod rational;
pub mod scalar;
pub mod schema;
pub mod seed;
pub mod spec;
pub mod trace;
pub mod workers;

pub use error::ContractError;
pub use payload::{Payload, parse_payload};
pub use rational::{RationalNs, TickAccumulator};
pub use scalar::{
    BusCallId, DeliveryToken, Digest, DomainRequestId, HoldToken, Id, OwnerToken, SchemaRef, Scope,
    TypedValue, U64,
};
