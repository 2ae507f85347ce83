//! The client SDK: one connection to a router, with typed handles for calls, services,
//! subscriptions and artifacts.
//!
//! Ownership follows contracts §3.8 on this side too: every delivered message owns a shared
//! [`Delivered`] guard, and every artifact extracted from it clones that guard, so the delivery
//! stays alive until the message and all its artifacts are dropped; the last drop queues
//! `delivery.consumed` on the control lane. An explicit hold ([`Artifact::retain`], a sealed
//! writer) is released the same way when its last clone goes. A responder dropped without
//! replying releases the call (`rpc.responder.release`); a pending call dropped before its result
//! sends a best-effort `rpc.cancel`.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_types::workers::ArtifactRef;
use flysim_types::{BusCallId, DeliveryToken, Digest, HoldToken, Id, OwnerToken};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::error::{BusError, WireError};
use crate::link::{FramedSink, FramedSource, Inbound, Link, Sink, Source};
use crate::outbox::{Lane, Outbox};
use crate::store;
use crate::wire::{
    Attachment, Dispatch, Envelope, ErrorCode, Kind, contract_digest, spelled, unspell,
};

/// Releases batched into one command.
const MAX_BATCH: usize = 64;

/// Who this client is.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The client id (one live connection per id).
    pub client_id: Id,
    /// This connection's incarnation; must exceed every earlier one of the same id.
    pub incarnation: u64,
    /// The store root shared with the router, under which location grants resolve.
    pub store_root: PathBuf,
}

/// The identity of the other end of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its client id (shared: a peer is copied onto every call).
    pub client_id: Arc<str>,
    /// Its incarnation.
    pub incarnation: u64,
}

enum Cmd {
    Command {
        op: &'static str,
        body: Map<String, Value>,
        attachments: Vec<Attachment>,
        reply: Option<oneshot::Sender<Result<Map<String, Value>, BusError>>>,
    },
    Consumed(u64),
    Release(u64),
}

type ReplySender = oneshot::Sender<Result<Map<String, Value>, BusError>>;
type ReplyReceiver = oneshot::Receiver<Result<Map<String, Value>, BusError>>;

struct ClientState {
    next_call: u64,
    pending: BTreeMap<u64, (&'static str, ReplySender)>,
    calls: BTreeMap<u64, oneshot::Sender<Result<CallResult, BusError>>>,
    services: BTreeMap<String, mpsc::UnboundedSender<Request>>,
    subs: BTreeMap<u64, mpsc::UnboundedSender<Message>>,
    max_sub: u64,
    early: BTreeMap<u64, Vec<Message>>,
    lost: Option<String>,
    next_local: u64,
}

struct Inner {
    outbox: Outbox<Cmd>,
    state: Mutex<ClientState>,
    store_root: PathBuf,
    /// Opaque in-process shortcuts to services, by exact service name (see
    /// [`Client::offer_local`]); the bus never calls them.
    local: Mutex<BTreeMap<String, LocalHandle>>,
}

/// An opaque in-process shortcut to a service (contracts §3.11), offered by whoever runs the
/// service in this process and used, if at all, by the layer above the bus.
pub type LocalHandle = Arc<dyn std::any::Any + Send + Sync>;

fn lock_local(inner: &Inner) -> MutexGuard<'_, BTreeMap<String, LocalHandle>> {
    inner
        .local
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, ClientState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lost(&self) -> BusError {
        BusError::lost(
            self.lock()
                .lost
                .clone()
                .unwrap_or_else(|| "the connection is closed".into()),
        )
    }
}

/// Ends the connection when the last user handle goes.
struct Life(Arc<Inner>);

impl Drop for Life {
    fn drop(&mut self) {
        self.0.outbox.kill();
    }
}

/// What the router said in the hello, and who this client said it was.
#[derive(Debug, Clone)]
pub struct HelloInfo {
    /// `router-<tag>`.
    pub router_id: String,
    /// `conn-<n>`.
    pub connection_id: String,
    /// The router's limits object.
    pub limits: Map<String, Value>,
    /// This client's identity, as the router stamps it on its calls.
    pub identity: Peer,
}

/// A connection to a router. Cloning shares it; dropping every clone (and every service,
/// subscription and pending call) closes it.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    _life: Arc<Life>,
    hello: Arc<HelloInfo>,
    /// The store id of this connection's in-memory artifacts, spelled once
    /// ([`Client::local_artifact`]; `None`: the router's ids do not make a valid one).
    local_store: Arc<std::sync::OnceLock<Option<Id>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("router_id", &self.hello.router_id)
            .field("connection_id", &self.hello.connection_id)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Says hello over `stream` and checks the router's contract digest.
    ///
    /// # Errors
    ///
    /// [`BusError::ContractMismatch`] for a router built from another contract, the router's
    /// refusal of the hello, or [`BusError::RouterLost`].
    pub async fn connect<S>(stream: S, options: ClientOptions) -> Result<Self, BusError>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        Self::connect_halves(reader, writer, options).await
    }

    /// As [`Client::connect`], given the stream's two halves.
    ///
    /// # Errors
    ///
    /// As [`Client::connect`].
    pub async fn connect_halves<R, W>(
        reader: R,
        writer: W,
        options: ClientOptions,
    ) -> Result<Self, BusError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::connect_io(FramedSource::new(reader), FramedSink::new(writer), options).await
    }

    /// Connects over an in-process [`Link`] from [`crate::Router::connect_link_as`]: the same
    /// client, with envelopes handed over as values rather than framed JSON.
    ///
    /// # Errors
    ///
    /// As [`Client::connect`].
    pub async fn connect_link(link: Link, options: ClientOptions) -> Result<Self, BusError> {
        let (source, sink) = link.split(true);
        Self::connect_io(source, sink, options).await
    }

    async fn connect_io(
        source: impl Source,
        sink: impl Sink,
        options: ClientOptions,
    ) -> Result<Self, BusError> {
        let inner = Arc::new(Inner {
            outbox: Outbox::new(),
            state: Mutex::new(ClientState {
                next_call: 0,
                pending: BTreeMap::new(),
                calls: BTreeMap::new(),
                services: BTreeMap::new(),
                subs: BTreeMap::new(),
                max_sub: 0,
                early: BTreeMap::new(),
                lost: None,
                next_local: 0,
            }),
            store_root: options.store_root,
            local: Mutex::new(BTreeMap::new()),
        });
        tokio::spawn(write_loop(sink, Arc::clone(&inner)));
        tokio::spawn(read_loop(source, Arc::clone(&inner)));
        let life = Arc::new(Life(Arc::clone(&inner)));
        let identity = Peer {
            client_id: options.client_id.as_str().into(),
            incarnation: options.incarnation,
        };
        let body = json!({
            "clientId": options.client_id.as_str(),
            "clientIncarnation": options.incarnation.to_string(),
            "supportedMajors": [1],
        });
        let value = command(&inner, "bus.hello", into_map(body), Vec::new()).await?;
        let digest = value
            .get("contractDigest")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let ours = contract_digest().hex();
        if digest != ours {
            inner.outbox.kill();
            return Err(BusError::ContractMismatch {
                router: digest.to_owned(),
                client: ours,
            });
        }
        let text = |k: &str| {
            value
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let hello = HelloInfo {
            router_id: text("routerId"),
            connection_id: text("connectionId"),
            limits: value
                .get("limits")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            identity,
        };
        Ok(Self {
            inner,
            _life: life,
            local_store: Arc::default(),
            hello: Arc::new(hello),
        })
    }

    /// Connects to a router's Unix-domain socket.
    ///
    /// # Errors
    ///
    /// [`BusError::Connect`], then as [`Client::connect`].
    pub async fn connect_unix(path: &Path, options: ClientOptions) -> Result<Self, BusError> {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        let (reader, writer) =
            crate::uds::split_tokio(stream).map_err(|source| BusError::Connect {
                path: path.to_owned(),
                source,
            })?;
        Self::connect_halves(reader, writer, options).await
    }

    /// What the router said in the hello.
    #[must_use]
    pub fn hello(&self) -> &HelloInfo {
        &self.hello
    }

    /// Whether the connection is gone (every call on it fails with `ROUTER_LOST`).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.inner.lock().lost.is_some()
    }

    /// Resolves once the connection is gone.
    pub async fn closed(&self) {
        self.inner.outbox.killed().await;
    }

    /// The error a call on a closed connection fails with.
    #[must_use]
    pub fn lost_error(&self) -> BusError {
        self.inner.lost()
    }

    /// Takes the next bus call id of this connection without making a bus call (a call served
    /// in process, see [`Client::offer_local`]): ids stay unique per connection and increasing;
    /// the router accepts the gap.
    #[must_use]
    pub fn reserve_call_id(&self) -> BusCallId {
        let mut st = self.inner.lock();
        st.next_call += 1;
        BusCallId(st.next_call)
    }

    /// Offers an in-process shortcut to the service `name` (contracts §3.11, the local lane):
    /// an opaque handle that a layer above the bus may use instead of a bus call when the
    /// service runs in this process. The bus stores it, by exact name, and never calls it; every
    /// clone of this client sees it.
    pub fn offer_local(&self, name: &str, handle: LocalHandle) {
        lock_local(&self.inner).insert(name.to_owned(), handle);
    }

    /// The in-process shortcut offered for `name`, if any.
    #[must_use]
    pub fn local(&self, name: &str) -> Option<LocalHandle> {
        lock_local(&self.inner).get(name).cloned()
    }

    /// An in-memory artifact (contracts §3.11): the bytes stay in this process, with no store
    /// file and no seal copy, under a ref of this connection's local store. It can be read and
    /// passed to in-process services; a bus call or publication needs it
    /// [promoted](Artifact::promote) to a sealed copy first.
    ///
    /// The bytes are shared, never copied: a producer that keeps its own clone of `bytes` can
    /// refill that buffer in place once every handle on the artifact is gone (`Arc::get_mut`
    /// succeeds only then), so a per-step artifact need not be a fresh allocation every step.
    ///
    /// # Errors
    ///
    /// [`WireError`] for a content type that is not 1..=127 printable ASCII characters.
    pub fn local_artifact(
        &self,
        bytes: impl Into<Arc<Vec<u8>>>,
        content_type: &str,
        digest: Option<Digest>,
    ) -> Result<Artifact, BusError> {
        let bytes: Arc<Vec<u8>> = bytes.into();
        if content_type.is_empty()
            || content_type.len() > 127
            || !content_type
                .bytes()
                .all(|c| c.is_ascii_graphic() || c == b' ')
        {
            return Err(
                WireError::invalid("`contentType` is 1..=127 printable ASCII characters").into(),
            );
        }
        let n = {
            let mut st = self.inner.lock();
            st.next_local += 1;
            st.next_local
        };
        let store_id = self
            .local_store
            .get_or_init(|| {
                let tag = self.hello.router_id.strip_prefix("router-");
                let conn = self.hello.connection_id.strip_prefix("conn-");
                let text = format!(
                    "local-{}-{}",
                    tag.unwrap_or_default(),
                    conn.unwrap_or_default()
                );
                Id::parse(&text).ok()
            })
            .clone()
            .ok_or_else(|| {
                WireError::invalid(format!(
                    "router `{}` and connection `{}` make no local store id",
                    self.hello.router_id, self.hello.connection_id
                ))
            })?;
        let id = |text: String| {
            Id::parse(&text).map_err(|e| BusError::from(WireError::invalid(e.to_string())))
        };
        let reference = ArtifactRef {
            store_id,
            artifact_id: id(spelled("a", n))?,
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(bytes.len() as u64),
            content_type: content_type.into(),
            digest,
        };
        Ok(Artifact {
            reference,
            owner: Owner::Local(Arc::new(LocalArtifact {
                bytes,
                promoted: Mutex::new(None),
            })),
            seal: None,
        })
    }

    /// Sends any command and waits for its reply value (management ops take no attachments).
    ///
    /// # Errors
    ///
    /// [`BusError::Refused`] with the router's code, or [`BusError::RouterLost`].
    pub async fn command(
        &self,
        op: &'static str,
        body: Map<String, Value>,
    ) -> Result<Map<String, Value>, BusError> {
        command(&self.inner, op, body, Vec::new()).await
    }

    /// Registers a service; the name is exclusive while this registration lives.
    ///
    /// # Errors
    ///
    /// `CONFLICT` if anyone (this client included) holds the name.
    pub async fn register(
        &self,
        name: &str,
        max_queued: u32,
        max_in_flight: u32,
    ) -> Result<Service, BusError> {
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.inner.lock();
            if st.services.contains_key(name) {
                return Err(BusError::Refused {
                    op: "service.register".into(),
                    code: ErrorCode::Conflict,
                    message: format!("this client already serves {name}"),
                    dispatch: Dispatch::NotDispatched,
                });
            }
            st.services.insert(name.to_owned(), tx);
        }
        let body = json!({"name": name, "maxQueued": max_queued, "maxInFlight": max_in_flight});
        match self.command("service.register", into_map(body)).await {
            Ok(v) => Ok(Service {
                name: name.to_owned(),
                incarnation: str_field(&v, "serviceIncarnation"),
                rx,
                client: self.clone(),
            }),
            Err(e) => {
                self.inner.lock().services.remove(name);
                Err(e)
            }
        }
    }

    /// Admits a call and returns its pending handle (admission only: accepted is not executed).
    ///
    /// # Errors
    ///
    /// The admission refusal (`NO_SERVICE`, `TARGET_CHANGED`, `BACKPRESSURE`, ...), always
    /// `not-dispatched`.
    pub async fn start_call(
        &self,
        target: &str,
        method: &str,
        payload: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
        expected_incarnation: Option<&str>,
    ) -> Result<PendingCall, BusError> {
        let attachments = attach(attachments)?;
        let (tx, rx) = oneshot::channel();
        let call = {
            let mut st = self.inner.lock();
            if let Some(why) = &st.lost {
                return Err(BusError::lost(why.clone()));
            }
            st.next_call += 1;
            let call = st.next_call;
            st.calls.insert(call, tx);
            call
        };
        let mut pending = PendingCall {
            client: self.clone(),
            call,
            rx: Some(rx),
            service_incarnation: String::new(),
        };
        let mut body = Map::new();
        body.insert("callId".into(), Value::String(spelled("call", call)));
        body.insert("target".into(), Value::String(target.to_owned()));
        body.insert(
            "expectedIncarnation".into(),
            expected_incarnation.map_or(Value::Null, |e| Value::String(e.to_owned())),
        );
        body.insert("method".into(), Value::String(method.to_owned()));
        body.insert("payload".into(), Value::Object(payload));
        match command(&self.inner, "rpc.call", body, attachments).await {
            Ok(v) => {
                pending.service_incarnation = str_field(&v, "serviceIncarnation");
                Ok(pending)
            }
            Err(e) => {
                self.inner.lock().calls.remove(&call);
                pending.rx = None;
                Err(e)
            }
        }
    }

    /// Calls and waits for the terminal result, or until `deadline` (caller-owned).
    ///
    /// # Errors
    ///
    /// The admission refusal, `call.failed` (with its dispatch certainty),
    /// [`BusError::DeadlineElapsed`] or [`BusError::RouterLost`].
    pub async fn call(
        &self,
        target: &str,
        method: &str,
        payload: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
        expected_incarnation: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<CallResult, BusError> {
        self.start_call(target, method, payload, attachments, expected_incarnation)
            .await?
            .result(deadline)
            .await
    }

    /// Declares a topic (`retained` keeps the latest message for late subscribers); returns its
    /// incarnation. A compatible re-declare is fine.
    ///
    /// # Errors
    ///
    /// `CONFLICT` for a re-declare with another retention.
    pub async fn declare_topic(&self, name: &str, retained: bool) -> Result<String, BusError> {
        let body = json!({"name": name, "retained": if retained { "latest" } else { "none" }});
        let v = self.command("topic.declare", into_map(body)).await?;
        Ok(str_field(&v, "topicIncarnation"))
    }

    /// Subscribes to a declared topic.
    ///
    /// # Errors
    ///
    /// `NO_TOPIC`, a range refusal, or a quota.
    pub async fn subscribe(
        &self,
        topic: &str,
        options: SubscribeOptions,
    ) -> Result<Subscription, BusError> {
        let (mode, max_queued) = match options.mode {
            SubscribeMode::Latest => ("latest", 1),
            SubscribeMode::Bounded { max_queued } => ("bounded", max_queued),
        };
        let body = json!({"topic": topic, "mode": mode, "maxQueued": max_queued,
                          "maxInFlight": options.max_in_flight, "replayLatest": options.replay_latest});
        let v = self.command("subscribe", into_map(body)).await?;
        let id = v
            .get("subscriptionId")
            .and_then(Value::as_str)
            .and_then(|s| unspell("sub", s))
            .ok_or_else(|| {
                BusError::from(WireError::invalid("subscribe reply without subscriptionId"))
            })?;
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut st = self.inner.lock();
            st.max_sub = st.max_sub.max(id);
            for early in st.early.remove(&id).unwrap_or_default() {
                let _ = tx.send(early);
            }
            st.subs.insert(id, tx);
        }
        Ok(Subscription {
            id,
            rx,
            client: self.clone(),
        })
    }

    /// Publishes to a declared topic; attachments become roots of every delivery.
    ///
    /// # Errors
    ///
    /// `NO_TOPIC`, `BACKPRESSURE` (a bounded subscriber is full: nothing was delivered), or an
    /// attachment refusal.
    pub async fn publish(
        &self,
        topic: &str,
        payload: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
    ) -> Result<Published, BusError> {
        let attachments = attach(attachments)?;
        let mut body = Map::new();
        body.insert("topic".into(), Value::String(topic.to_owned()));
        body.insert("payload".into(), Value::Object(payload));
        let v = command(&self.inner, "publish", body, attachments).await?;
        let n = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0)
        };
        Ok(Published {
            topic_sequence: n("topicSequence"),
            subscribers: n("subscribers"),
            replaced: n("replaced"),
        })
    }

    /// Allocates an artifact of exactly `byte_length` bytes and opens its staging file.
    ///
    /// # Errors
    ///
    /// `QUOTA_EXCEEDED`, a store failure, or a refused location.
    pub async fn allocate(
        &self,
        byte_length: u64,
        content_type: &str,
    ) -> Result<ArtifactWriter, BusError> {
        let mut writer = allocate_on(&self.inner, byte_length, content_type).await?;
        writer.client = Some(self.clone());
        Ok(writer)
    }
}

/// `artifact.allocate` on a connection, with the staging file opened for writing.
async fn allocate_on(
    inner: &Arc<Inner>,
    byte_length: u64,
    content_type: &str,
) -> Result<ArtifactWriter, BusError> {
    let body = json!({"byteLength": byte_length.to_string(), "contentType": content_type});
    let v = command(inner, "artifact.allocate", into_map(body), Vec::new()).await?;
    let own = v
        .get("ownerId")
        .and_then(Value::as_str)
        .and_then(|s| unspell("own", s))
        .unwrap_or(0);
    let guard = Arc::new(HoldGuard {
        own,
        inner: Arc::clone(inner),
    });
    let location = v.get("writeLocation");
    let rel = location
        .and_then(|l| l.get("relativePath"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let store_id = location
        .and_then(|l| l.get("storeId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let file = store::open_write(&inner.store_root, rel)?;
    Ok(ArtifactWriter {
        client: None,
        inner: Arc::clone(inner),
        artifact_id: str_field(&v, "artifactId"),
        store_id,
        guard,
        byte_length,
        content_type: content_type.to_owned(),
        file: Some(file),
        offset: 0,
    })
}

/// The sealed copy of an in-memory artifact on the connection `inner` (made once, then reused).
async fn promote_on(artifact: &Artifact, inner: &Arc<Inner>) -> Result<Artifact, BusError> {
    let Owner::Local(local) = &artifact.owner else {
        return Ok(artifact.clone());
    };
    let key = Arc::as_ptr(inner) as usize;
    let done = local
        .promoted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, a)| a.clone());
    if let Some(done) = done {
        return Ok(done);
    }
    let reference = &artifact.reference;
    let mut writer = allocate_on(inner, local.bytes.len() as u64, &reference.content_type).await?;
    writer.write(&local.bytes)?;
    let sealed = writer.seal(reference.digest).await?;
    *local
        .promoted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((key, sealed.clone()));
    Ok(sealed)
}

/// How a subscription queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeMode {
    /// One queued value, replaced by newer publications while undelivered.
    Latest,
    /// FIFO without loss; a full queue refuses the publication.
    Bounded {
        /// Queue length, 1..=64 by default.
        max_queued: u32,
    },
}

/// Subscription parameters.
#[derive(Debug, Clone, Copy)]
pub struct SubscribeOptions {
    /// The queue policy.
    pub mode: SubscribeMode,
    /// Deliveries handed out and not yet consumed (credits).
    pub max_in_flight: u32,
    /// Deliver the topic's retained message first.
    pub replay_latest: bool,
}

/// What a publication reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    /// The topic sequence number given to it.
    pub topic_sequence: u64,
    /// Subscribers it was queued for.
    pub subscribers: u64,
    /// Undelivered latest values it replaced.
    pub replaced: u64,
}

/// A registered service: requests arrive in FIFO dispatch order.
pub struct Service {
    name: String,
    incarnation: String,
    rx: mpsc::UnboundedReceiver<Request>,
    client: Client,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("incarnation", &self.incarnation)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The registration's incarnation (callers pin it).
    #[must_use]
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// The next request; `None` once the registration or connection is gone.
    pub async fn next(&mut self) -> Option<Request> {
        self.rx.recv().await
    }

    /// Removes the registration; queued calls fail with `NO_SERVICE`.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`].
    pub async fn unregister(self) -> Result<bool, BusError> {
        self.client.inner.lock().services.remove(&self.name);
        let body = json!({"name": self.name, "serviceIncarnation": self.incarnation});
        let v = self
            .client
            .command("service.unregister", into_map(body))
            .await?;
        Ok(v.get("removed").and_then(Value::as_bool).unwrap_or(false))
    }
}

/// A subscription: messages in topic order.
pub struct Subscription {
    id: u64,
    rx: mpsc::UnboundedReceiver<Message>,
    client: Client,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The next message; `None` once the subscription or connection is gone.
    pub async fn next(&mut self) -> Option<Message> {
        self.rx.recv().await
    }

    /// A message already received, if any.
    pub fn try_next(&mut self) -> Option<Message> {
        self.rx.try_recv().ok()
    }

    /// Ends the subscription; messages already handed out stay valid.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`].
    pub async fn unsubscribe(self) -> Result<bool, BusError> {
        let v = self
            .client
            .command(
                "unsubscribe",
                into_map(json!({"subscriptionId": spelled("sub", self.id)})),
            )
            .await?;
        self.client.inner.lock().subs.remove(&self.id);
        Ok(v.get("removed").and_then(Value::as_bool).unwrap_or(false))
    }
}

/// The consumption guard of one delivery, shared by the message and every artifact taken from
/// it. The last clone dropped queues `delivery.consumed`.
#[derive(Clone)]
pub struct Delivered(Arc<DeliveryGuard>);

impl std::fmt::Debug for Delivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Delivered(dlv-{})", self.0.dlv)
    }
}

impl Delivered {
    /// The delivery's owner token (`dlv-<n>` of this connection).
    #[must_use]
    pub fn token(&self) -> DeliveryToken {
        DeliveryToken(self.0.dlv)
    }
}

struct DeliveryGuard {
    dlv: u64,
    inner: Arc<Inner>,
}

impl Drop for DeliveryGuard {
    fn drop(&mut self) {
        self.inner
            .outbox
            .push(Lane::Control, Cmd::Consumed(self.dlv));
    }
}

struct HoldGuard {
    own: u64,
    inner: Arc<Inner>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        self.inner
            .outbox
            .push(Lane::Control, Cmd::Release(self.own));
    }
}

#[derive(Clone)]
enum Owner {
    Hold(Arc<HoldGuard>),
    Delivery(Arc<DeliveryGuard>),
    /// In memory, in this process: no bus root at all.
    Local(Arc<LocalArtifact>),
}

/// The bytes of an in-memory artifact, and its sealed copy once promoted (per connection).
struct LocalArtifact {
    /// Shared with the producer, which may reuse the buffer once this is dropped.
    bytes: Arc<Vec<u8>>,
    promoted: Mutex<Option<(usize, Artifact)>>,
}

/// An owned artifact: a ref plus a live root on this connection (a hold or a delivery).
#[derive(Clone)]
pub struct Artifact {
    reference: ArtifactRef,
    owner: Owner,
    /// A seal queued but not yet confirmed by the router ([`ArtifactWriter::seal_queued`]).
    seal: Option<Arc<PendingSeal>>,
}

/// The router's answer to a queued seal, awaited at most once and remembered.
struct PendingSeal {
    rx: Mutex<Option<ReplyReceiver>>,
    outcome: tokio::sync::OnceCell<Result<(), (ErrorCode, String)>>,
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("ref", &self.reference.artifact_id)
            .field("owner", &self.owner_token().to_string())
            .finish()
    }
}

impl Artifact {
    /// The artifact's ref.
    #[must_use]
    pub fn reference(&self) -> &ArtifactRef {
        &self.reference
    }

    /// The root this handle stands on. An in-memory artifact (see [`Artifact::is_local`])
    /// stands on none and reports `own-0`, a token the router never issues.
    #[must_use]
    pub fn owner_token(&self) -> OwnerToken {
        match &self.owner {
            Owner::Hold(h) => OwnerToken::Hold(HoldToken(h.own)),
            Owner::Delivery(d) => OwnerToken::Delivery(DeliveryToken(d.dlv)),
            Owner::Local(_) => OwnerToken::Hold(HoldToken(0)),
        }
    }

    /// Whether this is an in-memory artifact ([`Client::local_artifact`]).
    #[must_use]
    pub fn is_local(&self) -> bool {
        matches!(self.owner, Owner::Local(_))
    }

    /// The bytes of an in-memory artifact, borrowed without a copy; `None` for a bus artifact
    /// (read those with [`Artifact::read`]).
    #[must_use]
    pub fn local_bytes(&self) -> Option<&[u8]> {
        match &self.owner {
            Owner::Local(local) => Some(&local.bytes),
            Owner::Hold(_) | Owner::Delivery(_) => None,
        }
    }

    /// Waits for the router's answer to a queued seal ([`ArtifactWriter::seal_queued`]) and
    /// checks that it sealed exactly this ref; immediate for any other artifact.
    ///
    /// # Errors
    ///
    /// The seal's refusal (`ARTIFACT_MISMATCH`, `QUOTA_EXCEEDED`, a store failure, ...), a
    /// sealed ref other than this one, or [`BusError::RouterLost`].
    pub async fn confirm(&self) -> Result<(), BusError> {
        let Some(pending) = &self.seal else {
            return Ok(());
        };
        let outcome = pending
            .outcome
            .get_or_init(|| async {
                let rx = pending
                    .rx
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                let Some(rx) = rx else {
                    return Err((ErrorCode::RouterLost, "the seal was never sent".to_owned()));
                };
                match rx.await {
                    Ok(Ok(v)) => {
                        let sealed: Option<ArtifactRef> = v
                            .get("ref")
                            .cloned()
                            .and_then(|r| flysim_types::payload::from_value(r).ok());
                        if sealed.as_ref() == Some(&self.reference) {
                            Ok(())
                        } else {
                            Err((
                                ErrorCode::ArtifactMismatch,
                                format!("the router sealed {sealed:?}, not {:?}", self.reference),
                            ))
                        }
                    }
                    Ok(Err(e)) => Err((
                        e.bus_code().unwrap_or(ErrorCode::StoreFailure),
                        e.to_string(),
                    )),
                    Err(_) => Err((ErrorCode::RouterLost, "the connection is closed".to_owned())),
                }
            })
            .await;
        outcome
            .clone()
            .map_err(|(code, message)| BusError::Refused {
                op: "artifact.seal".into(),
                code,
                message,
                dispatch: Dispatch::Dispatched,
            })
    }

    fn inner(&self) -> Result<&Arc<Inner>, BusError> {
        match &self.owner {
            Owner::Hold(h) => Ok(&h.inner),
            Owner::Delivery(d) => Ok(&d.inner),
            Owner::Local(_) => Err(BusError::LocationRefused {
                path: self.reference.artifact_id.to_string(),
                reason: "an in-memory artifact has no store file",
            }),
        }
    }

    /// A sealed copy of an in-memory artifact under a hold of `client`'s connection (the same
    /// copy for every later call on that connection); any other artifact is returned as is.
    ///
    /// # Errors
    ///
    /// As [`Client::allocate`] and [`ArtifactWriter::seal`].
    pub async fn promote(&self, client: &Client) -> Result<Self, BusError> {
        promote_on(self, &client.inner).await
    }

    /// Opens the sealed bytes for reading. The file stays readable after every owner is gone.
    ///
    /// # Errors
    ///
    /// `ARTIFACT_GONE`/`OWNER_INVALID` from the router, or a refused location.
    pub async fn open(&self) -> Result<std::fs::File, BusError> {
        let inner = Arc::clone(self.inner()?);
        let body = json!({"ref": self.reference, "ownerId": self.owner_token().to_string()});
        let v = command(&inner, "artifact.open", into_map(body), Vec::new()).await?;
        let location = v
            .get("readLocation")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let store_id = location
            .get("storeId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let rel = location
            .get("relativePath")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if store_id != self.reference.store_id.as_str() {
            return Err(BusError::LocationRefused {
                path: rel.to_owned(),
                reason: "the grant names another store",
            });
        }
        store::open_read(&inner.store_root, rel)
    }

    /// Reads all the bytes.
    ///
    /// # Errors
    ///
    /// As [`Artifact::open`], or a read failure.
    pub async fn read(&self) -> Result<Vec<u8>, BusError> {
        if let Owner::Local(local) = &self.owner {
            return Ok(Vec::clone(&local.bytes));
        }
        let mut file = self.open().await?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| {
            BusError::store(
                "read artifact",
                PathBuf::from(self.reference.artifact_id.as_str()),
                e,
            )
        })?;
        Ok(bytes)
    }

    /// Takes an independent explicit hold on the same bytes.
    ///
    /// # Errors
    ///
    /// As [`Artifact::open`].
    pub async fn retain(&self) -> Result<Self, BusError> {
        if self.is_local() {
            // In-memory bytes are shared, never collected while a handle lives.
            return Ok(self.clone());
        }
        let inner = Arc::clone(self.inner()?);
        let body = json!({"ref": self.reference, "ownerId": self.owner_token().to_string()});
        let v = command(&inner, "artifact.retain", into_map(body), Vec::new()).await?;
        let own = v
            .get("ownerId")
            .and_then(Value::as_str)
            .and_then(|s| unspell("own", s))
            .unwrap_or(0);
        Ok(Self {
            reference: self.reference.clone(),
            owner: Owner::Hold(Arc::new(HoldGuard { own, inner })),
            seal: None,
        })
    }
}

/// A staging artifact being written; [`ArtifactWriter::seal`] makes it immutable. Dropping it
/// unsealed releases it (the router collects the staging file).
pub struct ArtifactWriter {
    /// Keeps the connection open while the writer lives (when allocated through a [`Client`]).
    client: Option<Client>,
    inner: Arc<Inner>,
    artifact_id: String,
    store_id: String,
    guard: Arc<HoldGuard>,
    byte_length: u64,
    content_type: String,
    file: Option<std::fs::File>,
    offset: u64,
}

impl std::fmt::Debug for ArtifactWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactWriter")
            .field("artifact_id", &self.artifact_id)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl ArtifactWriter {
    /// Appends bytes; a write past the allocation fails and writes nothing.
    ///
    /// # Errors
    ///
    /// [`BusError::WritePastAllocation`] or a store failure.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), BusError> {
        let attempted = bytes.len() as u64;
        if self.offset + attempted > self.byte_length {
            return Err(BusError::WritePastAllocation {
                offset: self.offset,
                attempted,
                allocated: self.byte_length,
            });
        }
        if let Some(file) = self.file.as_mut() {
            file.write_all(bytes).map_err(|e| {
                BusError::store("write artifact", PathBuf::from(&self.artifact_id), e)
            })?;
        }
        self.offset += attempted;
        Ok(())
    }

    /// Closes the staging file and seals it; the router checks the length and, if given, the
    /// digest. Returns the artifact under the writer's hold.
    ///
    /// # Errors
    ///
    /// `ARTIFACT_MISMATCH` for a wrong digest, or a store failure.
    pub async fn seal(mut self, digest: Option<Digest>) -> Result<Artifact, BusError> {
        drop(self.file.take());
        let body = json!({
            "artifactId": self.artifact_id,
            "generation": "1",
            "ownerId": spelled("own", self.guard.own),
            "digest": digest.map(|d| d.hex()),
        });
        let v = command(&self.inner, "artifact.seal", into_map(body), Vec::new()).await?;
        let reference: ArtifactRef = v
            .get("ref")
            .cloned()
            .and_then(|r| flysim_types::payload::from_value(r).ok())
            .ok_or_else(|| BusError::from(WireError::invalid("seal reply without a valid ref")))?;
        let _ = (&self.content_type, &self.client);
        Ok(Artifact {
            reference,
            owner: Owner::Hold(Arc::clone(&self.guard)),
            seal: None,
        })
    }

    /// Queues the seal without waiting for the router and returns the artifact at once, under
    /// the writer's hold, with the ref the router will confirm (this store, the allocated id,
    /// generation 1, the allocated length and content type, `digest`). The router handles this
    /// connection's commands in order, so a later call, reply or publication that attaches the
    /// artifact finds it sealed; [`Artifact::confirm`] waits for the router's answer.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`], or an allocation whose ids the router did not spell as ids.
    pub fn seal_queued(mut self, digest: Option<Digest>) -> Result<Artifact, BusError> {
        drop(self.file.take());
        let id = |text: &str| {
            Id::parse(text).map_err(|e| BusError::from(WireError::invalid(e.to_string())))
        };
        let reference = ArtifactRef {
            store_id: id(&self.store_id)?,
            artifact_id: id(&self.artifact_id)?,
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(self.byte_length),
            content_type: self.content_type.as_str().into(),
            digest,
        };
        let mut body = Map::new();
        body.insert("artifactId".into(), Value::String(self.artifact_id.clone()));
        body.insert("generation".into(), Value::String("1".into()));
        body.insert(
            "ownerId".into(),
            Value::String(spelled("own", self.guard.own)),
        );
        body.insert(
            "digest".into(),
            digest.map_or(Value::Null, |d| Value::String(d.hex())),
        );
        let rx = queue_command(&self.inner, "artifact.seal", body, Vec::new())?;
        let _ = &self.client;
        Ok(Artifact {
            reference,
            owner: Owner::Hold(Arc::clone(&self.guard)),
            seal: Some(Arc::new(PendingSeal {
                rx: Mutex::new(Some(rx)),
                outcome: tokio::sync::OnceCell::new(),
            })),
        })
    }
}

/// An admitted call awaiting its result. Dropping it unfinished sends a best-effort cancel.
pub struct PendingCall {
    client: Client,
    call: u64,
    rx: Option<oneshot::Receiver<Result<CallResult, BusError>>>,
    service_incarnation: String,
}

impl std::fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingCall(call-{})", self.call)
    }
}

/// `rpc.cancel` states (contracts §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelState {
    /// Never dispatched; nothing ran.
    CancelledBeforeDispatch,
    /// Dispatched; the handler may run to completion.
    ExecutionUnknown,
    /// A terminal result was already admitted.
    Completed,
    /// Unknown or retired call.
    CallGone,
}

impl PendingCall {
    /// The bus call id.
    #[must_use]
    pub fn call_id(&self) -> BusCallId {
        BusCallId(self.call)
    }

    /// The incarnation that admitted the call.
    #[must_use]
    pub fn service_incarnation(&self) -> &str {
        &self.service_incarnation
    }

    /// Waits for the terminal result or the deadline. At the deadline the call is cancelled and
    /// the error says whether the handler may have run.
    ///
    /// # Errors
    ///
    /// As [`Client::call`].
    pub async fn result(mut self, deadline: Option<Instant>) -> Result<CallResult, BusError> {
        let Some(mut rx) = self.rx.take() else {
            return Err(self.client.inner.lost());
        };
        let outcome = match deadline {
            None => (&mut rx).await,
            Some(at) => match tokio::time::timeout_at(at, &mut rx).await {
                Ok(r) => r,
                Err(_) => {
                    let state = self.send_cancel().await?;
                    return match state {
                        CancelState::Completed => {
                            rx.await.unwrap_or_else(|_| Err(self.client.inner.lost()))
                        }
                        CancelState::CancelledBeforeDispatch => Err(BusError::DeadlineElapsed {
                            dispatch: Dispatch::NotDispatched,
                        }),
                        CancelState::ExecutionUnknown | CancelState::CallGone => {
                            match rx.try_recv() {
                                Ok(r) => r,
                                Err(_) => Err(BusError::DeadlineElapsed {
                                    dispatch: Dispatch::Unknown,
                                }),
                            }
                        }
                    };
                }
            },
        };
        outcome.unwrap_or_else(|_| Err(self.client.inner.lost()))
    }

    /// Cancels the call.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`].
    pub async fn cancel(mut self) -> Result<CancelState, BusError> {
        self.rx = None;
        self.send_cancel().await
    }

    async fn send_cancel(&mut self) -> Result<CancelState, BusError> {
        self.client.inner.lock().calls.remove(&self.call);
        let v = self
            .client
            .command(
                "rpc.cancel",
                into_map(json!({"callId": spelled("call", self.call)})),
            )
            .await?;
        Ok(match v.get("state").and_then(Value::as_str) {
            Some("cancelled-before-dispatch") => CancelState::CancelledBeforeDispatch,
            Some("execution-unknown") => CancelState::ExecutionUnknown,
            Some("completed") => CancelState::Completed,
            _ => CancelState::CallGone,
        })
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if self.rx.take().is_some() {
            let removed = self.client.inner.lock().calls.remove(&self.call).is_some();
            if removed {
                self.client.inner.outbox.push(
                    Lane::Rpc,
                    Cmd::Command {
                        op: "rpc.cancel",
                        body: into_map(json!({"callId": spelled("call", self.call)})),
                        attachments: Vec::new(),
                        reply: None,
                    },
                );
            }
        }
    }
}

/// A terminal call result.
#[derive(Debug)]
pub struct CallResult {
    /// The call.
    pub call_id: BusCallId,
    /// Who answered.
    pub responder: Peer,
    /// The incarnation that answered.
    pub service_incarnation: String,
    /// The responder's outcome object.
    pub outcome: Map<String, Value>,
    /// Artifacts of the result, owned through this delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// The delivery's guard.
    pub delivery: Delivered,
}

/// A request delivered to a service.
pub struct Request {
    /// The caller's call id.
    pub call_id: BusCallId,
    /// Who called.
    pub caller: Peer,
    /// The method.
    pub method: String,
    /// The payload object.
    pub payload: Map<String, Value>,
    /// Artifacts of the request, owned through this delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// The capability to answer; dropping it unanswered releases the call.
    pub responder: Responder,
    /// The delivery's guard (answering does not consume the request).
    pub delivery: Delivered,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("call_id", &self.call_id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// The reply capability of one request.
pub struct Responder {
    inner: Arc<Inner>,
    call: u64,
    dlv: u64,
    done: bool,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Responder(call-{})", self.call)
    }
}

impl Responder {
    /// A sealed copy of an in-memory artifact on this responder's connection, so a reply can
    /// attach it (see [`Artifact::promote`]).
    ///
    /// # Errors
    ///
    /// As [`Artifact::promote`].
    pub async fn promote(&self, artifact: &Artifact) -> Result<Artifact, BusError> {
        promote_on(artifact, &self.inner).await
    }

    /// Answers the call; returns whether the result was routed (false if the caller went away).
    ///
    /// # Errors
    ///
    /// `CALL_GONE` for a second answer, an attachment refusal, or [`BusError::RouterLost`].
    pub async fn reply(
        self,
        outcome: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
    ) -> Result<bool, BusError> {
        self.send(outcome, attachments)?.await
    }

    /// Queues the answer now and returns what [`Responder::reply`] waits for: whether the
    /// result was routed. Whatever the caller queues before awaiting it (say, consuming the
    /// request delivery) goes out in the same write.
    ///
    /// # Errors
    ///
    /// An attachment refusal or [`BusError::RouterLost`] at once; the returned future, as
    /// [`Responder::reply`].
    pub fn send(
        mut self,
        outcome: Map<String, Value>,
        attachments: &[(&str, &Artifact)],
    ) -> Result<impl std::future::Future<Output = Result<bool, BusError>> + Send + 'static, BusError>
    {
        let attachments = attach(attachments)?;
        self.done = true;
        let mut body = Map::new();
        body.insert("callId".into(), Value::String(spelled("call", self.call)));
        body.insert(
            "requestDeliveryId".into(),
            Value::String(spelled("dlv", self.dlv)),
        );
        body.insert("outcome".into(), Value::Object(outcome));
        let rx = queue_command(&self.inner, "rpc.reply", body, attachments)?;
        let inner = Arc::clone(&self.inner);
        Ok(async move {
            let v = rx.await.unwrap_or_else(|_| Err(inner.lost()))?;
            Ok(v.get("routed").and_then(Value::as_bool).unwrap_or(false))
        })
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.done {
            self.inner.outbox.push(
                Lane::Rpc,
                Cmd::Command {
                    op: "rpc.responder.release",
                    body: into_map(json!({"callId": spelled("call", self.call), "requestDeliveryId": spelled("dlv", self.dlv)})),
                    attachments: Vec::new(),
                    reply: None,
                },
            );
        }
    }
}

/// A topic message.
#[derive(Debug)]
pub struct Message {
    /// The subscription it came through.
    pub subscription_id: u64,
    /// Its topic sequence number (gaps are coalesced values, not skipped steps).
    pub topic_sequence: u64,
    /// Latest values replaced since this subscription's previous delivery.
    pub replaced: u64,
    /// The payload object.
    pub payload: Map<String, Value>,
    /// Artifacts, owned through this delivery.
    pub attachments: Vec<(Id, Artifact)>,
    /// The delivery's guard.
    pub delivery: Delivered,
}

fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn str_field(v: &Map<String, Value>, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn attach(items: &[(&str, &Artifact)]) -> Result<Vec<Attachment>, BusError> {
    items
        .iter()
        .map(|(name, a)| {
            if a.is_local() {
                return Err(BusError::Unpromoted {
                    attachment: (*name).to_owned(),
                });
            }
            Ok(Attachment {
                name: Id::parse(name)
                    .map_err(|e| WireError::invalid(format!("attachment name: {e}")))?,
                reference: a.reference.clone(),
                owner_id: a.owner_token(),
            })
        })
        .collect()
}

async fn command(
    inner: &Arc<Inner>,
    op: &'static str,
    body: Map<String, Value>,
    attachments: Vec<Attachment>,
) -> Result<Map<String, Value>, BusError> {
    let rx = queue_command(inner, op, body, attachments)?;
    rx.await.unwrap_or_else(|_| Err(inner.lost()))
}

/// Queues a command; the receiver gets its reply.
fn queue_command(
    inner: &Arc<Inner>,
    op: &'static str,
    body: Map<String, Value>,
    attachments: Vec<Attachment>,
) -> Result<ReplyReceiver, BusError> {
    let (tx, rx) = oneshot::channel();
    if inner.lock().lost.is_some() {
        return Err(inner.lost());
    }
    let queued = inner.outbox.push(
        Lane::Rpc,
        Cmd::Command {
            op,
            body,
            attachments,
            reply: Some(tx),
        },
    );
    if queued.is_none() {
        return Err(inner.lost());
    }
    Ok(rx)
}

/// The client's writer: assigns `msg-<n>` in write order and batches releases.
async fn write_loop(mut sink: impl Sink, inner: Arc<Inner>) {
    let mut next_msg: u64 = 0;
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut envs = Vec::with_capacity(MAX_BATCH);
    loop {
        batch.clear();
        let more = inner.outbox.pop_batch(MAX_BATCH, &mut batch, true).open;
        if batch.is_empty() {
            if !more {
                break;
            }
            tokio::select! {
                biased;
                () = inner.outbox.killed() => break,
                () = inner.outbox.wait() => continue,
            }
        }
        let mut consumed = Vec::new();
        let mut released = Vec::new();
        for item in batch.drain(..) {
            let (op, body, attachments, reply) = match item {
                Cmd::Consumed(d) => {
                    consumed.push(Value::String(spelled("dlv", d)));
                    continue;
                }
                Cmd::Release(o) => {
                    released.push(Value::String(spelled("own", o)));
                    continue;
                }
                Cmd::Command {
                    op,
                    body,
                    attachments,
                    reply,
                } => (op, body, attachments, reply),
            };
            next_msg += 1;
            if let Some(tx) = reply {
                inner.lock().pending.insert(next_msg, (op, tx));
            }
            let env = Envelope {
                id: spelled("msg", next_msg),
                reply_to: None,
                kind: Kind::Command,
                op: op.into(),
                body,
                attachments,
            };
            envs.push(env);
        }
        for (op, field, ids) in [
            ("delivery.consumed", "deliveryIds", consumed),
            ("artifact.release", "ownerIds", released),
        ] {
            for chunk in ids.chunks(MAX_BATCH) {
                next_msg += 1;
                let mut body = Map::new();
                body.insert(field.into(), Value::Array(chunk.to_vec()));
                let env = Envelope {
                    id: spelled("msg", next_msg),
                    reply_to: None,
                    kind: Kind::Command,
                    op: op.into(),
                    body,
                    attachments: Vec::new(),
                };
                envs.push(env);
            }
        }
        let ok = tokio::select! {
            biased;
            () = inner.outbox.killed() => false,
            r = sink.send(&mut envs) => r.is_ok(),
        };
        if !ok {
            break;
        }
    }
    sink.close().await;
    inner.outbox.kill();
}

/// The client's reader: replies to pending commands, deliveries to their handles.
async fn read_loop(mut source: impl Source, inner: Arc<Inner>) {
    let mut last_id = 0u64;
    let mut closing: Option<String> = None;
    let reason = loop {
        let outcome = tokio::select! {
            biased;
            () = inner.outbox.killed() => break "the client closed the connection".to_owned(),
            o = source.next() => o,
        };
        let env = match outcome {
            Inbound::Envelope(env, _) => env,
            Inbound::Closed => {
                break closing
                    .take()
                    .unwrap_or_else(|| "the router closed the connection".into());
            }
            Inbound::Broken(why) => break closing.take().unwrap_or(why),
            Inbound::Refused(why) => break why,
        };
        match unspell("bus", &env.id) {
            Some(n) if n > last_id => last_id = n,
            _ => {
                break format!(
                    "router envelope id {:?} is not an increasing bus-<n>",
                    env.id
                );
            }
        }
        match env.kind {
            Kind::Command => break "the router sent a command".into(),
            Kind::Reply => on_reply(&inner, env),
            Kind::Delivery => on_delivery(&inner, env),
            Kind::Notice => {
                if let Some(why) = on_notice(&inner, env) {
                    closing = Some(why);
                }
            }
        }
    };
    lose(&inner, reason);
}

/// Marks the connection lost and fails everything waiting on it.
fn lose(inner: &Arc<Inner>, reason: String) {
    inner.outbox.kill();
    let (pending, calls) = {
        let mut st = inner.lock();
        st.lost.get_or_insert(reason.clone());
        st.services.clear();
        st.subs.clear();
        st.early.clear();
        (
            std::mem::take(&mut st.pending),
            std::mem::take(&mut st.calls),
        )
    };
    for (_, (_, tx)) in pending {
        let _ = tx.send(Err(BusError::lost(reason.clone())));
    }
    for (_, tx) in calls {
        let _ = tx.send(Err(BusError::lost(reason.clone())));
    }
}

fn on_reply(inner: &Arc<Inner>, env: Envelope) {
    let Some(n) = env.reply_to.as_deref().and_then(|r| unspell("msg", r)) else {
        return;
    };
    let Some((op, tx)) = inner.lock().pending.remove(&n) else {
        return;
    };
    let mut body = env.body;
    let result = if body.get("ok").and_then(Value::as_bool) == Some(true) {
        match body.remove("value") {
            Some(Value::Object(v)) => Ok(v),
            _ => Ok(Map::new()),
        }
    } else {
        let error = body
            .get("error")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let text = |k: &str| {
            error
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Err(BusError::Refused {
            op: op.into(),
            code: ErrorCode::parse(&text("code")).unwrap_or(ErrorCode::InvalidEnvelope),
            message: text("message"),
            dispatch: Dispatch::parse(&text("dispatch")).unwrap_or(Dispatch::NotDispatched),
        })
    };
    if let Err(Ok(value)) = tx.send(result) {
        // The caller gave up; a hold granted to it is still released (contracts §3.8).
        if let Some(own) = value
            .get("ownerId")
            .and_then(Value::as_str)
            .and_then(|s| unspell("own", s))
        {
            inner.outbox.push(Lane::Control, Cmd::Release(own));
        }
    }
}

fn peer(v: Option<&Value>) -> Peer {
    let v = v.and_then(Value::as_object);
    Peer {
        client_id: v
            .and_then(|m| m.get("clientId"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into(),
        incarnation: v
            .and_then(|m| m.get("clientIncarnation"))
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
    }
}

fn on_delivery(inner: &Arc<Inner>, env: Envelope) {
    let mut body = env.body;
    let Some(dlv) = body
        .get("deliveryId")
        .and_then(Value::as_str)
        .and_then(|s| unspell("dlv", s))
    else {
        return;
    };
    let guard = Arc::new(DeliveryGuard {
        dlv,
        inner: Arc::clone(inner),
    });
    let attachments: Vec<(Id, Artifact)> = env
        .attachments
        .into_iter()
        .map(|a| {
            (
                a.name,
                Artifact {
                    reference: a.reference,
                    owner: Owner::Delivery(Arc::clone(&guard)),
                    seal: None,
                },
            )
        })
        .collect();
    let delivered = Delivered(guard);
    let text = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    // The payload or outcome object moves out of the body: it is the bulk of the frame.
    let take_object = |body: &mut Map<String, Value>, k: &str| match body.remove(k) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let call = unspell("call", &text("callId")).unwrap_or(0);
    match env.op.as_str() {
        "rpc.request" => {
            let target = text("target");
            let request = Request {
                call_id: BusCallId(call),
                caller: peer(body.get("caller")),
                method: text("method"),
                payload: take_object(&mut body, "payload"),
                attachments,
                responder: Responder {
                    inner: Arc::clone(inner),
                    call,
                    dlv,
                    done: false,
                },
                delivery: delivered,
            };
            let tx = inner.lock().services.get(&target).cloned();
            if let Some(tx) = tx {
                let _ = tx.send(request);
            }
        }
        "rpc.result" => {
            let result = CallResult {
                call_id: BusCallId(call),
                responder: peer(body.get("responder")),
                service_incarnation: text("serviceIncarnation"),
                outcome: take_object(&mut body, "outcome"),
                attachments,
                delivery: delivered,
            };
            let tx = inner.lock().calls.remove(&call);
            if let Some(tx) = tx {
                let _ = tx.send(Ok(result));
            }
        }
        "topic.message" => {
            let sub = unspell("sub", &text("subscriptionId")).unwrap_or(0);
            let num = |k: &str| text(k).parse().unwrap_or(0);
            let (topic_sequence, replaced) = (num("topicSequence"), num("replaced"));
            let message = Message {
                subscription_id: sub,
                topic_sequence,
                replaced,
                payload: take_object(&mut body, "payload"),
                attachments,
                delivery: delivered,
            };
            let mut st = inner.lock();
            if let Some(tx) = st.subs.get(&sub) {
                let _ = tx.send(message);
            } else if sub > st.max_sub {
                // The subscribe reply is still on its way: keep the message for the handle.
                st.early.entry(sub).or_default().push(message);
            }
        }
        _ => {}
    }
}

/// Handles a notice; returns the closing reason for `connection.closing`.
fn on_notice(inner: &Arc<Inner>, env: Envelope) -> Option<String> {
    let text = |k: &str| {
        env.body
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match env.op.as_str() {
        "call.failed" => {
            let call = unspell("call", &text("callId")).unwrap_or(0);
            let tx = inner.lock().calls.remove(&call);
            if let Some(tx) = tx {
                let _ = tx.send(Err(BusError::Refused {
                    op: "rpc.call".into(),
                    code: ErrorCode::parse(&text("code")).unwrap_or(ErrorCode::CallGone),
                    message: text("message"),
                    dispatch: Dispatch::parse(&text("dispatch")).unwrap_or(Dispatch::Unknown),
                }));
            }
            None
        }
        "subscription.closed" => {
            let sub = unspell("sub", &text("subscriptionId")).unwrap_or(0);
            inner.lock().subs.remove(&sub);
            None
        }
        "connection.closing" => Some(format!("{}: {}", text("code"), text("message"))),
        _ => None,
    }
}
