//! Flybus: the message bus every flysim process talks over (contracts §3).
//!
//! One router implementation ([`Router`]) serves every transport: the in-memory byte pipe
//! ([`Router::connect_in_memory`]), the Unix-domain socket ([`Router::listen_unix`]) and the
//! in-process [`Link`] ([`Router::connect_link_as`], envelopes as values) all feed the same
//! connection code, so they behave identically. A [`Client`] says hello
//! (refusing a router whose bus contract digest differs), then makes RPC calls with dispatch
//! certainty and caller-owned deadlines, serves exclusive services, publishes and subscribes on
//! exact topics, and moves large bytes as artifacts in a file-backed store with owner-based
//! collection.
//!
//! - [`wire`]: the envelope, its strict reader, the `CONTRACT` text and the bus error codes.
//! - [`frame`]: length-prefixed framing with the length checked before allocation.
//! - [`link`]: how envelopes travel: frames over a byte stream, or values over an in-process
//!   [`Link`] (a client and its router in one process skip the JSON round trip).
//! - [`router`]: the router state machine, its outbox lanes and its transports.
//! - [`client`]: the SDK handles (calls, services, subscriptions, artifacts and their guards).
//! - [`store`]: the artifact store and location resolution (0700 dirs, `O_NOFOLLOW`).
//! - [`limits`]: the router's resource bounds.
//! - `uds`: Unix-socket halves registered for readability only (no wake-up per peer read).
//!
//! **Invariant:** the bus has no domain semantics. It routes opaque payload objects by exact
//! name, correlates calls and tracks artifact owners; it never reads a payload, knows no session,
//! step or method meaning, reads no environment, prints nothing, and hashes nothing but its own
//! contract text.

pub mod client;
pub mod error;
pub mod frame;
pub mod limits;
pub mod link;
mod outbox;
pub mod router;
pub mod store;
mod uds;
pub mod wire;

pub use client::{
    Artifact, ArtifactWriter, CallResult, CancelState, Client, ClientOptions, Delivered,
    LocalHandle, Message, PendingCall, Published, Request, Responder, Service, SubscribeMode,
    SubscribeOptions, Subscription,
};
pub use error::{BusError, WireError};
pub use limits::Limits;
pub use link::Link;
pub use router::{Router, RouterConfig, RouterStats};
pub use wire::{Dispatch, ErrorCode};
