//! The presentation gateway: browser delivery of one session's publication (contracts §10).
//!
//! A [`Gateway`] subscribes, over the bus, to a session's descriptor, snapshot and event topics
//! in latest mode, copies what a person watching needs (step, epoch, world time, rates, the
//! buttons pressed, progress, the run digest at the end), encodes the frames as PNG and drops
//! every message at once; it then serves one self-contained page, a WebSocket that pushes the
//! newest state, the newest frame and the newest state as JSON. It runs on its own thread with
//! its own runtime, so neither a slow browser nor the encoding can slow the run it shows.
//!
//! It owns browser delivery only. It knows the publication's shapes (`flysim_types::publish`)
//! and the bus client, and nothing of a session's internals, of files or paths: the browser
//! never sees an owner token, an artifact reference or a store location.
//!
//! The page keeps the first view at native size in a hidden canvas and exposes, for tests,
//! `window.flysim`: `step` (the committed boundary shown), `producedStep` (the boundary its
//! frame was produced at), `viewDigest()` (a promise of the hex SHA-256 of that canvas's RGBA
//! pixels, read before its first await, so a `step` read in the same task matches it),
//! `latencies` (receive time minus the gateway's send stamp, ms), `ages` (shown minus taken off
//! the bus, ms; both subtract wall clocks of this machine) and `ended` (`{runDigest, steps,
//! outcome}` once the run ended).
//!
//! - `subscriber`: the bus side (subscriptions, copying, encoding, the newest state).
//! - `state`: the page state built from a snapshot and its descriptor.
//! - `encode`: RGBA8 to PNG.
//! - `latest`: the shared newest state and the WebSocket message layout.
//! - `serve`: the HTTP routes and the per-client WebSocket loop.
//! - `stats`: the gateway's own counters.
//! - `error`: why it could not start.

mod encode;
mod error;
mod latest;
mod serve;
mod state;
mod stats;
mod subscriber;

use std::net::SocketAddr;
use std::sync::Arc;

use flysim_bus::{ClientOptions, Link};
use flysim_types::publish::Topics;
use tokio::sync::{oneshot, watch};

pub use error::GatewayError;
pub use stats::GatewayStats;

use crate::serve::{Served, routes};
use crate::stats::Counters;

/// A running gateway. Dropping it stops serving and joins its thread, as
/// [`Gateway::shutdown`] does.
#[derive(Debug)]
pub struct Gateway {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Gateway {
    /// Binds `addr` (port 0 picks a free port), then starts serving on a thread of its own
    /// and follows `topics` over `link`, connecting as `options` says (the store root is where
    /// the frames' artifacts are read; the id must be the one `link` was bound to).
    ///
    /// It returns as soon as the address is bound: it never waits for the bus, so it may be
    /// called from the runtime that runs the router. Topics not declared yet are asked for
    /// again until they are.
    ///
    /// # Errors
    ///
    /// [`GatewayError::Bind`] when the address cannot be bound, [`GatewayError::Start`] when
    /// the thread or its runtime cannot start.
    pub fn start(
        link: Link,
        options: ClientOptions,
        topics: Topics,
        addr: SocketAddr,
    ) -> Result<Self, GatewayError> {
        let bind = |source| GatewayError::Bind { addr, source };
        let listener = std::net::TcpListener::bind(addr).map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let local = listener.local_addr().map_err(bind)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(1)
            .thread_name("gateway-encode")
            .build()
            .map_err(|source| GatewayError::Start {
                what: "runtime",
                source,
            })?;
        let counters = Arc::new(Counters::default());
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("gateway".into())
            .spawn(move || {
                runtime.block_on(serve(listener, link, options, topics, shared, stopped));
            })
            .map_err(|source| GatewayError::Start {
                what: "thread",
                source,
            })?;
        Ok(Self {
            addr: local,
            counters,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The page's URL, e.g. `http://127.0.0.1:40123/`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A copy of the gateway's counters.
    #[must_use]
    pub fn stats(&self) -> GatewayStats {
        self.counters.snapshot()
    }

    /// Stops serving (every client is disconnected) and joins the gateway's thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The gateway's thread: the bus follower and the HTTP server, until `stopped`.
async fn serve(
    listener: std::net::TcpListener,
    link: Link,
    options: ClientOptions,
    topics: Topics,
    counters: Arc<Counters>,
    stopped: oneshot::Receiver<()>,
) {
    let (latest_tx, latest) = watch::channel(None);
    let following = Arc::clone(&counters);
    tokio::spawn(async move {
        subscriber::follow(link, options, topics, &latest_tx, following).await;
        // The bus is gone (the run ended): the last state stays served until shutdown.
        std::future::pending::<()>().await;
    });
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return counters.bus_failed(format!("serving the listener: {e}")),
    };
    let app = routes(Served { latest, counters });
    tokio::select! {
        _ = axum::serve(listener, app).into_future() => {}
        _ = stopped => {}
    }
}
