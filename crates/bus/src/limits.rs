//! The router's limits (contracts §3.3 and §3.9), with the contract's defaults.

use flysim_types::limits::{MAX_ATTACHMENTS, MAX_ENVELOPE_BYTES};
use serde_json::{Map, Value};

/// Every resource bound a router enforces. Each is checked before anything is allocated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one envelope.
    pub max_envelope_bytes: usize,
    /// Attachments of one envelope.
    pub max_attachments: usize,
    /// Ids in one release or consumption batch.
    pub max_batch: usize,
    /// Live connections (pending hellos count).
    pub max_clients: usize,
    /// Live service registrations.
    pub max_services: usize,
    /// Declared topics.
    pub max_topics: usize,
    /// Subscriptions of one client.
    pub max_subscriptions_per_client: usize,
    /// Subscriptions in all.
    pub max_subscriptions: usize,
    /// Calls one client may await at once.
    pub max_active_calls_per_client: usize,
    /// Largest `maxQueued` a service may ask for.
    pub max_service_queued: u32,
    /// Largest `maxInFlight` a service may ask for.
    pub max_service_in_flight: u32,
    /// Largest `maxInFlight` of a latest subscription.
    pub max_latest_in_flight: u32,
    /// Largest `maxQueued` of a bounded subscription.
    pub max_bounded_queued: u32,
    /// Largest `maxInFlight` of a bounded subscription.
    pub max_bounded_in_flight: u32,
    /// Owner roots (holds and deliveries) of one client.
    pub max_owners_per_client: usize,
    /// Of those, kept for RPC requests and results.
    pub reserved_owners_per_client: usize,
    /// Frames queued on one client's control lane.
    pub max_control_frames: usize,
    /// Bytes of all artifacts, staging copies included.
    pub max_store_bytes: u64,
    /// Bytes of one artifact.
    pub max_artifact_bytes: u64,
    /// Bytes of retained topic values.
    pub max_retained_bytes: u64,
    /// Envelope bytes queued for one client on its bounded subscriptions.
    pub max_queued_bytes_per_client: u64,
    /// Bytes queued on one client's control lane.
    pub max_control_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_envelope_bytes: MAX_ENVELOPE_BYTES,
            max_attachments: MAX_ATTACHMENTS,
            max_batch: 64,
            max_clients: 64,
            max_services: 256,
            max_topics: 512,
            max_subscriptions_per_client: 128,
            max_subscriptions: 1024,
            max_active_calls_per_client: 64,
            max_service_queued: 16,
            max_service_in_flight: 16,
            max_latest_in_flight: 2,
            max_bounded_queued: 64,
            max_bounded_in_flight: 16,
            max_owners_per_client: 256,
            reserved_owners_per_client: 64,
            max_control_frames: 128,
            max_store_bytes: 512 << 20,
            max_artifact_bytes: 128 << 20,
            max_retained_bytes: 128 << 20,
            max_queued_bytes_per_client: 1 << 20,
            max_control_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// The `limits` object of the hello reply: counts as integers, byte sizes as U64 strings.
    #[must_use]
    pub fn to_wire(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let mut count = |k: &str, v: u64| {
            m.insert(k.into(), Value::from(v));
        };
        let c = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        count("maxEnvelopeBytes", c(self.max_envelope_bytes));
        count("maxAttachments", c(self.max_attachments));
        count("maxBatch", c(self.max_batch));
        count("maxClients", c(self.max_clients));
        count("maxServices", c(self.max_services));
        count("maxTopics", c(self.max_topics));
        count(
            "maxSubscriptionsPerClient",
            c(self.max_subscriptions_per_client),
        );
        count("maxSubscriptions", c(self.max_subscriptions));
        count(
            "maxActiveCallsPerClient",
            c(self.max_active_calls_per_client),
        );
        count("maxServiceQueued", u64::from(self.max_service_queued));
        count("maxServiceInFlight", u64::from(self.max_service_in_flight));
        count("maxLatestInFlight", u64::from(self.max_latest_in_flight));
        count("maxBoundedQueued", u64::from(self.max_bounded_queued));
        count("maxBoundedInFlight", u64::from(self.max_bounded_in_flight));
        count("maxOwnersPerClient", c(self.max_owners_per_client));
        count(
            "reservedOwnersPerClient",
            c(self.reserved_owners_per_client),
        );
        count("maxControlFrames", c(self.max_control_frames));
        let mut bytes = |k: &str, v: u64| {
            m.insert(k.into(), Value::String(v.to_string()));
        };
        bytes("maxStoreBytes", self.max_store_bytes);
        bytes("maxArtifactBytes", self.max_artifact_bytes);
        bytes("maxRetainedBytes", self.max_retained_bytes);
        bytes("maxQueuedBytesPerClient", self.max_queued_bytes_per_client);
        bytes("maxControlBytes", self.max_control_bytes);
        m
    }
}
