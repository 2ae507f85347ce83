//! Browser delivery: the page (`/`), the WebSocket that pushes the newest state (`/ws`), the
//! newest frame (`/frame.png`) and the newest state (`/state.json`).
//!
//! Each WebSocket client is served by its own task that holds at most one message: it waits
//! for a newer [`Latest`] than the one it sent, builds that one message and sends it. A client
//! that reads slowly skips the states it had no time for; one whose send stalls past
//! [`SEND_STALL_LIMIT`] is closed. No queue exists per client, so none can grow. It knows the
//! shared [`Latest`] and the counters, not the bus.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;

use crate::latest::{Latest, wall_ms};
use crate::stats::{Counters, bump};

/// How long one send may wait for a client that does not read before the client is closed.
pub(crate) const SEND_STALL_LIMIT: Duration = Duration::from_secs(10);

/// The page: one self-contained HTML file.
const PAGE: &str = include_str!("page.html");

/// What every route reads.
#[derive(Clone)]
pub(crate) struct Served {
    pub(crate) latest: watch::Receiver<Option<Arc<Latest>>>,
    pub(crate) counters: Arc<Counters>,
}

/// The routes.
pub(crate) fn routes(served: Served) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/state.json", get(state_json))
        .route("/frame.png", get(frame_png))
        .route("/ws", get(websocket))
        .with_state(served)
}

async fn page() -> Response {
    (no_store(), Html(PAGE)).into_response()
}

fn no_store() -> [(header::HeaderName, &'static str); 1] {
    [(header::CACHE_CONTROL, "no-store")]
}

async fn state_json(State(served): State<Served>) -> Response {
    let latest = served.latest.borrow().clone();
    let body = latest.map_or_else(|| b"{}".to_vec(), |l| l.state.clone());
    (
        no_store(),
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

async fn frame_png(State(served): State<Served>) -> Response {
    let latest = served.latest.borrow().clone();
    match latest.as_deref().and_then(Latest::first_frame) {
        Some(png) => (
            no_store(),
            [(header::CONTENT_TYPE, "image/png")],
            png.to_vec(),
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no frame yet").into_response(),
    }
}

async fn websocket(State(served): State<Served>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| serve_client(socket, served))
}

/// Serves one client until it leaves, stalls or the gateway stops.
async fn serve_client(mut socket: WebSocket, served: Served) {
    let counters = served.counters;
    bump(&counters.clients_accepted);
    bump(&counters.clients_connected);
    let mut latest = served.latest;
    latest.mark_changed();
    loop {
        tokio::select! {
            changed = latest.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => continue,
            },
        }
        let Some(next) = latest.borrow_and_update().clone() else {
            continue;
        };
        if !send_one(&mut socket, &next, &counters).await {
            break;
        }
    }
    counters
        .clients_connected
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

/// Builds and sends one message; `false` when the client is gone or stalled.
async fn send_one(socket: &mut WebSocket, next: &Latest, counters: &Counters) -> bool {
    let Some(message) = next.message(wall_ms()) else {
        return true;
    };
    let held = message.len() as u64;
    counters.hold(held, held);
    let sent = tokio::time::timeout(
        SEND_STALL_LIMIT,
        socket.send(Message::Binary(Bytes::from(message))),
    )
    .await;
    counters.release(held);
    match sent {
        Ok(Ok(())) => {
            bump(&counters.deliveries);
            counters.latency(wall_ms() - next.received_ms);
            true
        }
        Ok(Err(_)) => false,
        Err(_) => {
            bump(&counters.clients_stalled);
            false
        }
    }
}
