//! One connection's lifecycle: admission against the client limit, the reader loop (the hello
//! deadline, inbound envelopes to [`command::handle`], fairness between connections), the
//! closing notice, the teardown, and the writer task that drains the connection's outbox in
//! priority order, assigns `bus-<n>` ids in write order and skips cancelled requests.
//!
//! It knows frames and their order; what a command means is `command`'s and its handlers'.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use flysim_types::Id;
use serde_json::json;
use tokio::time::Instant;

use super::command::{self, Closing};
use super::envelopes::notice;
use super::state::{CELL_DISPATCHED, CELL_PENDING, Conn, ConnId, OutgoingFrame, RouterCore};
use super::teardown::teardown;
use crate::link::{Inbound, Sink, Source};
use crate::outbox::Outbox;
use crate::wire::{Envelope, ErrorCode, spelled};

/// How long a connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Frames one writer pass takes from the outbox before writing.
const WRITE_BATCH: usize = 64;
/// How long at most an acknowledgement nobody waits for promptly (of a reply, a seal, a
/// consumption or a release) may wait for the next frame to its connection before it is written
/// alone. A worker's next request usually comes sooner, and the acknowledgement travels with it.
pub(super) const ACK_DELAY: Duration = Duration::from_millis(1);

/// The connection lifecycle: open, hello, commands until close, teardown.
pub(super) async fn serve_connection(
    core: Arc<RouterCore>,
    source: impl Source,
    sink: impl Sink,
    bound: Option<Id>,
) {
    let outbox: Arc<Outbox<OutgoingFrame>> = Arc::new(Outbox::new());
    let conn = admit(&core, &outbox, bound);
    tokio::spawn(write_loop(sink, Arc::clone(&outbox)));
    let Some(conn) = conn else {
        outbox.push_final(OutgoingFrame::Frame(notice(
            "connection.closing",
            json!({"code": "QUOTA_EXCEEDED", "message": "the router serves no more clients"}),
        )));
        return;
    };
    let closing = read_commands(&core, conn, &outbox, source).await;
    if let Some(c) = closing {
        outbox.push_final(OutgoingFrame::Frame(notice(
            "connection.closing",
            json!({"code": c.code.as_str(), "message": c.message}),
        )));
    } else {
        outbox.close();
    }
    teardown(&core, conn);
}

/// Registers a new connection, unless the router is shut or serves its maximum of clients.
fn admit(
    core: &RouterCore,
    outbox: &Arc<Outbox<OutgoingFrame>>,
    bound: Option<Id>,
) -> Option<ConnId> {
    let mut st = core.lock();
    if st.shut || st.conns.len() >= core.limits.max_clients {
        return None;
    }
    st.next_conn += 1;
    let id = st.next_conn;
    st.conns.insert(id, Conn::new(Arc::clone(outbox), bound));
    Some(id)
}

/// Handles inbound commands until the connection ends; returns why the router closes it, or
/// `None` when the peer went away or the connection was cut.
async fn read_commands(
    core: &Arc<RouterCore>,
    conn: ConnId,
    outbox: &Outbox<OutgoingFrame>,
    mut source: impl Source,
) -> Option<Closing> {
    let mut hello_done = false;
    let mut handled: u64 = 0;
    // One wait for the kill, registered once: a new one per select would add itself to the
    // kill's waiters and take itself off again for every frame.
    let mut killed = std::pin::pin!(outbox.killed());
    loop {
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
            () = &mut killed => return None,
            outcome = next => outcome,
        };
        let (env, frame_len) = match outcome {
            None => {
                return Some(Closing {
                    code: ErrorCode::InvalidEnvelope,
                    message: "no hello within 5 s".into(),
                });
            }
            Some(Inbound::Envelope(env, len)) => (env, len),
            Some(Inbound::Closed | Inbound::Broken(_)) => return None,
            Some(Inbound::Refused(message)) => {
                return Some(Closing {
                    code: ErrorCode::InvalidEnvelope,
                    message,
                });
            }
        };
        if let Err(c) = command::handle(core, conn, env, frame_len, &mut hello_done).await {
            return Some(c);
        }
        // Fairness across connections: a busy connection yields every 32 commands.
        handled += 1;
        if handled.is_multiple_of(32) {
            tokio::task::yield_now().await;
        }
    }
}

/// The writer task: drains the outbox in priority order, assigning `bus-<n>` ids in write order.
#[expect(
    clippy::disallowed_methods,
    reason = "the deadline only bounds how long deferred frames wait to be batched; it never changes what is written"
)]
async fn write_loop(mut sink: impl Sink, outbox: Arc<Outbox<OutgoingFrame>>) {
    let mut next_id: u64 = 0;
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    let mut envs = Vec::with_capacity(WRITE_BATCH);
    // When the deferred frames held back now must go, even alone.
    let mut due: Option<Instant> = None;
    // The one timer behind `due`, re-armed only once its deadline has passed. Arming a timer
    // nearer than the runtime's next timed wake-up makes the runtime wake its driver (an eventfd
    // write); a deadline still ahead, never more than ACK_DELAY away, is kept instead, so a
    // steady stream of held acknowledgements costs one arming per ACK_DELAY, not one each.
    let mut timer = std::pin::pin!(tokio::time::sleep_until(Instant::now()));
    // One wait for the kill for the task's life (see `read_commands`).
    let mut killed = std::pin::pin!(outbox.killed());
    loop {
        batch.clear();
        let flush = due.is_some_and(|d| Instant::now() >= d);
        let popped = outbox.pop_batch(WRITE_BATCH, &mut batch, flush);
        if batch.is_empty() {
            if !popped.open {
                break;
            }
            if popped.held {
                if due.is_none() {
                    let now = Instant::now();
                    if timer.deadline() <= now {
                        timer.as_mut().reset(now + ACK_DELAY);
                    }
                    due = Some(timer.deadline());
                }
                tokio::select! {
                    biased;
                    () = &mut killed => return,
                    () = outbox.wait() => {}
                    () = &mut timer => {}
                }
            } else {
                tokio::select! {
                    biased;
                    () = &mut killed => return,
                    () = outbox.wait() => {}
                }
            }
            continue;
        }
        due = None;
        for item in batch.drain(..) {
            let Some(mut env) = selected(item) else {
                continue;
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
            () = &mut killed => return,
            r = sink.send(&mut envs) => r.is_ok(),
        };
        if !ok {
            outbox.kill();
            return;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

/// The envelope to write for a queued frame: a request is marked dispatched now, or skipped
/// (`None`) when its call was cancelled first.
fn selected(item: OutgoingFrame) -> Option<Envelope> {
    match item {
        OutgoingFrame::Frame(env) => Some(env),
        OutgoingFrame::Request(env, cell) => cell
            .compare_exchange(
                CELL_PENDING,
                CELL_DISPATCHED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
            .then_some(env),
    }
}
