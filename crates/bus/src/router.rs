//! The router: one state machine behind every transport.
//!
//! Each connection has a reader task (frames in, commands handled under the state lock) and a
//! writer task (frames out of the connection's three-lane `Outbox`). The state knows
//! connections, services, calls, topics, subscriptions, artifacts and their owner roots; it never
//! looks inside a payload. File work (allocation, sealing, unlinking) happens outside the lock.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use flysim_types::workers::ArtifactRef;
use flysim_types::{Digest, Id, OwnerToken, U64};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::error::BusError;
use crate::limits::Limits;
use crate::link::{FramedSink, FramedSource, Inbound, Link, Sink, Source};
use crate::outbox::{Lane, Outbox};
use crate::store::{SealFailure, Store, create_private_dir};
use crate::wire::{
    Attachment, Body, Dispatch, Envelope, ErrorCode, Kind, MAJOR, MINOR, check_method,
    contract_digest, spelled, unspell,
};

/// How long a connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Frames one writer pass takes from the outbox before writing.
const WRITE_BATCH: usize = 64;
/// How long an acknowledgement nobody waits for promptly (of a reply, a seal, a consumption or
/// a release) may wait for the next frame to its connection before it is written alone. A
/// worker's next request usually comes sooner, and the acknowledgement travels with it.
const ACK_DELAY: Duration = Duration::from_millis(1);
/// The longest router envelope id, used when sizing deliveries at admission.
const LONGEST_BUS_ID: &str = "bus-18446744073709551615";
/// Margin for router-added delivery fields when an inbound frame is obviously small enough.
const DELIVERY_MARGIN: usize = 1024;

/// Dispatch cell states of a request frame.
const CELL_PENDING: u8 = 0;
const CELL_DISPATCHED: u8 = 1;
const CELL_CANCELLED: u8 = 2;

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

/// A refusal answered to one command; the connection stays up.
#[derive(Debug)]
struct Refusal {
    code: ErrorCode,
    message: String,
}

/// Artifacts up to this size are sealed on the connection's task (see [`seal`]).
const INLINE_SEAL_BYTES: usize = flysim_types::limits::MAX_ENVELOPE_BYTES;

fn refuse(code: ErrorCode, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

fn invalid(message: impl Into<String>) -> Refusal {
    refuse(ErrorCode::InvalidEnvelope, message)
}

/// Why a connection is being closed by the router.
struct Closing {
    code: ErrorCode,
    message: String,
}

/// A frame waiting in a router outbox.
enum Out {
    /// A reply, notice, result or topic message.
    Frame(Envelope),
    /// An RPC request; marked dispatched when selected for writing, skipped if cancelled first.
    Request(Envelope, Arc<AtomicU8>),
}

type ConnId = u64;
/// A responder's answer: outcome, attachments, their artifacts, and the responder's identity.
type Answer = (Map<String, Value>, Vec<Attachment>, Vec<u64>, (Id, u64));
type CallKey = (ConnId, u64);

struct ClientRecord {
    last_incarnation: u64,
    live: Option<ConnId>,
}

struct Conn {
    outbox: Arc<Outbox<Out>>,
    client: Option<(Id, u64)>,
    /// The launcher-bound identity the hello must name, if any.
    bound: Option<Id>,
    last_msg: Option<u64>,
    call_watermark: Option<u64>,
    active_calls: BTreeSet<u64>,
    services: BTreeSet<String>,
    subs: BTreeSet<u64>,
    next_dlv: u64,
    deliveries: BTreeMap<u64, Delivery>,
    next_own: u64,
    holds: BTreeMap<u64, Hold>,
}

impl Conn {
    fn owners(&self) -> usize {
        self.deliveries.len() + self.holds.len()
    }
}

struct Delivery {
    artifacts: Vec<u64>,
    kind: DeliveryKind,
}

#[derive(Clone, Copy)]
enum DeliveryKind {
    Request,
    Result { call: u64 },
    Topic { sub: u64 },
}

struct Hold {
    artifact: u64,
    writer: bool,
}

struct ArtifactEntry {
    sealed: bool,
    byte_length: u64,
    content_type: String,
    digest: Option<Digest>,
    roots: u64,
    reserved: u64,
}

struct Service {
    incarnation: u64,
    conn: ConnId,
    max_queued: u32,
    max_in_flight: u32,
    queue: VecDeque<CallKey>,
    in_flight: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CallState {
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

struct Call {
    caller: (Id, u64),
    target: String,
    incarnation: u64,
    method: String,
    payload: Map<String, Value>,
    attachments: Vec<Attachment>,
    artifacts: Vec<u64>,
    state: CallState,
    cell: Arc<AtomicU8>,
}

struct Publication {
    topic: String,
    incarnation: u64,
    sequence: u64,
    payload: Map<String, Value>,
    attachments: Vec<Attachment>,
    artifacts: Vec<u64>,
}

struct Topic {
    incarnation: u64,
    retained: bool,
    sequence: u64,
    retained_msg: Option<Arc<Publication>>,
    subscribers: BTreeSet<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Latest,
    Bounded,
}

struct Sub {
    conn: ConnId,
    topic: String,
    incarnation: u64,
    mode: Mode,
    max_queued: u32,
    max_in_flight: u32,
    queue: VecDeque<Arc<Publication>>,
    in_flight: u32,
    replaced: u64,
}

#[derive(Default)]
struct State {
    next_conn: u64,
    conns: BTreeMap<ConnId, Conn>,
    clients: BTreeMap<String, ClientRecord>,
    next_service: u64,
    services: BTreeMap<String, Service>,
    calls: BTreeMap<CallKey, Call>,
    next_topic: u64,
    topics: BTreeMap<String, Topic>,
    next_sub: u64,
    subs: BTreeMap<u64, Sub>,
    next_artifact: u64,
    artifacts: BTreeMap<u64, ArtifactEntry>,
    store_bytes: u64,
    peak_store_bytes: u64,
    retained_bytes: u64,
    shut: bool,
}

struct Shared {
    state: Mutex<State>,
    store: Store,
    limits: Limits,
    router_id: Id,
    store_id: Id,
    tag: String,
    digest: Digest,
}

/// A running router. Cloning shares it; [`Router::shutdown`] ends every connection.
#[derive(Clone)]
pub struct Router {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("router_id", &self.shared.router_id)
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
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
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
        &self.shared.router_id
    }

    /// `store-<tag>`, the `storeId` of every artifact this router seals.
    #[must_use]
    pub fn store_id(&self) -> &Id {
        &self.shared.store_id
    }

    /// Serves one connection over any byte stream (the in-memory and Unix transports use this).
    pub fn serve<S>(&self, stream: S)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        self.serve_halves(reader, writer);
    }

    /// Opens an in-process connection that carries envelopes as values (see [`Link`]) and
    /// returns the client's end, for [`crate::Client::connect_link`]. Its hello must name
    /// `client_id`, as with [`Router::connect_in_memory_as`].
    #[must_use]
    pub fn connect_link_as(&self, client_id: Id) -> Link {
        let (client, router) = Link::pair();
        let (source, sink) = router.split(false);
        self.spawn_connection(source, sink, Some(client_id));
        client
    }

    /// Serves one connection given its two halves (a Unix stream splits without a lock).
    pub fn serve_halves<R, W>(&self, reader: R, writer: W)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.spawn_connection(FramedSource::new(reader), FramedSink::new(writer), None);
    }

    /// Serves one launcher-bound connection: its hello must name `client_id`, or it is refused
    /// with `NOT_AUTHORIZED` before anything is registered.
    pub fn serve_as<S>(&self, stream: S, client_id: Id)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        self.spawn_connection(
            FramedSource::new(reader),
            FramedSink::new(writer),
            Some(client_id),
        );
    }

    fn spawn_connection(&self, source: impl Source, sink: impl Sink, bound: Option<Id>) {
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move { serve_connection(shared, source, sink, bound).await });
    }

    /// Opens an in-memory connection and returns the client's end (`buffer` bytes each way; a
    /// tiny buffer forces partial reads and writes). The hello may name any client id.
    #[must_use]
    pub fn connect_in_memory(&self, buffer: usize) -> tokio::io::DuplexStream {
        let (client, router) = tokio::io::duplex(buffer);
        self.serve(router);
        client
    }

    /// Opens an in-memory connection bound to `client_id` (what a launcher hands a worker).
    #[must_use]
    pub fn connect_in_memory_as(&self, buffer: usize, client_id: Id) -> tokio::io::DuplexStream {
        let (client, router) = tokio::io::duplex(buffer);
        self.serve_as(router, client_id);
        client
    }

    /// Binds a Unix-domain socket at `path` (its directory is created with mode 0700, the socket
    /// gets mode 0600) and serves every connection on it until shutdown.
    ///
    /// # Errors
    ///
    /// [`BusError::Connect`] when the socket cannot be bound, [`BusError::Store`] for its directory.
    pub fn listen_unix(&self, path: &Path) -> Result<(), BusError> {
        self.listen(path, None)
    }

    /// Binds a Unix-domain socket for one participant: every hello on it must name `client_id`
    /// (`NOT_AUTHORIZED` otherwise). A launcher gives each worker its own socket this way.
    ///
    /// # Errors
    ///
    /// As [`Router::listen_unix`].
    pub fn listen_unix_as(&self, path: &Path, client_id: Id) -> Result<(), BusError> {
        self.listen(path, Some(client_id))
    }

    fn listen(&self, path: &Path, bound: Option<Id>) -> Result<(), BusError> {
        use std::os::unix::fs::PermissionsExt as _;
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let listener =
            tokio::net::UnixListener::bind(path).map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| BusError::store("protect socket", path.to_owned(), e))?;
        let router = self.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                if router.lock().shut {
                    break;
                }
                let Ok((reader, writer)) = crate::uds::split_tokio(stream) else {
                    continue;
                };
                router.spawn_connection(
                    FramedSource::new(reader),
                    FramedSink::new(writer),
                    bound.clone(),
                );
            }
        });
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Ends every connection (each gets a `subscription.closed` per subscription and a
    /// `connection.closing` notice first) and removes this router's store directory.
    pub fn shutdown(&self) {
        let outboxes: Vec<Arc<Outbox<Out>>> = {
            let mut st = self.lock();
            st.shut = true;
            let subs: Vec<(u64, ConnId, String, u64)> = st
                .subs
                .iter()
                .map(|(id, s)| (*id, s.conn, s.topic.clone(), s.incarnation))
                .collect();
            for (id, conn, topic, inc) in subs {
                let body = json!({
                    "subscriptionId": spelled("sub", id),
                    "topic": topic,
                    "topicIncarnation": self.shared.incarnation("top", inc),
                    "reason": "router-shutdown",
                });
                if let Some(c) = st.conns.get(&conn) {
                    c.outbox.push(
                        Lane::Control,
                        Out::Frame(notice("subscription.closed", body)),
                    );
                }
            }
            st.conns.values().map(|c| Arc::clone(&c.outbox)).collect()
        };
        for outbox in &outboxes {
            outbox.push_final(Out::Frame(notice(
                "connection.closing",
                json!({"code": "ROUTER_LOST", "message": "the router is shutting down"}),
            )));
        }
        // Give writers a moment to flush the notices, then cut every connection.
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for outbox in outboxes {
                outbox.kill();
            }
            drop(shared);
        });
        self.shared.store.destroy();
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

fn notice(op: &str, body: Value) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Notice,
        op: op.into(),
        body: into_map(body),
        attachments: Vec::new(),
    }
}

fn delivery(op: &str, body: Value, attachments: Vec<Attachment>) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: None,
        kind: Kind::Delivery,
        op: op.into(),
        body: into_map(body),
        attachments,
    }
}

fn into_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn reply_body(result: Result<Map<String, Value>, Refusal>) -> Map<String, Value> {
    into_map(match result {
        Ok(value) => json!({"ok": true, "value": value}),
        Err(r) => json!({"ok": false, "error": {
            "code": r.code.as_str(),
            "message": r.message,
            "dispatch": Dispatch::NotDispatched.as_str(),
        }}),
    })
}

/// The `{clientId, clientIncarnation}` object of a caller or responder.
fn peer(client: &(Id, u64)) -> Value {
    let mut m = Map::new();
    m.insert("clientId".into(), Value::String(client.0.to_string()));
    m.insert("clientIncarnation".into(), u64s(client.1));
    Value::Object(m)
}

fn u64s(v: u64) -> Value {
    Value::String(v.to_string())
}

fn dlv_token(n: u64) -> OwnerToken {
    OwnerToken::Delivery(flysim_types::DeliveryToken(n))
}

/// The recipient's copy of an attachment list: same refs, the recipient's delivery as owner.
fn rebind(attachments: &[Attachment], dlv: u64) -> Vec<Attachment> {
    attachments
        .iter()
        .map(|a| Attachment {
            name: a.name.clone(),
            reference: a.reference.clone(),
            owner_id: dlv_token(dlv),
        })
        .collect()
}

/// Whether a delivery built from an inbound frame of `frame_len` bytes fits in an envelope.
fn fits(limits: &Limits, frame_len: usize, build: impl FnOnce() -> Envelope) -> bool {
    if frame_len + DELIVERY_MARGIN <= limits.max_envelope_bytes {
        return true;
    }
    let mut env = build();
    env.id = LONGEST_BUS_ID.into();
    env.to_bytes().len() <= limits.max_envelope_bytes
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn incarnation(&self, prefix: &str, n: u64) -> String {
        format!("{prefix}-{}-{n}", self.tag)
    }

    fn parse_incarnation(&self, prefix: &str, text: &str) -> Option<u64> {
        let rest = text.strip_prefix(prefix)?.strip_prefix('-')?;
        let rest = rest.strip_prefix(self.tag.as_str())?.strip_prefix('-')?;
        U64::parse(rest).ok().map(U64::get)
    }

    fn unlink_all(&self, garbage: Vec<String>) {
        for name in garbage {
            self.store.unlink_name(&name);
        }
    }
}

/// The connection lifecycle: open, hello, commands until close, teardown.
async fn serve_connection(
    shared: Arc<Shared>,
    mut source: impl Source,
    sink: impl Sink,
    bound: Option<Id>,
) {
    let outbox: Arc<Outbox<Out>> = Arc::new(Outbox::new());
    let conn = {
        let mut st = shared.lock();
        if st.shut || st.conns.len() >= shared.limits.max_clients {
            None
        } else {
            st.next_conn += 1;
            let id = st.next_conn;
            st.conns.insert(
                id,
                Conn {
                    outbox: Arc::clone(&outbox),
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
                },
            );
            Some(id)
        }
    };
    tokio::spawn(write_loop(sink, Arc::clone(&outbox)));
    let Some(conn) = conn else {
        outbox.push_final(Out::Frame(notice(
            "connection.closing",
            json!({"code": "QUOTA_EXCEEDED", "message": "the router serves no more clients"}),
        )));
        return;
    };
    let mut hello_done = false;
    let mut handled: u64 = 0;
    let closing: Option<Closing> = loop {
        let next = async {
            if hello_done {
                Some(source.next().await)
            } else {
                tokio::time::timeout(HELLO_TIMEOUT, source.next())
                    .await
                    .ok()
            }
        };
        let outcome = tokio::select! {
            biased;
            () = outbox.killed() => break None,
            outcome = next => outcome,
        };
        let (env, frame_len) = match outcome {
            None => {
                break Some(Closing {
                    code: ErrorCode::InvalidEnvelope,
                    message: "no hello within 5 s".into(),
                });
            }
            Some(Inbound::Envelope(env, len)) => (env, len),
            Some(Inbound::Closed | Inbound::Broken(_)) => break None,
            Some(Inbound::Refused(message)) => {
                break Some(Closing {
                    code: ErrorCode::InvalidEnvelope,
                    message,
                });
            }
        };
        match handle(&shared, conn, env, frame_len, &mut hello_done).await {
            Ok(()) => {}
            Err(c) => break Some(c),
        }
        // Fairness across connections: a busy connection yields every 32 commands.
        handled += 1;
        if handled.is_multiple_of(32) {
            tokio::task::yield_now().await;
        }
    };
    if let Some(c) = closing {
        outbox.push_final(Out::Frame(notice(
            "connection.closing",
            json!({"code": c.code.as_str(), "message": c.message}),
        )));
    } else {
        outbox.close();
    }
    teardown(&shared, conn);
}

/// The writer task: drains the outbox in priority order, assigning `bus-<n>` ids in write order.
async fn write_loop(mut sink: impl Sink, outbox: Arc<Outbox<Out>>) {
    let mut next_id: u64 = 0;
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let mut envs = Vec::with_capacity(WRITE_BATCH);
    // When the deferred frames held back now must go, even alone.
    let mut due: Option<Instant> = None;
    loop {
        batch.clear();
        let flush = due.is_some_and(|d| Instant::now() >= d);
        let popped = outbox.pop_batch(WRITE_BATCH, &mut batch, flush);
        if batch.is_empty() {
            if !popped.open {
                break;
            }
            if popped.held {
                let at = *due.get_or_insert_with(|| Instant::now() + ACK_DELAY);
                tokio::select! {
                    biased;
                    () = outbox.killed() => return,
                    () = outbox.wait() => {}
                    () = tokio::time::sleep_until(at) => {}
                }
            } else {
                tokio::select! {
                    biased;
                    () = outbox.killed() => return,
                    () = outbox.wait() => {}
                }
            }
            continue;
        }
        due = None;
        for item in batch.drain(..) {
            let mut env = match item {
                Out::Frame(env) => env,
                Out::Request(env, cell) => {
                    if cell
                        .compare_exchange(
                            CELL_PENDING,
                            CELL_DISPATCHED,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        )
                        .is_err()
                    {
                        continue;
                    }
                    env
                }
            };
            next_id += 1;
            env.id = spelled("bus", next_id);
            envs.push(env);
        }
        if envs.is_empty() {
            continue;
        }
        let ok = tokio::select! {
            biased;
            () = outbox.killed() => return,
            r = sink.send(&mut envs) => r.is_ok(),
        };
        if !ok {
            outbox.kill();
            return;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

/// Handles one command envelope: envelope-level checks close the connection, body-level
/// refusals answer `ok: false`.
async fn handle(
    shared: &Arc<Shared>,
    conn: ConnId,
    mut env: Envelope,
    frame_len: usize,
    hello_done: &mut bool,
) -> Result<(), Closing> {
    let close = |message: String| Closing {
        code: ErrorCode::InvalidEnvelope,
        message,
    };
    if env.kind != Kind::Command {
        return Err(close(format!(
            "a client sends commands, not {}",
            env.kind.as_str()
        )));
    }
    if env.reply_to.is_some() {
        return Err(close("a command has replyTo null".into()));
    }
    let Some(serial) = unspell("msg", &env.id) else {
        return Err(close(format!("command id {:?} is not msg-<U64>", env.id)));
    };
    {
        let mut st = shared.lock();
        let c = st
            .conns
            .get_mut(&conn)
            .ok_or_else(|| close("connection gone".into()))?;
        if c.last_msg.is_some_and(|last| serial <= last) {
            return Err(close(format!("command id {} does not increase", env.id)));
        }
        c.last_msg = Some(serial);
    }
    let is_hello = env.op == "bus.hello";
    if is_hello == *hello_done {
        return Err(close(if is_hello {
            "a second bus.hello".into()
        } else {
            format!("{} before bus.hello", env.op)
        }));
    }
    let allows_attachments = matches!(env.op.as_str(), "rpc.call" | "rpc.reply" | "publish");
    let result = if !allows_attachments && !env.attachments.is_empty() {
        Err(invalid(format!("{} carries no attachments", env.op)))
    } else {
        match env.op.as_str() {
            "bus.hello" => {
                let r = hello(shared, conn, &env.body);
                match r {
                    Ok(v) => {
                        *hello_done = true;
                        Ok(v)
                    }
                    Err(r) => {
                        reply(
                            shared,
                            conn,
                            &env.id,
                            Err(refuse(r.code, r.message.clone())),
                        );
                        return Err(Closing {
                            code: r.code,
                            message: r.message,
                        });
                    }
                }
            }
            "artifact.allocate" => allocate(shared, conn, &env.body).await,
            "artifact.seal" => seal(shared, conn, &env.body).await,
            _ => {
                let mut garbage = Vec::new();
                let r = {
                    let mut st = shared.lock();
                    command(shared, &mut st, conn, &mut env, frame_len, &mut garbage)
                };
                shared.unlink_all(garbage);
                r
            }
        }
    };
    // Success of these only confirms what the sender already assumes: it may wait (ACK_DELAY).
    let deferred = result.is_ok()
        && matches!(
            env.op.as_str(),
            "rpc.reply" | "artifact.seal" | "delivery.consumed" | "artifact.release"
        );
    if deferred {
        reply_deferred(shared, conn, &env.id, result);
    } else {
        reply(shared, conn, &env.id, result);
    }
    Ok(())
}

/// Queues a command's successful reply to go with the connection's next frame (or after
/// [`ACK_DELAY`]).
fn reply_deferred(
    shared: &Shared,
    conn: ConnId,
    to: &str,
    result: Result<Map<String, Value>, Refusal>,
) {
    let env = reply_envelope(to, result);
    let st = shared.lock();
    if let Some(c) = st.conns.get(&conn) {
        match c.outbox.push_deferred(Lane::Control, Out::Frame(env)) {
            Some(len) if len > shared.limits.max_control_frames => c.outbox.kill(),
            _ => {}
        }
    }
}

fn reply_envelope(to: &str, result: Result<Map<String, Value>, Refusal>) -> Envelope {
    Envelope {
        id: String::new(),
        reply_to: Some(to.to_owned()),
        kind: Kind::Reply,
        op: "reply".into(),
        body: reply_body(result),
        attachments: Vec::new(),
    }
}

fn reply(shared: &Shared, conn: ConnId, to: &str, result: Result<Map<String, Value>, Refusal>) {
    let env = reply_envelope(to, result);
    let st = shared.lock();
    if let Some(c) = st.conns.get(&conn) {
        push_control(&shared.limits, c, env);
    }
}

/// Queues a control frame; an overfull control lane closes the connection rather than dropping.
fn push_control(limits: &Limits, c: &Conn, env: Envelope) {
    match c.outbox.push(Lane::Control, Out::Frame(env)) {
        Some(len) if len > limits.max_control_frames => c.outbox.kill(),
        _ => {}
    }
}

fn hello(
    shared: &Shared,
    conn: ConnId,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let b = Body::exact(body, &["clientId", "clientIncarnation", "supportedMajors"])
        .map_err(invalid)?;
    let client_id = b.id("clientId").map_err(invalid)?;
    let incarnation = b.u64("clientIncarnation").map_err(invalid)?;
    let majors = b
        .value("supportedMajors")
        .as_array()
        .filter(|m| !m.is_empty() && m.len() <= 8)
        .ok_or_else(|| invalid("`supportedMajors` is 1..=8 integers"))?;
    if !majors.iter().any(|m| m.as_u64() == Some(u64::from(MAJOR))) {
        return Err(refuse(
            ErrorCode::VersionMismatch,
            "this router speaks major 1 only",
        ));
    }
    let mut st = shared.lock();
    if let Some(bound) = st.conns.get(&conn).and_then(|c| c.bound.as_ref())
        && *bound != client_id
    {
        return Err(refuse(
            ErrorCode::NotAuthorized,
            format!("this endpoint is bound to {bound}, not {client_id}"),
        ));
    }
    let record = st.clients.get(client_id.as_str());
    if let Some(r) = record {
        if r.live.is_some() {
            return Err(refuse(
                ErrorCode::Conflict,
                format!("client {client_id} is already connected"),
            ));
        }
        if incarnation <= r.last_incarnation {
            return Err(refuse(
                ErrorCode::Conflict,
                format!(
                    "client {client_id} incarnation {incarnation} is not newer than {}",
                    r.last_incarnation
                ),
            ));
        }
    }
    st.clients.insert(
        client_id.as_str().to_owned(),
        ClientRecord {
            last_incarnation: incarnation,
            live: Some(conn),
        },
    );
    if let Some(c) = st.conns.get_mut(&conn) {
        c.client = Some((client_id, incarnation));
    }
    Ok(into_map(json!({
        "routerId": shared.router_id.as_str(),
        "connectionId": spelled("conn", conn),
        "selectedMajor": MAJOR,
        "selectedMinor": MINOR,
        "contractDigest": shared.digest.hex(),
        "limits": shared.limits.to_wire(),
    })))
}

/// The synchronous commands, handled under the state lock.
fn command(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
    garbage: &mut Vec<String>,
) -> Result<Map<String, Value>, Refusal> {
    let body = &env.body;
    match env.op.as_str() {
        "service.register" => {
            let b = Body::exact(body, &["name", "maxQueued", "maxInFlight"]).map_err(invalid)?;
            let name = b.name("name").map_err(invalid)?;
            let max_queued = b
                .count("maxQueued", shared.limits.max_service_queued)
                .map_err(invalid)?;
            let max_in_flight = b
                .count("maxInFlight", shared.limits.max_service_in_flight)
                .map_err(invalid)?;
            if st.services.contains_key(name) {
                return Err(refuse(
                    ErrorCode::Conflict,
                    format!("service {name} is registered"),
                ));
            }
            if st.services.len() >= shared.limits.max_services {
                return Err(refuse(ErrorCode::QuotaExceeded, "too many services"));
            }
            st.next_service += 1;
            let incarnation = st.next_service;
            st.services.insert(
                name.to_owned(),
                Service {
                    incarnation,
                    conn,
                    max_queued,
                    max_in_flight,
                    queue: VecDeque::new(),
                    in_flight: 0,
                },
            );
            if let Some(c) = st.conns.get_mut(&conn) {
                c.services.insert(name.to_owned());
            }
            Ok(into_map(
                json!({"serviceIncarnation": shared.incarnation("svc", incarnation)}),
            ))
        }
        "service.unregister" => {
            let b = Body::exact(body, &["name", "serviceIncarnation"]).map_err(invalid)?;
            let name = b.name("name").map_err(invalid)?;
            let inc = b.str("serviceIncarnation").map_err(invalid)?;
            let ours = st.services.get(name).is_some_and(|s| {
                s.conn == conn && shared.parse_incarnation("svc", inc) == Some(s.incarnation)
            });
            if ours {
                remove_service(shared, st, name, "unregistered", garbage);
            }
            Ok(into_map(json!({"removed": ours})))
        }
        "rpc.call" => rpc_call(shared, st, conn, env, frame_len, garbage),
        "rpc.reply" => rpc_reply(shared, st, conn, env, frame_len),
        "rpc.responder.release" => {
            let b = Body::exact(body, &["callId", "requestDeliveryId"]).map_err(invalid)?;
            let (key, _) = responder_call(st, conn, &b)?;
            let released = key.is_some_and(|key| {
                finish_call(shared, st, key, None);
                true
            });
            Ok(into_map(json!({"released": released})))
        }
        "rpc.cancel" => {
            let b = Body::exact(body, &["callId"]).map_err(invalid)?;
            let serial = b
                .str("callId")
                .ok()
                .and_then(|s| unspell("call", s))
                .ok_or_else(|| invalid("`callId` is call-<U64>"))?;
            Ok(into_map(
                json!({"state": cancel(shared, st, conn, serial, garbage)}),
            ))
        }
        "topic.declare" => {
            let b = Body::exact(body, &["name", "retained"]).map_err(invalid)?;
            let name = b.name("name").map_err(invalid)?;
            let retained = match b.str("retained").map_err(invalid)? {
                "none" => false,
                "latest" => true,
                other => {
                    return Err(invalid(format!(
                        "`retained` is none or latest, not {other}"
                    )));
                }
            };
            if let Some(t) = st.topics.get(name) {
                if t.retained != retained {
                    return Err(refuse(
                        ErrorCode::Conflict,
                        format!("topic {name} is declared with another retention"),
                    ));
                }
                return Ok(into_map(
                    json!({"declared": false, "topicIncarnation": shared.incarnation("top", t.incarnation)}),
                ));
            }
            if st.topics.len() >= shared.limits.max_topics {
                return Err(refuse(ErrorCode::QuotaExceeded, "too many topics"));
            }
            st.next_topic += 1;
            let incarnation = st.next_topic;
            st.topics.insert(
                name.to_owned(),
                Topic {
                    incarnation,
                    retained,
                    sequence: 0,
                    retained_msg: None,
                    subscribers: BTreeSet::new(),
                },
            );
            Ok(into_map(
                json!({"declared": true, "topicIncarnation": shared.incarnation("top", incarnation)}),
            ))
        }
        "topic.clear" => {
            let b = Body::exact(body, &["name"]).map_err(invalid)?;
            let name = b.name("name").map_err(invalid)?;
            let Some(t) = st.topics.get_mut(name) else {
                return Err(refuse(
                    ErrorCode::NoTopic,
                    format!("topic {name} is not declared"),
                ));
            };
            let old = t.retained_msg.take();
            let cleared = old.is_some();
            if let Some(p) = old {
                let size = retained_size(st, &p);
                st.retained_bytes -= size;
                drop_roots(st, &p.artifacts, garbage);
            }
            Ok(into_map(json!({"cleared": cleared})))
        }
        "topic.delete" => {
            let b = Body::exact(body, &["name"]).map_err(invalid)?;
            let name = b.name("name").map_err(invalid)?;
            let Some(t) = st.topics.get(name) else {
                return Ok(into_map(json!({"deleted": false})));
            };
            if !t.subscribers.is_empty() {
                return Err(refuse(
                    ErrorCode::Conflict,
                    format!("topic {name} has subscribers"),
                ));
            }
            if let Some(t) = st.topics.remove(name)
                && let Some(p) = t.retained_msg
            {
                let size = retained_size(st, &p);
                st.retained_bytes -= size;
                drop_roots(st, &p.artifacts, garbage);
            }
            Ok(into_map(json!({"deleted": true})))
        }
        "subscribe" => subscribe(shared, st, conn, body),
        "unsubscribe" => {
            let b = Body::exact(body, &["subscriptionId"]).map_err(invalid)?;
            let id = b
                .str("subscriptionId")
                .ok()
                .and_then(|s| unspell("sub", s))
                .ok_or_else(|| invalid("`subscriptionId` is sub-<n>"))?;
            let ours = st.subs.get(&id).is_some_and(|s| s.conn == conn);
            if ours {
                remove_sub(st, id, garbage);
            }
            Ok(into_map(json!({"removed": ours})))
        }
        "publish" => publish(shared, st, conn, env, frame_len, garbage),
        "delivery.consumed" => {
            let b = Body::exact(body, &["deliveryIds"]).map_err(invalid)?;
            let ids = batch_ids(shared, &b, "deliveryIds", "dlv")?;
            let c = st
                .conns
                .get(&conn)
                .ok_or_else(|| invalid("connection gone"))?;
            if let Some(bad) = ids.iter().find(|n| **n > c.next_dlv) {
                return Err(refuse(
                    ErrorCode::OwnerInvalid,
                    format!("dlv-{bad} was never issued"),
                ));
            }
            let mut released = 0u64;
            for n in ids {
                if consume(shared, st, conn, n, garbage) {
                    released += 1;
                }
            }
            Ok(into_map(json!({"released": u64s(released)})))
        }
        "artifact.open" => {
            let b = Body::exact(body, &["ref", "ownerId"]).map_err(invalid)?;
            let (n, entry) = owned_artifact(shared, st, conn, &b)?;
            let rel = if entry.sealed {
                shared.store.sealed_rel(n)
            } else {
                return Err(refuse(
                    ErrorCode::ArtifactUnsealed,
                    format!("a-{n} is not sealed"),
                ));
            };
            Ok(into_map(
                json!({"readLocation": {"storeId": shared.store_id.as_str(), "relativePath": rel}}),
            ))
        }
        "artifact.retain" => {
            let b = Body::exact(body, &["ref", "ownerId"]).map_err(invalid)?;
            let (n, entry) = owned_artifact(shared, st, conn, &b)?;
            if !entry.sealed {
                return Err(refuse(
                    ErrorCode::ArtifactUnsealed,
                    format!("a-{n} is not sealed"),
                ));
            }
            let own = new_hold(shared, st, conn, n, false)?;
            Ok(into_map(json!({"ownerId": spelled("own", own)})))
        }
        "artifact.release" => {
            let b = Body::exact(body, &["ownerIds"]).map_err(invalid)?;
            let ids = batch_ids(shared, &b, "ownerIds", "own")?;
            let c = st
                .conns
                .get_mut(&conn)
                .ok_or_else(|| invalid("connection gone"))?;
            if let Some(bad) = ids.iter().find(|n| **n > c.next_own) {
                return Err(refuse(
                    ErrorCode::OwnerInvalid,
                    format!("own-{bad} was never issued"),
                ));
            }
            let mut arts = Vec::new();
            for n in ids {
                if let Some(h) = c.holds.remove(&n) {
                    arts.push(h.artifact);
                }
            }
            let released = arts.len() as u64;
            drop_roots(st, &arts, garbage);
            Ok(into_map(json!({"released": u64s(released)})))
        }
        other => Err(invalid(format!("unknown operation {other}"))),
    }
}

fn batch_ids(
    shared: &Shared,
    b: &Body<'_>,
    field: &str,
    prefix: &str,
) -> Result<Vec<u64>, Refusal> {
    let items = b
        .value(field)
        .as_array()
        .filter(|a| !a.is_empty() && a.len() <= shared.limits.max_batch)
        .ok_or_else(|| invalid(format!("`{field}` is 1..={} ids", shared.limits.max_batch)))?;
    items
        .iter()
        .map(|v| v.as_str().and_then(|s| unspell(prefix, s)))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| invalid(format!("`{field}` holds {prefix}-<U64> ids")))
}

fn retained_size(st: &State, p: &Publication) -> u64 {
    p.artifacts
        .iter()
        .filter_map(|a| st.artifacts.get(a))
        .map(|a| a.byte_length)
        .sum()
}

fn add_roots(st: &mut State, arts: &[u64]) {
    for a in arts {
        if let Some(e) = st.artifacts.get_mut(a) {
            e.roots += 1;
        }
    }
}

fn drop_roots(st: &mut State, arts: &[u64], garbage: &mut Vec<String>) {
    for a in arts {
        let gone = st.artifacts.get_mut(a).is_some_and(|e| {
            e.roots = e.roots.saturating_sub(1);
            e.roots == 0
        });
        if gone && let Some(e) = st.artifacts.remove(a) {
            st.store_bytes -= e.reserved;
            garbage.push(format!("a-{a}{}", if e.sealed { "" } else { ".staging" }));
        }
    }
}

fn new_hold(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    artifact: u64,
    writer: bool,
) -> Result<u64, Refusal> {
    let limit = shared.limits.max_owners_per_client - shared.limits.reserved_owners_per_client;
    let c = st
        .conns
        .get_mut(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    if c.owners() >= limit {
        return Err(refuse(
            ErrorCode::QuotaExceeded,
            "too many owner roots on this connection",
        ));
    }
    c.next_own += 1;
    let own = c.next_own;
    c.holds.insert(own, Hold { artifact, writer });
    add_roots(st, &[artifact]);
    Ok(own)
}

/// Resolves `{ref, ownerId}` to an artifact this connection holds a root on.
fn owned_artifact<'s>(
    shared: &Shared,
    st: &'s State,
    conn: ConnId,
    b: &Body<'_>,
) -> Result<(u64, &'s ArtifactEntry), Refusal> {
    let reference: ArtifactRef = flysim_types::payload::from_value(b.value("ref").clone())
        .map_err(|e| invalid(format!("`ref`: {e}")))?;
    let owner = OwnerToken::parse(b.str("ownerId").map_err(invalid)?)
        .map_err(|e| invalid(e.to_string()))?;
    let attachment = Attachment {
        name: Id::parse("ref").unwrap_or_else(|_| Id::from_static("router")),
        reference,
        owner_id: owner,
    };
    let n = check_owned(shared, st, conn, &attachment)?;
    let entry = st
        .artifacts
        .get(&n)
        .ok_or_else(|| refuse(ErrorCode::ArtifactGone, "gone"))?;
    Ok((n, entry))
}

/// Checks that `attachment`'s owner is a live root of `conn` on the artifact its ref names, and
/// that the ref agrees with the artifact. Returns the artifact number.
fn check_owned(shared: &Shared, st: &State, conn: ConnId, a: &Attachment) -> Result<u64, Refusal> {
    let r = &a.reference;
    if r.store_id != shared.store_id {
        return Err(refuse(
            ErrorCode::ArtifactGone,
            format!("store {} is not this router's store", r.store_id),
        ));
    }
    let n = unspell("a", r.artifact_id.as_str()).ok_or_else(|| {
        refuse(
            ErrorCode::ArtifactGone,
            format!("no artifact {}", r.artifact_id),
        )
    })?;
    let c = st
        .conns
        .get(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    let holds = match a.owner_id {
        OwnerToken::Hold(h) => c.holds.get(&h.0).is_some_and(|h| h.artifact == n),
        OwnerToken::Delivery(d) => c
            .deliveries
            .get(&d.0)
            .is_some_and(|d| d.artifacts.contains(&n)),
    };
    if !holds {
        return Err(refuse(
            ErrorCode::OwnerInvalid,
            format!(
                "{} is not a live root of {} on this connection",
                a.owner_id, r.artifact_id
            ),
        ));
    }
    let e = st.artifacts.get(&n).ok_or_else(|| {
        refuse(
            ErrorCode::ArtifactGone,
            format!("{} is gone", r.artifact_id),
        )
    })?;
    if !e.sealed {
        return Err(refuse(
            ErrorCode::ArtifactUnsealed,
            format!("{} is not sealed", r.artifact_id),
        ));
    }
    if r.byte_length.get() != e.byte_length
        || *r.content_type != *e.content_type
        || r.digest != e.digest
    {
        return Err(refuse(
            ErrorCode::ArtifactMismatch,
            format!("the ref disagrees with {}", r.artifact_id),
        ));
    }
    Ok(n)
}

/// Validates every attachment; returns the unique artifact numbers (one root each).
fn check_attachments(
    shared: &Shared,
    st: &State,
    conn: ConnId,
    attachments: &[Attachment],
) -> Result<Vec<u64>, Refusal> {
    let mut arts = Vec::new();
    for a in attachments {
        let n = check_owned(shared, st, conn, a)?;
        if !arts.contains(&n) {
            arts.push(n);
        }
    }
    Ok(arts)
}

fn rpc_call(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
    garbage: &mut Vec<String>,
) -> Result<Map<String, Value>, Refusal> {
    let _ = garbage;
    let b = Body::exact(
        &env.body,
        &[
            "callId",
            "target",
            "expectedIncarnation",
            "method",
            "payload",
        ],
    )
    .map_err(invalid)?;
    let serial = b
        .str("callId")
        .ok()
        .and_then(|s| unspell("call", s))
        .ok_or_else(|| invalid("`callId` is call-<U64>"))?;
    {
        let c = st
            .conns
            .get_mut(&conn)
            .ok_or_else(|| invalid("connection gone"))?;
        if c.call_watermark.is_some_and(|w| serial <= w) {
            return Err(invalid(format!("call-{serial} is reused or retired")));
        }
        c.call_watermark = Some(serial);
        if c.active_calls.len() >= shared.limits.max_active_calls_per_client {
            return Err(refuse(ErrorCode::Backpressure, "too many active calls"));
        }
    }
    let target = b.name("target").map_err(invalid)?;
    let expected = b.opt_str("expectedIncarnation").map_err(invalid)?;
    let method = b.str("method").map_err(invalid)?;
    check_method(method).map_err(invalid)?;
    let payload = b.object("payload").map_err(invalid)?;
    let Some(svc) = st.services.get(target) else {
        return Err(refuse(ErrorCode::NoService, format!("no service {target}")));
    };
    if let Some(expected) = expected
        && shared.parse_incarnation("svc", expected) != Some(svc.incarnation)
    {
        return Err(refuse(
            ErrorCode::TargetChanged,
            format!(
                "{target} is now {}",
                shared.incarnation("svc", svc.incarnation)
            ),
        ));
    }
    let dispatch_now = svc.in_flight < svc.max_in_flight;
    if !dispatch_now && svc.queue.len() >= svc.max_queued as usize {
        return Err(refuse(
            ErrorCode::Backpressure,
            format!("{target} has no queue space"),
        ));
    }
    let svc_conn = svc.conn;
    let incarnation = svc.incarnation;
    let arts = check_attachments(shared, st, conn, &env.attachments)?;
    let caller = st
        .conns
        .get(&conn)
        .and_then(|c| c.client.clone())
        .ok_or_else(|| invalid("no hello"))?;
    let request_body = |dlv: u64| {
        json!({
            "deliveryId": spelled("dlv", dlv),
            "callId": spelled("call", serial),
            "caller": {"clientId": caller.0.as_str(), "clientIncarnation": u64s(caller.1)},
            "target": target,
            "serviceIncarnation": shared.incarnation("svc", incarnation),
            "method": method,
            "payload": payload,
        })
    };
    if !fits(&shared.limits, frame_len, || {
        delivery(
            "rpc.request",
            request_body(u64::MAX),
            rebind(&env.attachments, u64::MAX),
        )
    }) {
        return Err(invalid("the request delivery would exceed 64 KiB"));
    }
    add_roots(st, &arts);
    let key = (conn, serial);
    let (target, method) = (target.to_owned(), method.to_owned());
    // The payload moves from the command into the call (and from there into the delivery).
    let payload = match env.body.remove("payload") {
        Some(Value::Object(payload)) => payload,
        _ => Map::new(),
    };
    st.calls.insert(
        key,
        Call {
            caller,
            target: target.clone(),
            incarnation,
            method,
            payload,
            attachments: std::mem::take(&mut env.attachments),
            artifacts: arts,
            state: CallState::Queued,
            cell: Arc::new(AtomicU8::new(CELL_PENDING)),
        },
    );
    if let Some(c) = st.conns.get_mut(&conn) {
        c.active_calls.insert(serial);
    }
    if let Some(svc) = st.services.get_mut(&target) {
        svc.queue.push_back(key);
    }
    pump_service(shared, st, &target);
    let _ = svc_conn;
    Ok(into_map(
        json!({"accepted": true, "serviceIncarnation": shared.incarnation("svc", incarnation)}),
    ))
}

/// Moves queued calls to the service's connection while it has in-flight credit.
fn pump_service(shared: &Shared, st: &mut State, name: &str) {
    loop {
        let Some(svc) = st.services.get_mut(name) else {
            return;
        };
        if svc.in_flight >= svc.max_in_flight {
            return;
        }
        let Some(key) = svc.queue.pop_front() else {
            return;
        };
        svc.in_flight += 1;
        let svc_conn = svc.conn;
        let Some(c) = st.conns.get_mut(&svc_conn) else {
            return;
        };
        c.next_dlv += 1;
        let dlv = c.next_dlv;
        let Some(call) = st.calls.get_mut(&key) else {
            continue;
        };
        call.state = CallState::InFlight {
            conn: svc_conn,
            dlv,
        };
        let mut body = Map::new();
        body.insert("deliveryId".into(), Value::String(spelled("dlv", dlv)));
        body.insert("callId".into(), Value::String(spelled("call", key.1)));
        body.insert("caller".into(), peer(&call.caller));
        body.insert("target".into(), Value::String(call.target.clone()));
        body.insert(
            "serviceIncarnation".into(),
            Value::String(shared.incarnation("svc", call.incarnation)),
        );
        body.insert("method".into(), Value::String(call.method.clone()));
        body.insert(
            "payload".into(),
            Value::Object(std::mem::take(&mut call.payload)),
        );
        let env = Envelope {
            id: String::new(),
            reply_to: None,
            kind: Kind::Delivery,
            op: "rpc.request".into(),
            body,
            attachments: rebind(&call.attachments, dlv),
        };
        let cell = Arc::clone(&call.cell);
        let arts = call.artifacts.clone();
        if let Some(c) = st.conns.get_mut(&svc_conn) {
            c.deliveries.insert(
                dlv,
                Delivery {
                    artifacts: arts,
                    kind: DeliveryKind::Request,
                },
            );
            c.outbox.push(Lane::Rpc, Out::Request(env, cell));
        }
    }
}

/// Finds the call a responder's `{callId, requestDeliveryId}` names. `None` when it is already
/// answered or released (the correlation is retired).
fn responder_call(
    st: &State,
    conn: ConnId,
    b: &Body<'_>,
) -> Result<(Option<CallKey>, u64), Refusal> {
    let serial = b
        .str("callId")
        .ok()
        .and_then(|s| unspell("call", s))
        .ok_or_else(|| invalid("`callId` is call-<U64>"))?;
    let dlv = b
        .str("requestDeliveryId")
        .ok()
        .and_then(|s| unspell("dlv", s))
        .ok_or_else(|| invalid("`requestDeliveryId` is dlv-<U64>"))?;
    let key = st.calls.iter().find_map(|(k, call)| match call.state {
        CallState::InFlight { conn: c, dlv: d } | CallState::Detached { conn: c, dlv: d }
            if c == conn && d == dlv && k.1 == serial =>
        {
            Some(*k)
        }
        _ => None,
    });
    Ok((key, serial))
}

/// Ends a dispatched call: delivers the result (or `CALL_GONE` when released without a reply) to
/// a still-waiting caller, returns the service's credit and pumps its queue. Returns whether a
/// result was routed.
fn finish_call(shared: &Shared, st: &mut State, key: CallKey, result: Option<Answer>) -> bool {
    let Some(call) = st.calls.remove(&key) else {
        return false;
    };
    if let Some(svc) = st.services.get_mut(&call.target)
        && svc.incarnation == call.incarnation
    {
        svc.in_flight = svc.in_flight.saturating_sub(1);
    }
    let waiting = matches!(call.state, CallState::InFlight { .. });
    let mut routed = false;
    if waiting && let Some(caller) = st.conns.get_mut(&key.0) {
        caller.active_calls.remove(&key.1);
        match result {
            Some((outcome, attachments, arts, responder)) => {
                caller.next_dlv += 1;
                let dlv = caller.next_dlv;
                caller.deliveries.insert(
                    dlv,
                    Delivery {
                        artifacts: arts.clone(),
                        kind: DeliveryKind::Result { call: key.1 },
                    },
                );
                let mut body = Map::new();
                body.insert("deliveryId".into(), Value::String(spelled("dlv", dlv)));
                body.insert("callId".into(), Value::String(spelled("call", key.1)));
                body.insert("responder".into(), peer(&responder));
                body.insert(
                    "serviceIncarnation".into(),
                    Value::String(shared.incarnation("svc", call.incarnation)),
                );
                body.insert("outcome".into(), Value::Object(outcome));
                let env = Envelope {
                    id: String::new(),
                    reply_to: None,
                    kind: Kind::Delivery,
                    op: "rpc.result".into(),
                    body,
                    attachments: rebind(&attachments, dlv),
                };
                caller.outbox.push(Lane::Rpc, Out::Frame(env));
                add_roots(st, &arts);
                routed = true;
            }
            None => {
                push_control(
                    &shared.limits,
                    caller,
                    notice(
                        "call.failed",
                        json!({"callId": spelled("call", key.1), "code": "CALL_GONE",
                               "message": "the responder released the call without replying",
                               "dispatch": "dispatched"}),
                    ),
                );
            }
        }
    }
    let target = call.target.clone();
    pump_service(shared, st, &target);
    routed
}

fn rpc_reply(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    env: &mut Envelope,
    frame_len: usize,
) -> Result<Map<String, Value>, Refusal> {
    let b = Body::exact(&env.body, &["callId", "requestDeliveryId", "outcome"]).map_err(invalid)?;
    let outcome = b.object("outcome").map_err(invalid)?;
    let (key, serial) = responder_call(st, conn, &b)?;
    let Some(key) = key else {
        return Err(refuse(
            ErrorCode::CallGone,
            format!("call-{serial} is answered or unknown"),
        ));
    };
    let arts = check_attachments(shared, st, conn, &env.attachments)?;
    let responder = st
        .conns
        .get(&conn)
        .and_then(|c| c.client.clone())
        .ok_or_else(|| invalid("no hello"))?;
    if !fits(&shared.limits, frame_len, || {
        delivery(
            "rpc.result",
            json!({"outcome": outcome, "responder": {"clientId": responder.0.as_str(), "clientIncarnation": u64s(u64::MAX)}, "deliveryId": spelled("dlv", u64::MAX), "callId": spelled("call", u64::MAX), "serviceIncarnation": LONGEST_BUS_ID}),
            rebind(&env.attachments, u64::MAX),
        )
    }) {
        return Err(invalid("the result delivery would exceed 64 KiB"));
    }
    // The outcome moves from the command into the result delivery.
    let outcome = match env.body.remove("outcome") {
        Some(Value::Object(outcome)) => outcome,
        _ => Map::new(),
    };
    let routed = finish_call(
        shared,
        st,
        key,
        Some((
            outcome,
            std::mem::take(&mut env.attachments),
            arts,
            responder,
        )),
    );
    Ok(into_map(json!({"routed": routed})))
}

/// `rpc.cancel` from the caller: the complete state enum of contracts §3.6.
fn cancel(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    serial: u64,
    garbage: &mut Vec<String>,
) -> &'static str {
    let key = (conn, serial);
    let Some(call) = st.calls.get(&key) else {
        let completed = st.conns.get(&conn).is_some_and(|c| {
            c.deliveries
                .values()
                .any(|d| matches!(d.kind, DeliveryKind::Result { call } if call == serial))
        });
        return if completed { "completed" } else { "call-gone" };
    };
    if !matches!(call.state, CallState::Queued | CallState::InFlight { .. }) {
        return "call-gone";
    }
    let not_dispatched = match call.state {
        CallState::Queued => true,
        _ => call
            .cell
            .compare_exchange(
                CELL_PENDING,
                CELL_CANCELLED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok(),
    };
    if let Some(c) = st.conns.get_mut(&conn) {
        c.active_calls.remove(&serial);
    }
    if not_dispatched {
        let call = st.calls.remove(&key);
        if let Some(call) = call {
            if let Some(svc) = st.services.get_mut(&call.target) {
                svc.queue.retain(|k| *k != key);
                if let CallState::InFlight { .. } = call.state {
                    svc.in_flight = svc.in_flight.saturating_sub(1);
                }
            }
            if let CallState::InFlight { conn: sc, dlv } = call.state
                && let Some(c) = st.conns.get_mut(&sc)
            {
                c.deliveries.remove(&dlv);
            }
            drop_roots(st, &call.artifacts, garbage);
            pump_service(shared, st, &call.target);
        }
        "cancelled-before-dispatch"
    } else {
        if let Some(call) = st.calls.get_mut(&key)
            && let CallState::InFlight { conn, dlv } = call.state
        {
            call.state = CallState::Detached { conn, dlv };
        }
        "execution-unknown"
    }
}

fn subscribe(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let b = Body::exact(
        body,
        &["topic", "mode", "maxQueued", "maxInFlight", "replayLatest"],
    )
    .map_err(invalid)?;
    let topic = b.name("topic").map_err(invalid)?;
    let mode = match b.str("mode").map_err(invalid)? {
        "latest" => Mode::Latest,
        "bounded" => Mode::Bounded,
        other => return Err(invalid(format!("`mode` is latest or bounded, not {other}"))),
    };
    let l = &shared.limits;
    let (max_queued, max_in_flight) = match mode {
        Mode::Latest => (
            b.count("maxQueued", 1).map_err(invalid)?,
            b.count("maxInFlight", l.max_latest_in_flight)
                .map_err(invalid)?,
        ),
        Mode::Bounded => (
            b.count("maxQueued", l.max_bounded_queued)
                .map_err(invalid)?,
            b.count("maxInFlight", l.max_bounded_in_flight)
                .map_err(invalid)?,
        ),
    };
    let replay = b.bool("replayLatest").map_err(invalid)?;
    let Some(t) = st.topics.get(topic) else {
        return Err(refuse(
            ErrorCode::NoTopic,
            format!("topic {topic} is not declared"),
        ));
    };
    let per_client = st.conns.get(&conn).map_or(0, |c| c.subs.len());
    if per_client >= l.max_subscriptions_per_client || st.subs.len() >= l.max_subscriptions {
        return Err(refuse(ErrorCode::QuotaExceeded, "too many subscriptions"));
    }
    let incarnation = t.incarnation;
    let retained = if replay { t.retained_msg.clone() } else { None };
    st.next_sub += 1;
    let id = st.next_sub;
    let mut queue = VecDeque::new();
    if let Some(p) = retained {
        add_roots(st, &p.artifacts);
        queue.push_back(p);
    }
    st.subs.insert(
        id,
        Sub {
            conn,
            topic: topic.to_owned(),
            incarnation,
            mode,
            max_queued,
            max_in_flight,
            queue,
            in_flight: 0,
            replaced: 0,
        },
    );
    if let Some(t) = st.topics.get_mut(topic) {
        t.subscribers.insert(id);
    }
    if let Some(c) = st.conns.get_mut(&conn) {
        c.subs.insert(id);
    }
    let reply = into_map(
        json!({"subscriptionId": spelled("sub", id), "topicIncarnation": shared.incarnation("top", incarnation)}),
    );
    pump_sub(shared, st, id);
    Ok(reply)
}

fn publish(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    env: &Envelope,
    frame_len: usize,
    garbage: &mut Vec<String>,
) -> Result<Map<String, Value>, Refusal> {
    let b = Body::exact(&env.body, &["topic", "payload"]).map_err(invalid)?;
    let name = b.name("topic").map_err(invalid)?;
    let payload = b.object("payload").map_err(invalid)?;
    let Some(t) = st.topics.get(name) else {
        return Err(refuse(
            ErrorCode::NoTopic,
            format!("topic {name} is not declared"),
        ));
    };
    let arts = check_attachments(shared, st, conn, &env.attachments)?;
    let build = || {
        delivery(
            "topic.message",
            json!({"deliveryId": spelled("dlv", u64::MAX), "subscriptionId": spelled("sub", u64::MAX), "topic": name,
                   "topicIncarnation": LONGEST_BUS_ID, "topicSequence": u64s(u64::MAX), "replaced": u64s(u64::MAX), "payload": payload}),
            rebind(&env.attachments, u64::MAX),
        )
    };
    if !fits(&shared.limits, frame_len, build) {
        return Err(invalid("the topic message would exceed 64 KiB"));
    }
    // Admission: every bounded subscriber must have room, or nothing happens at all.
    let subscribers: Vec<u64> = t.subscribers.iter().copied().collect();
    for id in &subscribers {
        let Some(s) = st.subs.get(id) else { continue };
        if s.mode == Mode::Bounded {
            let queued_bytes: u64 = st
                .subs
                .values()
                .filter(|o| o.conn == s.conn && o.mode == Mode::Bounded)
                .map(|o| o.queue.len() as u64 * frame_len as u64)
                .sum();
            if s.queue.len() >= s.max_queued as usize
                || queued_bytes + frame_len as u64 > shared.limits.max_queued_bytes_per_client
            {
                return Err(refuse(
                    ErrorCode::Backpressure,
                    format!("subscription sub-{id} on {name} is full"),
                ));
            }
        }
    }
    let retained = t.retained;
    if retained {
        let bytes: u64 = arts
            .iter()
            .filter_map(|a| st.artifacts.get(a))
            .map(|a| a.byte_length)
            .sum();
        let old = t.retained_msg.as_ref().map_or(0, |p| retained_size(st, p));
        if st.retained_bytes - old + bytes > shared.limits.max_retained_bytes {
            return Err(refuse(
                ErrorCode::QuotaExceeded,
                "retained bytes would exceed the limit",
            ));
        }
    }
    let Some(t) = st.topics.get_mut(name) else {
        return Err(refuse(ErrorCode::NoTopic, "gone"));
    };
    t.sequence += 1;
    let p = Arc::new(Publication {
        topic: name.to_owned(),
        incarnation: t.incarnation,
        sequence: t.sequence,
        payload: payload.clone(),
        attachments: env.attachments.clone(),
        artifacts: arts,
    });
    let sequence = t.sequence;
    let old_retained = if retained {
        t.retained_msg.replace(Arc::clone(&p))
    } else {
        None
    };
    if retained {
        add_roots(st, &p.artifacts);
        let size = retained_size(st, &p);
        st.retained_bytes += size;
    }
    if let Some(old) = old_retained {
        let size = retained_size(st, &old);
        st.retained_bytes -= size;
        drop_roots(st, &old.artifacts, garbage);
    }
    let mut replaced = 0u64;
    for id in &subscribers {
        let Some(s) = st.subs.get_mut(id) else {
            continue;
        };
        let mut dropped = None;
        if s.mode == Mode::Latest && !s.queue.is_empty() {
            dropped = s.queue.pop_front();
            s.replaced += 1;
            replaced += 1;
        }
        s.queue.push_back(Arc::clone(&p));
        add_roots(st, &p.artifacts);
        if let Some(old) = dropped {
            drop_roots(st, &old.artifacts, garbage);
        }
        pump_sub(shared, st, *id);
    }
    Ok(into_map(
        json!({"topicSequence": u64s(sequence), "subscribers": u64s(subscribers.len() as u64), "replaced": u64s(replaced)}),
    ))
}

/// Delivers queued topic messages while the subscription has in-flight credit.
fn pump_sub(shared: &Shared, st: &mut State, id: u64) {
    loop {
        let Some(s) = st.subs.get_mut(&id) else {
            return;
        };
        if s.in_flight >= s.max_in_flight || s.queue.is_empty() {
            return;
        }
        let limit = shared.limits.max_owners_per_client - shared.limits.reserved_owners_per_client;
        let conn = s.conn;
        if st.conns.get(&conn).is_none_or(|c| c.owners() >= limit) {
            return;
        }
        let Some(s) = st.subs.get_mut(&id) else {
            return;
        };
        let Some(p) = s.queue.pop_front() else { return };
        s.in_flight += 1;
        let replaced = std::mem::take(&mut s.replaced);
        let Some(c) = st.conns.get_mut(&conn) else {
            return;
        };
        c.next_dlv += 1;
        let dlv = c.next_dlv;
        c.deliveries.insert(
            dlv,
            Delivery {
                artifacts: p.artifacts.clone(),
                kind: DeliveryKind::Topic { sub: id },
            },
        );
        let env = delivery(
            "topic.message",
            json!({"deliveryId": spelled("dlv", dlv), "subscriptionId": spelled("sub", id), "topic": p.topic,
                   "topicIncarnation": shared.incarnation("top", p.incarnation), "topicSequence": u64s(p.sequence),
                   "replaced": u64s(replaced), "payload": p.payload}),
            rebind(&p.attachments, dlv),
        );
        c.outbox.push(Lane::Topic, Out::Frame(env));
    }
}

/// Releases one delivery of `conn`; returns whether it was live.
fn consume(
    shared: &Shared,
    st: &mut State,
    conn: ConnId,
    dlv: u64,
    garbage: &mut Vec<String>,
) -> bool {
    let Some(d) = st
        .conns
        .get_mut(&conn)
        .and_then(|c| c.deliveries.remove(&dlv))
    else {
        return false;
    };
    drop_roots(st, &d.artifacts, garbage);
    if let DeliveryKind::Topic { sub } = d.kind
        && let Some(s) = st.subs.get_mut(&sub)
    {
        s.in_flight = s.in_flight.saturating_sub(1);
        pump_sub(shared, st, sub);
    }
    true
}

fn remove_sub(st: &mut State, id: u64, garbage: &mut Vec<String>) {
    let Some(s) = st.subs.remove(&id) else { return };
    if let Some(t) = st.topics.get_mut(&s.topic) {
        t.subscribers.remove(&id);
    }
    if let Some(c) = st.conns.get_mut(&s.conn) {
        c.subs.remove(&id);
    }
    for p in s.queue {
        drop_roots(st, &p.artifacts, garbage);
    }
}

/// Removes a registration: queued calls fail `NO_SERVICE`/not-dispatched, dispatched calls fail
/// `NO_SERVICE`/dispatched (or not-dispatched if their frame was never selected).
fn remove_service(
    shared: &Shared,
    st: &mut State,
    name: &str,
    reason: &str,
    garbage: &mut Vec<String>,
) {
    let Some(svc) = st.services.remove(name) else {
        return;
    };
    if let Some(c) = st.conns.get_mut(&svc.conn) {
        c.services.remove(name);
    }
    let keys: Vec<CallKey> = st
        .calls
        .iter()
        .filter(|(_, c)| c.target == name && c.incarnation == svc.incarnation)
        .map(|(k, _)| *k)
        .collect();
    let mut notified = BTreeSet::new();
    for key in keys {
        let Some(call) = st.calls.get(&key) else {
            continue;
        };
        let dispatch = match call.state {
            CallState::Queued => Dispatch::NotDispatched,
            CallState::InFlight { .. } | CallState::Detached { .. } => {
                if call
                    .cell
                    .compare_exchange(
                        CELL_PENDING,
                        CELL_CANCELLED,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_ok()
                {
                    Dispatch::NotDispatched
                } else {
                    Dispatch::Dispatched
                }
            }
        };
        // A dispatched call on a still-connected service may still be answered after unregister.
        let service_alive = st.conns.contains_key(&svc.conn) && reason == "unregistered";
        if dispatch == Dispatch::Dispatched && service_alive {
            continue;
        }
        let Some(call) = st.calls.remove(&key) else {
            continue;
        };
        if let CallState::InFlight { conn: sc, dlv } | CallState::Detached { conn: sc, dlv } =
            call.state
            && dispatch == Dispatch::NotDispatched
            && let Some(c) = st.conns.get_mut(&sc)
        {
            c.deliveries.remove(&dlv);
        }
        if matches!(call.state, CallState::Queued) || dispatch == Dispatch::NotDispatched {
            drop_roots(st, &call.artifacts, garbage);
        }
        let waiting = !matches!(call.state, CallState::Detached { .. });
        if waiting && let Some(caller) = st.conns.get_mut(&key.0) {
            caller.active_calls.remove(&key.1);
            if notified.insert(key.0) {
                push_control(
                    &shared.limits,
                    caller,
                    notice(
                        "route.removed",
                        json!({"name": name, "serviceIncarnation": shared.incarnation("svc", svc.incarnation), "reason": reason}),
                    ),
                );
            }
            push_control(
                &shared.limits,
                caller,
                notice(
                    "call.failed",
                    json!({"callId": spelled("call", key.1), "code": "NO_SERVICE",
                    "message": format!("service {name} went away ({reason})"), "dispatch": dispatch.as_str()}),
                ),
            );
        }
    }
}

/// Releases everything a closed connection owned (contracts §3.8 "Disconnect").
fn teardown(shared: &Shared, conn: ConnId) {
    let mut garbage = Vec::new();
    {
        let mut st = shared.lock();
        let Some(c) = st.conns.get(&conn) else { return };
        let services: Vec<String> = c.services.iter().cloned().collect();
        let subs: Vec<u64> = c.subs.iter().copied().collect();
        let client = c.client.clone();
        for name in services {
            remove_service(shared, &mut st, &name, "disconnected", &mut garbage);
        }
        for id in subs {
            remove_sub(&mut st, id, &mut garbage);
        }
        // Calls this connection made: queued ones are withdrawn, dispatched ones detached.
        let mine: Vec<u64> = st
            .calls
            .keys()
            .filter(|k| k.0 == conn)
            .map(|k| k.1)
            .collect();
        for serial in mine {
            cancel(shared, &mut st, conn, serial, &mut garbage);
        }
        // Calls this connection was serving (service gone already): answered as gone.
        let Some(c) = st.conns.remove(&conn) else {
            return;
        };
        c.outbox.close();
        let mut arts = Vec::new();
        for d in c.deliveries.into_values() {
            arts.extend(d.artifacts);
        }
        for h in c.holds.into_values() {
            arts.push(h.artifact);
            let _ = h.writer;
        }
        drop_roots(&mut st, &arts, &mut garbage);
        if let Some((id, _)) = client
            && let Some(r) = st.clients.get_mut(id.as_str())
            && r.live == Some(conn)
        {
            r.live = None;
        }
    }
    shared.unlink_all(garbage);
}

async fn allocate(
    shared: &Arc<Shared>,
    conn: ConnId,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let b = Body::exact(body, &["byteLength", "contentType"]).map_err(invalid)?;
    let len = b.u64("byteLength").map_err(invalid)?;
    let content_type = b.str("contentType").map_err(invalid)?;
    if content_type.is_empty()
        || content_type.len() > 127
        || !content_type
            .bytes()
            .all(|c| c.is_ascii_graphic() || c == b' ')
    {
        return Err(invalid(
            "`contentType` is 1..=127 printable ASCII characters",
        ));
    }
    let n = {
        let mut st = shared.lock();
        if len > shared.limits.max_artifact_bytes {
            return Err(refuse(
                ErrorCode::QuotaExceeded,
                format!(
                    "{len} bytes exceed the artifact limit of {}",
                    shared.limits.max_artifact_bytes
                ),
            ));
        }
        if st.store_bytes + len > shared.limits.max_store_bytes {
            return Err(refuse(ErrorCode::QuotaExceeded, "the store is full"));
        }
        st.next_artifact += 1;
        let n = st.next_artifact;
        st.artifacts.insert(
            n,
            ArtifactEntry {
                sealed: false,
                byte_length: len,
                content_type: content_type.to_owned(),
                digest: None,
                roots: 0,
                reserved: len,
            },
        );
        st.store_bytes += len;
        st.peak_store_bytes = st.peak_store_bytes.max(st.store_bytes);
        match new_hold(shared, &mut st, conn, n, true) {
            Ok(own) => (n, own),
            Err(r) => {
                st.artifacts.remove(&n);
                st.store_bytes -= len;
                return Err(r);
            }
        }
    };
    let (n, own) = n;
    // Creating a sparse staging file is two system calls whatever its length: done here,
    // outside the routing lock, rather than paying a blocking-pool hop for it.
    let created = shared.store.create_staging(n, len);
    if created.is_err() {
        let mut garbage = Vec::new();
        {
            let mut st = shared.lock();
            if let Some(c) = st.conns.get_mut(&conn) {
                c.holds.remove(&own);
            }
            drop_roots(&mut st, &[n], &mut garbage);
        }
        shared.unlink_all(garbage);
        return Err(refuse(
            ErrorCode::StoreFailure,
            "cannot create the staging file",
        ));
    }
    Ok(into_map(json!({
        "artifactId": spelled("a", n),
        "generation": "1",
        "ownerId": spelled("own", own),
        "writeLocation": {"storeId": shared.store_id.as_str(), "relativePath": shared.store.staging_rel(n)},
    })))
}

async fn seal(
    shared: &Arc<Shared>,
    conn: ConnId,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let b =
        Body::exact(body, &["artifactId", "generation", "ownerId", "digest"]).map_err(invalid)?;
    let n = b
        .str("artifactId")
        .ok()
        .and_then(|s| unspell("a", s))
        .ok_or_else(|| invalid("`artifactId` is a-<n>"))?;
    if b.u64("generation").map_err(invalid)? != 1 {
        return Err(refuse(
            ErrorCode::ArtifactGone,
            "generation is always 1 in v1",
        ));
    }
    let own = b
        .str("ownerId")
        .ok()
        .and_then(|s| unspell("own", s))
        .ok_or_else(|| invalid("`ownerId` is own-<n>"))?;
    let digest = match b.opt_str("digest").map_err(invalid)? {
        None => None,
        Some(d) => Some(Digest::parse(d).map_err(|e| invalid(e.to_string()))?),
    };
    let len = {
        let mut st = shared.lock();
        let writer = st
            .conns
            .get(&conn)
            .and_then(|c| c.holds.get(&own))
            .is_some_and(|h| h.writer && h.artifact == n);
        if !writer {
            return Err(refuse(
                ErrorCode::OwnerInvalid,
                format!("own-{own} is not the writer of a-{n}"),
            ));
        }
        let Some(e) = st.artifacts.get(&n) else {
            return Err(refuse(ErrorCode::ArtifactGone, format!("a-{n} is gone")));
        };
        let len = e.byte_length;
        // The copy needs room for a second instance until the staging file is unlinked.
        if st.store_bytes + len > shared.limits.max_store_bytes {
            return Err(refuse(
                ErrorCode::QuotaExceeded,
                "the store has no room for the sealed copy",
            ));
        }
        st.store_bytes += len;
        st.peak_store_bytes = st.peak_store_bytes.max(st.store_bytes);
        len
    };
    // The copy runs outside the routing lock: on the blocking pool, except for an artifact no
    // larger than one envelope, whose copy costs less than the hop to another thread.
    let sealed = if usize::try_from(len).is_ok_and(|l| l <= INLINE_SEAL_BYTES) {
        Ok(shared.store.seal(n, len, digest))
    } else {
        let store = Arc::clone(shared);
        tokio::task::spawn_blocking(move || store.store.seal(n, len, digest)).await
    };
    let mut st = shared.lock();
    st.store_bytes -= len;
    let result = match sealed {
        Ok(Ok(())) => Ok(()),
        Ok(Err(SealFailure::Mismatch(why))) => Err(refuse(ErrorCode::ArtifactMismatch, why)),
        Ok(Err(SealFailure::Io(e))) => Err(refuse(ErrorCode::StoreFailure, e.to_string())),
        Err(_) => Err(refuse(ErrorCode::StoreFailure, "the seal task failed")),
    };
    result?;
    let still_writer = st
        .conns
        .get_mut(&conn)
        .and_then(|c| c.holds.get_mut(&own))
        .map(|h| {
            h.writer = false;
        });
    let Some(e) = st.artifacts.get_mut(&n) else {
        drop(st);
        shared.store.unlink(&shared.store.sealed_rel(n));
        return Err(refuse(
            ErrorCode::ArtifactGone,
            format!("a-{n} was released while sealing"),
        ));
    };
    e.sealed = true;
    e.digest = digest;
    let reference = ArtifactRef {
        store_id: shared.store_id.clone(),
        artifact_id: Id::parse(&spelled("a", n)).unwrap_or_else(|_| Id::from_static("router")),
        generation: U64(1),
        byte_length: U64(len),
        content_type: e.content_type.as_str().into(),
        digest,
    };
    let _ = still_writer;
    Ok(into_map(
        json!({"ref": reference, "ownerId": spelled("own", own)}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_differ_between_router_incarnations() {
        assert_ne!(fresh_tag(), fresh_tag());
    }
}
