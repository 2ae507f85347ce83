//! The router's records: what it keeps per connection, client, service registration, call,
//! topic, subscriber and artifact, the [`RouterState`] that holds them all under one lock, and
//! the [`RouterCore`] every connection task shares (that lock, the store, the limits and the
//! router's identity).
//!
//! This file owns the shapes and a few lookups; it does not know the wire commands that change
//! them, and it never looks inside a payload.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_types::{Digest, Id, U64};
use serde_json::{Map, Value};

use crate::limits::Limits;
use crate::outbox::Outbox;
use crate::store::Store;
use crate::wire::{Attachment, Envelope};

/// Dispatch cell state of a request frame: queued, not yet selected for writing.
pub(super) const CELL_PENDING: u8 = 0;
/// Dispatch cell state: the writer selected the frame, so the responder may run the call.
pub(super) const CELL_DISPATCHED: u8 = 1;
/// Dispatch cell state: cancelled before the writer selected it; the frame is skipped.
pub(super) const CELL_CANCELLED: u8 = 2;

/// A frame waiting in a router outbox.
pub(super) enum OutgoingFrame {
    /// A reply, notice, result or topic message.
    Frame(Envelope),
    /// An RPC request; marked dispatched when selected for writing, skipped if cancelled first.
    Request(Envelope, Arc<AtomicU8>),
}

/// The router's number for one connection (`conn-<n>`).
pub(super) type ConnId = u64;
/// A call: the caller's connection and its `call-<n>` serial.
pub(super) type CallKey = (ConnId, u64);

/// A responder's answer to a call, moved into the caller's result delivery.
pub(super) struct ResponderAnswer {
    /// The responder's outcome object.
    pub(super) outcome: Map<String, Value>,
    /// The attachments of the reply, as the responder sent them.
    pub(super) attachments: Vec<Attachment>,
    /// Their artifact numbers (one root each for the result delivery).
    pub(super) artifacts: Vec<u64>,
    /// The responder's client id and incarnation.
    pub(super) responder: (Id, u64),
}

/// What the router remembers of a client id across its connections.
pub(super) struct ClientRecord {
    pub(super) last_incarnation: u64,
    pub(super) live: Option<ConnId>,
}

/// One live connection.
pub(super) struct Conn {
    pub(super) outbox: Arc<Outbox<OutgoingFrame>>,
    pub(super) client: Option<(Id, u64)>,
    /// The launcher-bound identity the hello must name, if any.
    pub(super) bound: Option<Id>,
    pub(super) last_msg: Option<u64>,
    pub(super) call_watermark: Option<u64>,
    pub(super) active_calls: BTreeSet<u64>,
    pub(super) services: BTreeSet<String>,
    pub(super) subs: BTreeSet<u64>,
    pub(super) next_dlv: u64,
    pub(super) deliveries: BTreeMap<u64, Delivery>,
    pub(super) next_own: u64,
    pub(super) holds: BTreeMap<u64, Hold>,
}

impl Conn {
    /// A fresh connection, before its hello.
    pub(super) fn new(outbox: Arc<Outbox<OutgoingFrame>>, bound: Option<Id>) -> Self {
        Self {
            outbox,
            client: None,
            bound,
            last_msg: None,
            call_watermark: None,
            active_calls: BTreeSet::new(),
            services: BTreeSet::new(),
            subs: BTreeSet::new(),
            next_dlv: 0,
            deliveries: BTreeMap::new(),
            next_own: 0,
            holds: BTreeMap::new(),
        }
    }

    /// The owner roots this connection stands on (deliveries and holds).
    pub(super) fn owners(&self) -> usize {
        self.deliveries.len() + self.holds.len()
    }
}

/// One delivery handed to a connection and not yet consumed.
pub(super) struct Delivery {
    pub(super) artifacts: Vec<u64>,
    pub(super) kind: DeliveryKind,
}

/// What a delivery carried.
#[derive(Clone, Copy)]
pub(super) enum DeliveryKind {
    Request,
    Result { call: u64 },
    Topic { sub: u64 },
}

/// An explicit hold (`own-<n>`) on one artifact.
pub(super) struct Hold {
    pub(super) artifact: u64,
    /// Whether this is the allocation's writer hold, not yet sealed.
    pub(super) writer: bool,
}

/// One artifact of the registry (writing or sealed).
pub(super) struct ArtifactEntry {
    pub(super) sealed: bool,
    pub(super) byte_length: u64,
    pub(super) content_type: String,
    pub(super) digest: Option<Digest>,
    pub(super) roots: u64,
    pub(super) reserved: u64,
}

/// A live service registration: its incarnation, its connection and its call queue.
pub(super) struct Registration {
    pub(super) incarnation: u64,
    pub(super) conn: ConnId,
    pub(super) max_queued: u32,
    pub(super) max_in_flight: u32,
    pub(super) queue: VecDeque<CallKey>,
    pub(super) in_flight: u32,
}

/// Where an admitted call stands.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CallState {
    Queued,
    InFlight {
        conn: ConnId,
        dlv: u64,
    },
    /// The caller went away or cancelled after dispatch; a late reply is not routed.
    Detached {
        conn: ConnId,
        dlv: u64,
    },
}

/// An admitted call, until it is answered, released or cancelled.
pub(super) struct Call {
    pub(super) caller: (Id, u64),
    pub(super) target: String,
    pub(super) incarnation: u64,
    pub(super) method: String,
    pub(super) payload: Map<String, Value>,
    pub(super) attachments: Vec<Attachment>,
    pub(super) artifacts: Vec<u64>,
    pub(super) state: CallState,
    pub(super) cell: Arc<AtomicU8>,
}

/// One published message, shared by every subscriber queue and the retained slot.
pub(super) struct Publication {
    pub(super) topic: String,
    pub(super) incarnation: u64,
    pub(super) sequence: u64,
    pub(super) payload: Map<String, Value>,
    pub(super) attachments: Vec<Attachment>,
    pub(super) artifacts: Vec<u64>,
}

/// A declared topic.
pub(super) struct Topic {
    pub(super) incarnation: u64,
    pub(super) retained: bool,
    pub(super) sequence: u64,
    pub(super) retained_msg: Option<Arc<Publication>>,
    pub(super) subscribers: BTreeSet<u64>,
}

/// How a subscriber's queue takes publications.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum QueuePolicy {
    /// One queued value, replaced by newer publications.
    Latest,
    /// FIFO without loss; a full queue refuses the publication.
    Bounded,
}

/// One subscription (`sub-<n>`): its topic, queue policy, queue and credits.
pub(super) struct Subscriber {
    pub(super) conn: ConnId,
    pub(super) topic: String,
    pub(super) incarnation: u64,
    pub(super) policy: QueuePolicy,
    pub(super) max_queued: u32,
    pub(super) max_in_flight: u32,
    pub(super) queue: VecDeque<Arc<Publication>>,
    pub(super) in_flight: u32,
    pub(super) replaced: u64,
}

/// Everything the router routes by, held under one lock.
#[derive(Default)]
pub(super) struct RouterState {
    pub(super) next_conn: u64,
    pub(super) conns: BTreeMap<ConnId, Conn>,
    pub(super) clients: BTreeMap<String, ClientRecord>,
    pub(super) next_service: u64,
    pub(super) services: BTreeMap<String, Registration>,
    pub(super) calls: BTreeMap<CallKey, Call>,
    pub(super) next_topic: u64,
    pub(super) topics: BTreeMap<String, Topic>,
    pub(super) next_sub: u64,
    pub(super) subs: BTreeMap<u64, Subscriber>,
    pub(super) next_artifact: u64,
    pub(super) artifacts: BTreeMap<u64, ArtifactEntry>,
    pub(super) store_bytes: u64,
    pub(super) peak_store_bytes: u64,
    pub(super) retained_bytes: u64,
    pub(super) shut: bool,
}

/// What every connection task of one router shares: the state lock, the store, the limits and
/// the router's identity.
pub(super) struct RouterCore {
    pub(super) state: Mutex<RouterState>,
    pub(super) store: Store,
    pub(super) limits: Limits,
    pub(super) router_id: Id,
    pub(super) store_id: Id,
    pub(super) tag: String,
    pub(super) digest: Digest,
}

impl RouterCore {
    pub(super) fn lock(&self) -> MutexGuard<'_, RouterState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `<prefix>-<tag>-<n>`, the spelling of a service or topic incarnation.
    pub(super) fn incarnation(&self, prefix: &str, n: u64) -> String {
        // Pieced together rather than `format!`ed: three of these are written for every call.
        let mut text = String::with_capacity(prefix.len() + self.tag.len() + 22);
        text.push_str(prefix);
        text.push('-');
        text.push_str(&self.tag);
        text.push('-');
        U64(n).push_to(&mut text);
        text
    }

    /// Reads an incarnation of this router back; `None` for another router's or a bad one.
    pub(super) fn parse_incarnation(&self, prefix: &str, text: &str) -> Option<u64> {
        let rest = text.strip_prefix(prefix)?.strip_prefix('-')?;
        let rest = rest.strip_prefix(self.tag.as_str())?.strip_prefix('-')?;
        U64::parse(rest).ok().map(U64::get)
    }

    /// Unlinks collected store files (outside the state lock).
    pub(super) fn unlink_all(&self, garbage: Vec<String>) {
        for name in garbage {
            self.store.unlink_name(&name);
        }
    }
}
