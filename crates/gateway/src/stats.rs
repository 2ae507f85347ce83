//! What the gateway counts about itself: snapshots taken from the bus, frames encoded, clients,
//! the bytes each client holds, and delivery latencies. It knows numbers only, not what the
//! snapshots say or who the clients are.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Latency samples kept (the newest).
pub(crate) const LATENCY_SAMPLES: usize = 1024;

/// A copy of the gateway's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayStats {
    /// Topics subscribed to so far (3 once the descriptor, snapshot and event topics all are).
    pub topics_followed: u64,
    /// Snapshots taken from the bus.
    pub snapshots_received: u64,
    /// Snapshots refused: not a committed snapshot, or one that disagrees with the descriptor
    /// it names (another revision, other agents); never shown.
    pub snapshots_refused: u64,
    /// Frames encoded as PNG.
    pub frames_encoded: u64,
    /// WebSocket clients connected now.
    pub clients_connected: u64,
    /// WebSocket clients ever accepted.
    pub clients_accepted: u64,
    /// Messages handed to WebSocket clients (completed sends).
    pub deliveries: u64,
    /// Clients closed because one send stalled past the limit.
    pub clients_stalled: u64,
    /// The most bytes any one client ever held at once (messages taken and not yet sent).
    pub max_bytes_held_per_client: u64,
    /// The bytes all clients hold now.
    pub bytes_held: u64,
    /// The largest single message (state and encoded frames) the gateway built.
    pub max_message_bytes: u64,
    /// The newest delivery latencies in milliseconds: from the gateway taking the snapshot off
    /// the bus to the send to a client completing (wall clock of this machine).
    pub delivery_latencies_ms: Vec<f64>,
    /// Why the gateway lost (or never reached) the bus, if it did.
    pub bus_failure: Option<String>,
}

/// The live counters, shared by the gateway's tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) topics_followed: AtomicU64,
    pub(crate) snapshots_received: AtomicU64,
    pub(crate) snapshots_refused: AtomicU64,
    pub(crate) frames_encoded: AtomicU64,
    pub(crate) clients_connected: AtomicU64,
    pub(crate) clients_accepted: AtomicU64,
    pub(crate) deliveries: AtomicU64,
    pub(crate) clients_stalled: AtomicU64,
    pub(crate) max_bytes_held_per_client: AtomicU64,
    pub(crate) bytes_held: AtomicU64,
    pub(crate) max_message_bytes: AtomicU64,
    latencies: Mutex<VecDeque<f64>>,
    bus_failure: Mutex<Option<String>>,
}

/// Adds one to a counter.
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// A client took `bytes` more to send: records its total `held` (after the take).
    pub(crate) fn hold(&self, bytes: u64, held: u64) {
        self.bytes_held.fetch_add(bytes, Ordering::Relaxed);
        self.max_bytes_held_per_client
            .fetch_max(held, Ordering::Relaxed);
    }

    /// A client let go of `bytes` (sent or dropped).
    pub(crate) fn release(&self, bytes: u64) {
        self.bytes_held.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Records a message size.
    pub(crate) fn message_built(&self, bytes: u64) {
        self.max_message_bytes.fetch_max(bytes, Ordering::Relaxed);
    }

    /// Records one delivery latency.
    pub(crate) fn latency(&self, ms: f64) {
        let mut samples = self
            .latencies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if samples.len() == LATENCY_SAMPLES {
            samples.pop_front();
        }
        samples.push_back(ms);
    }

    /// Records why the bus was lost (the first reason stays).
    pub(crate) fn bus_failed(&self, why: String) {
        let mut failure = self
            .bus_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failure.get_or_insert(why);
    }

    /// A copy of every counter.
    pub(crate) fn snapshot(&self) -> GatewayStats {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        GatewayStats {
            topics_followed: n(&self.topics_followed),
            snapshots_received: n(&self.snapshots_received),
            snapshots_refused: n(&self.snapshots_refused),
            frames_encoded: n(&self.frames_encoded),
            clients_connected: n(&self.clients_connected),
            clients_accepted: n(&self.clients_accepted),
            deliveries: n(&self.deliveries),
            clients_stalled: n(&self.clients_stalled),
            max_bytes_held_per_client: n(&self.max_bytes_held_per_client),
            bytes_held: n(&self.bytes_held),
            max_message_bytes: n(&self.max_message_bytes),
            delivery_latencies_ms: self
                .latencies
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .copied()
                .collect(),
            bus_failure: self
                .bus_failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}
