//! The router: one state machine behind every transport.
//!
//! Each connection has a reader task (frames in, commands handled under the state lock) and a
//! writer task (frames out of the connection's three-lane `Outbox`). The state knows
//! connections, services, calls, topics, subscriptions, artifacts and their owner roots; it never
//! looks inside a payload. File work (allocation, sealing, unlinking) happens outside the lock.
//!
//! This file owns the public face ([`Router`], [`RouterConfig`], [`RouterStats`]) and the
//! router's identity; the concerns live in their own modules:
//!
//! - `transport`: the ways into a router (byte streams, the in-memory pipe, the [`Link`],
//!   Unix sockets).
//! - `connection`: one connection's lifecycle, its reader loop and its writer task.
//! - `command`: envelope-level checks and the dispatch of each command to its handler.
//! - `hello`: `bus.hello`.
//! - `services`: service registrations and their removal.
//! - `rpc`: call admission, dispatch, replies, releases and cancellation.
//! - `pubsub`: topics, subscriptions and publications.
//! - `artifacts`: allocate, seal, open, retain and release.
//! - `ownership`: owner roots, holds, attachment checks and `delivery.consumed`.
//! - `teardown`: a closed connection's teardown and the router's shutdown.
//! - `envelopes`: the notices, deliveries and replies the router builds.
//! - `state`: the records behind all of it.
//!
//! [`Link`]: crate::Link

mod artifacts;
mod command;
mod connection;
mod envelopes;
mod hello;
mod ownership;
mod pubsub;
mod rpc;
mod services;
mod state;
mod teardown;
mod transport;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_types::Id;

use self::state::{RouterCore, RouterState};
use crate::error::BusError;
use crate::limits::Limits;
use crate::store::Store;
use crate::wire::contract_digest;

/// Distinguishes router incarnations started by one process.
static INSTANCE: AtomicU64 = AtomicU64::new(0);

/// How a router is set up.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// The shared store root; the router keeps its artifacts in `store-<tag>/` under it.
    pub store_root: PathBuf,
    /// Resource bounds.
    pub limits: Limits,
    /// The incarnation tag behind `router-<tag>` and `store-<tag>`. `None` derives a fresh one
    /// from the process id and a per-process counter; tests pin it to compare traces.
    pub tag: Option<u64>,
}

impl RouterConfig {
    /// Default limits and a fresh tag.
    #[must_use]
    pub fn new(store_root: impl Into<PathBuf>) -> Self {
        Self {
            store_root: store_root.into(),
            limits: Limits::default(),
            tag: None,
        }
    }
}

/// Counts a test or benchmark reads to check that nothing leaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouterStats {
    /// Live connections.
    pub connections: usize,
    /// Artifacts in the registry (writing or sealed).
    pub artifacts: usize,
    /// Owner roots over all artifacts.
    pub roots: u64,
    /// Bytes reserved in the store.
    pub store_bytes: u64,
    /// The largest `store_bytes` seen.
    pub peak_store_bytes: u64,
    /// Live service registrations.
    pub services: usize,
    /// Calls admitted and not yet answered or cancelled.
    pub calls: usize,
}

/// A running router. Cloning shares it; [`Router::shutdown`] ends every connection.
#[derive(Clone)]
pub struct Router {
    core: Arc<RouterCore>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("router_id", &self.core.router_id)
            .finish_non_exhaustive()
    }
}

fn fresh_tag() -> u64 {
    let n = INSTANCE.fetch_add(1, Ordering::Relaxed);
    let material = format!("flybus-router pid={} n={n}", std::process::id());
    let digest = flysim_types::digest::sha256(material.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest.as_bytes()[..8]);
    u64::from_be_bytes(bytes)
}

impl Router {
    /// Creates the router's store directory (removing orphans under the same root) and returns
    /// the router. Connections are served on the current Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`BusError::Store`] when the store cannot be created.
    pub fn start(config: RouterConfig) -> Result<Self, BusError> {
        let tag = format!("{:016x}", config.tag.unwrap_or_else(fresh_tag));
        let store = Store::create(&config.store_root, &format!("store-{tag}"))?;
        let id = |prefix: &str| {
            Id::parse(&format!("{prefix}-{tag}")).unwrap_or_else(|_| Id::from_static("router"))
        };
        Ok(Self {
            core: Arc::new(RouterCore {
                state: Mutex::new(RouterState::default()),
                store,
                limits: config.limits,
                router_id: id("router"),
                store_id: id("store"),
                tag,
                digest: contract_digest(),
            }),
        })
    }

    /// `router-<tag>`.
    #[must_use]
    pub fn router_id(&self) -> &Id {
        &self.core.router_id
    }

    /// `store-<tag>`, the `storeId` of every artifact this router seals.
    #[must_use]
    pub fn store_id(&self) -> &Id {
        &self.core.store_id
    }

    fn lock(&self) -> MutexGuard<'_, RouterState> {
        self.core.lock()
    }

    /// Counts for leak checks.
    #[must_use]
    pub fn stats(&self) -> RouterStats {
        let st = self.lock();
        RouterStats {
            connections: st.conns.len(),
            artifacts: st.artifacts.len(),
            roots: st.artifacts.values().map(|a| a.roots).sum(),
            store_bytes: st.store_bytes,
            peak_store_bytes: st.peak_store_bytes,
            services: st.services.len(),
            calls: st.calls.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_between_router_incarnations() {
        assert_ne!(fresh_tag(), fresh_tag());
    }
}
