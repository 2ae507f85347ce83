//! The harness: a router on a private scratch root for one transport, and the ways a test
//! connects to it (a client by id, a client bound to another id, a raw byte stream, a
//! one-byte-at-a-time client). It knows the bus's public API only, not what clients say.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flysim_bus::{BusError, Client, ClientOptions, Limits, Router, RouterConfig};
use flysim_types::Id;

use crate::scratch::ScratchDir;
use crate::trickle::{Stream, Trickle};

/// The byte pipe's buffer size on both ends.
const PIPE_BUFFER: usize = 64 * 1024;

/// The transports every scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The in-memory byte pipe (frames over a duplex stream).
    Memory,
    /// The in-process envelope link (values, no bytes).
    Link,
    /// The Unix-domain socket.
    Unix,
}

impl Transport {
    /// Every transport, in the order [`both!`](crate::both) runs them.
    pub const ALL: [Self; 3] = [Self::Memory, Self::Link, Self::Unix];
}

/// A router on a private scratch root, listening on a Unix socket as well when the transport
/// is [`Transport::Unix`].
#[derive(Debug)]
pub struct Bus {
    /// The router under test.
    pub router: Router,
    /// The transport clients connect over.
    pub transport: Transport,
    root: ScratchDir,
    incarnation: AtomicU64,
}

impl Bus {
    /// Starts a router with `tag` on a fresh scratch root.
    ///
    /// # Panics
    ///
    /// If the router cannot start or listen.
    #[must_use]
    pub fn start(transport: Transport, tag: u64) -> Self {
        let root = ScratchDir::new();
        let router = start_router(root.path(), tag, transport);
        Self {
            router,
            transport,
            root,
            incarnation: AtomicU64::new(0),
        }
    }

    /// The scratch root (the store and the sockets live under it).
    #[must_use]
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The router's artifact store root.
    #[must_use]
    pub fn store_root(&self) -> PathBuf {
        self.root().join("store")
    }

    /// The router's own Unix socket.
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.root().join("sock").join("router.sock")
    }

    /// Shuts the router down and starts a new one (new tag) on the same store root and socket.
    ///
    /// # Panics
    ///
    /// If the new router cannot start or listen.
    pub async fn restart(&mut self, tag: u64) {
        self.router.shutdown();
        tokio::time::sleep(Duration::from_millis(40)).await;
        let _ = std::fs::remove_file(self.socket());
        self.router = start_router(self.root.path(), tag, self.transport);
    }

    /// Client options for `id`, each call a new incarnation (1, 2, ...).
    ///
    /// # Panics
    ///
    /// If `id` is not a valid id.
    #[must_use]
    pub fn options(&self, id: &str) -> ClientOptions {
        let n = self.incarnation.fetch_add(1, Ordering::SeqCst);
        ClientOptions {
            client_id: Id::parse(id).expect("a valid client id"),
            incarnation: n + 1,
            store_root: self.store_root(),
        }
    }

    /// A connected client saying hello as `id`.
    ///
    /// # Panics
    ///
    /// If it cannot connect.
    pub async fn client(&self, id: &str) -> Client {
        self.try_client(id).await.expect("connect a client")
    }

    /// A client saying hello as `id`, or why it could not connect.
    pub async fn try_client(&self, id: &str) -> Result<Client, BusError> {
        self.connect(self.options(id)).await
    }

    /// A client with these options over this bus's transport.
    pub async fn connect(&self, options: ClientOptions) -> Result<Client, BusError> {
        match self.transport {
            Transport::Memory => {
                Client::connect(self.router.connect_in_memory(PIPE_BUFFER), options).await
            }
            Transport::Link => {
                let link = self.router.connect_link_as(options.client_id.clone());
                Client::connect_link(link, options).await
            }
            Transport::Unix => Client::connect_unix(&self.socket(), options).await,
        }
    }

    /// A client on an endpoint bound to `bound`, saying hello as `id`.
    ///
    /// # Panics
    ///
    /// If `bound` is not a valid id, or its Unix socket cannot listen.
    pub async fn bound_client(&self, bound: &str, id: &str) -> Result<Client, BusError> {
        let options = self.options(id);
        let bound = Id::parse(bound).expect("a valid bound id");
        match self.transport {
            Transport::Memory => {
                let pipe = self.router.connect_in_memory_as(PIPE_BUFFER, bound);
                Client::connect(pipe, options).await
            }
            Transport::Link => {
                Client::connect_link(self.router.connect_link_as(bound), options).await
            }
            Transport::Unix => {
                let path = self.root().join("sock").join(format!("{bound}.sock"));
                if !path.exists() {
                    self.router
                        .listen_unix_as(&path, bound)
                        .expect("listen on the bound socket");
                }
                Client::connect_unix(&path, options).await
            }
        }
    }

    /// A raw byte stream to the router (no hello), for wire-level fault tests. The link has no
    /// bytes, so it gets the byte pipe.
    ///
    /// # Panics
    ///
    /// If the Unix socket cannot be reached.
    pub async fn raw(&self) -> Box<dyn Stream> {
        match self.transport {
            Transport::Memory | Transport::Link => {
                Box::new(self.router.connect_in_memory(PIPE_BUFFER))
            }
            Transport::Unix => Box::new(
                tokio::net::UnixStream::connect(self.socket())
                    .await
                    .expect("reach the router's socket"),
            ),
        }
    }

    /// A client whose every read and write moves one byte at a time, on both ends. The link
    /// has no bytes, so it gets the byte pipe.
    ///
    /// # Panics
    ///
    /// If it cannot connect.
    pub async fn trickle_client(&self, id: &str) -> Client {
        let options = self.options(id);
        match self.transport {
            Transport::Memory | Transport::Link => {
                let (a, b) = tokio::io::duplex(PIPE_BUFFER);
                self.router.serve(Trickle(b));
                Client::connect(Trickle(a), options)
                    .await
                    .expect("connect a trickling client")
            }
            Transport::Unix => {
                let (a, b) = tokio::net::UnixStream::pair().expect("a socket pair");
                self.router.serve(Trickle(b));
                Client::connect(Trickle(a), options)
                    .await
                    .expect("connect a trickling client")
            }
        }
    }
}

/// A router with `tag` whose store is under `root`, listening on `root/sock/router.sock` for
/// the Unix transport.
fn start_router(root: &Path, tag: u64, transport: Transport) -> Router {
    let router = Router::start(RouterConfig {
        store_root: root.join("store"),
        limits: Limits::default(),
        tag: Some(tag),
    })
    .expect("start the router");
    if transport == Transport::Unix {
        router
            .listen_unix(&root.join("sock").join("router.sock"))
            .expect("listen on the router's socket");
    }
    router
}
