//! Flybus integration tests. Every scenario runs on every transport (the in-memory byte pipe,
//! the in-process envelope link and the Unix socket) through [`both!`], which also checks that
//! the behaviour traces are identical. Wire-level tests (raw bytes, one-byte reads and writes)
//! use the byte pipe where the transport is the link, which has no bytes.

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits with deadlines of their own"
)]

mod artifacts;
mod codes;
mod faults;
mod frames;
mod pubsub;
mod rpc;

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use flysim_bus::{Client, ClientOptions, Router, RouterConfig};
use flysim_types::Id;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The transports every scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Memory,
    Link,
    Unix,
}

/// A router on a private temp root, listening on a Unix socket as well.
pub(crate) struct Bus {
    pub(crate) router: Router,
    pub(crate) transport: Transport,
    pub(crate) root: tempfile::TempDir,
    incarnation: std::sync::atomic::AtomicU64,
}

impl Bus {
    pub(crate) fn start(transport: Transport, tag: u64) -> Self {
        let root = tempfile::tempdir().unwrap();
        let router = start_router(root.path(), tag, transport);
        Self {
            router,
            transport,
            root,
            incarnation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn store_root(&self) -> PathBuf {
        self.root.path().join("store")
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.root.path().join("sock").join("router.sock")
    }

    /// Shuts the router down and starts a new one (new tag) on the same store root and socket.
    pub(crate) async fn restart(&mut self, tag: u64) {
        self.router.shutdown();
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        let _ = std::fs::remove_file(self.socket());
        self.router = start_router(self.root.path(), tag, self.transport);
    }

    pub(crate) fn options(&self, id: &str) -> ClientOptions {
        let n = self
            .incarnation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ClientOptions {
            client_id: Id::parse(id).unwrap(),
            incarnation: n + 1,
            store_root: self.store_root(),
        }
    }

    pub(crate) async fn client(&self, id: &str) -> Client {
        self.try_client(id).await.unwrap()
    }

    pub(crate) async fn try_client(&self, id: &str) -> Result<Client, flysim_bus::BusError> {
        self.connect(self.options(id)).await
    }

    pub(crate) async fn connect(
        &self,
        options: ClientOptions,
    ) -> Result<Client, flysim_bus::BusError> {
        match self.transport {
            Transport::Memory => {
                Client::connect(self.router.connect_in_memory(64 * 1024), options).await
            }
            Transport::Link => {
                let link = self.router.connect_link_as(options.client_id.clone());
                Client::connect_link(link, options).await
            }
            Transport::Unix => Client::connect_unix(&self.socket(), options).await,
        }
    }

    /// A client on an endpoint bound to `bound`, saying hello as `id`.
    pub(crate) async fn bound_client(
        &self,
        bound: &str,
        id: &str,
    ) -> Result<Client, flysim_bus::BusError> {
        let options = self.options(id);
        let bound = Id::parse(bound).unwrap();
        match self.transport {
            Transport::Memory => {
                Client::connect(
                    self.router.connect_in_memory_as(64 * 1024, bound.clone()),
                    options,
                )
                .await
            }
            Transport::Link => {
                Client::connect_link(self.router.connect_link_as(bound.clone()), options).await
            }
            Transport::Unix => {
                let path = self.root.path().join("sock").join(format!("{bound}.sock"));
                if !path.exists() {
                    self.router.listen_unix_as(&path, bound).unwrap();
                }
                Client::connect_unix(&path, options).await
            }
        }
    }

    /// A raw byte stream to the router (no hello), for wire-level fault tests.
    pub(crate) async fn raw(&self) -> Box<dyn Stream> {
        match self.transport {
            Transport::Memory | Transport::Link => {
                Box::new(self.router.connect_in_memory(64 * 1024))
            }
            Transport::Unix => Box::new(
                tokio::net::UnixStream::connect(self.socket())
                    .await
                    .unwrap(),
            ),
        }
    }

    /// A client whose every read and write moves one byte at a time, on both ends.
    pub(crate) async fn trickle_client(&self, id: &str) -> Client {
        let options = self.options(id);
        match self.transport {
            Transport::Memory | Transport::Link => {
                let (a, b) = tokio::io::duplex(64 * 1024);
                self.router.serve(Trickle(b));
                Client::connect(Trickle(a), options).await.unwrap()
            }
            Transport::Unix => {
                let (a, b) = tokio::net::UnixStream::pair().unwrap();
                self.router.serve(Trickle(b));
                Client::connect(Trickle(a), options).await.unwrap()
            }
        }
    }
}

fn start_router(root: &Path, tag: u64, transport: Transport) -> Router {
    let router = Router::start(RouterConfig {
        store_root: root.join("store"),
        limits: flysim_bus::Limits::default(),
        tag: Some(tag),
    })
    .unwrap();
    if transport == Transport::Unix {
        router
            .listen_unix(&root.join("sock").join("router.sock"))
            .unwrap();
    }
    router
}

/// A byte stream usable as a boxed transport.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Caps every read and write at one byte: partial frames everywhere.
pub(crate) struct Trickle<S>(pub(crate) S);

impl<S: AsyncRead + Unpin> AsyncRead for Trickle<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut one = [0u8; 1];
        let mut small = ReadBuf::new(&mut one);
        match Pin::new(&mut self.0).poll_read(cx, &mut small) {
            Poll::Ready(Ok(())) => {
                buf.put_slice(small.filled());
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Trickle<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let n = buf.len().min(1);
        Pin::new(&mut self.0).poll_write(cx, &buf[..n])
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A JSON object from a `json!` literal.
pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// The behaviour trace of a scenario: what it observed, in program order.
pub(crate) type Trace = Vec<String>;

/// Runs a scenario on both transports and requires identical, non-empty traces.
macro_rules! both {
    ($name:ident, $scenario:path) => {
        #[tokio::test]
        async fn $name() {
            let memory = $scenario(crate::Transport::Memory).await;
            let link = $scenario(crate::Transport::Link).await;
            let unix = $scenario(crate::Transport::Unix).await;
            assert!(!memory.is_empty(), "the scenario recorded no trace");
            assert_eq!(
                memory, link,
                "the behaviour traces differ between the byte pipe and the link"
            );
            assert_eq!(
                memory, unix,
                "the behaviour traces differ between transports"
            );
        }
    };
}
pub(crate) use both;

/// Waits (bounded) until the router's stats satisfy `pred`.
pub(crate) async fn settle(
    router: &Router,
    pred: impl Fn(&flysim_bus::RouterStats) -> bool,
) -> flysim_bus::RouterStats {
    for _ in 0..400 {
        let s = router.stats();
        if pred(&s) {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    router.stats()
}
