//! The gateway's side of the bus: it subscribes to a session's three topics in latest mode,
//! copies what the page needs out of each message (the snapshot's fields, the views' pixels),
//! drops the message at once, refuses a snapshot that disagrees with its descriptor, encodes
//! the frames and publishes the newest [`Latest`].
//!
//! Nothing here can slow the publisher: every subscription is latest-mode (the router replaces
//! an undelivered value instead of queueing or refusing), and a message is held only while its
//! bytes are copied. It knows the publication's shapes (`flysim_types::publish`), not the
//! session that publishes them nor the browsers that watch.

use std::sync::Arc;
use std::time::Duration;

use flysim_bus::{
    BusError, Client, ClientOptions, ErrorCode, Link, Message, SubscribeMode, SubscribeOptions,
    Subscription,
};
use flysim_types::publish::{CommittedSnapshot, SessionDescriptor, Topics};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::encode::png_rgba;
use crate::latest::{Latest, wall_ms};
use crate::state::{Ended, FrameEntry, PageInput, page_state};
use crate::stats::{Counters, bump};

/// How long to wait before asking again for a topic that is not declared yet.
const TOPIC_RETRY: Duration = Duration::from_millis(20);

/// A snapshot with the pixels of its views copied out, the message already dropped.
struct CopiedSnapshot {
    snapshot: CommittedSnapshot,
    /// `(view id, produced step, RGBA bytes)` for each view whose attachment was readable.
    pixels: Vec<(String, u64, Vec<u8>)>,
    received_ms: f64,
}

/// What the topic readers hand the publishing loop.
enum Incoming {
    Descriptor(Box<SessionDescriptor>),
    Snapshot(Box<CopiedSnapshot>),
    Event(Ended),
}

/// Follows `topics` over `link` until the bus goes, publishing each newest state on `latest`
/// (which the caller keeps, so the last state outlives the bus).
pub(crate) async fn follow(
    link: Link,
    options: ClientOptions,
    topics: Topics,
    latest: &watch::Sender<Option<Arc<Latest>>>,
    counters: Arc<Counters>,
) {
    let client = match Client::connect_link(link, options).await {
        Ok(c) => c,
        Err(e) => return counters.bus_failed(format!("connecting to the bus: {e}")),
    };
    // Capacity 1: a reader that cannot hand over stops taking messages, and the router keeps
    // only the newest for it.
    let (tx, rx) = mpsc::channel(1);
    for (topic, kind) in [
        (topics.descriptor, Topic::Descriptor),
        (topics.snapshots, Topic::Snapshots),
        (topics.events, Topic::Events),
    ] {
        let reader = TopicReader {
            client: client.clone(),
            topic,
            kind,
            tx: tx.clone(),
            counters: Arc::clone(&counters),
        };
        tokio::spawn(reader.run());
    }
    drop(tx);
    publish_loop(rx, latest, &counters).await;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topic {
    Descriptor,
    Snapshots,
    Events,
}

/// One topic's subscription and where its messages go.
struct TopicReader {
    client: Client,
    topic: String,
    kind: Topic,
    tx: mpsc::Sender<Incoming>,
    counters: Arc<Counters>,
}

impl TopicReader {
    async fn run(self) {
        let Some(mut subscription) = self.subscribe().await else {
            return;
        };
        while let Some(message) = subscription.next().await {
            let incoming = match self.kind {
                Topic::Descriptor => decode_descriptor(message.payload),
                Topic::Events => Ended::from_event(&message.payload).map(Incoming::Event),
                Topic::Snapshots => {
                    let received_ms = wall_ms();
                    bump(&self.counters.snapshots_received);
                    let copied = copy_snapshot(message, received_ms).await;
                    if copied.is_none() {
                        bump(&self.counters.snapshots_refused);
                    }
                    copied.map(|c| Incoming::Snapshot(Box::new(c)))
                }
            };
            if let Some(incoming) = incoming
                && self.tx.send(incoming).await.is_err()
            {
                return;
            }
        }
    }

    /// Subscribes in latest mode, asking again while the topic is not declared yet.
    async fn subscribe(&self) -> Option<Subscription> {
        let options = SubscribeOptions {
            mode: SubscribeMode::Latest,
            max_in_flight: 1,
            replay_latest: true,
        };
        loop {
            match self.client.subscribe(&self.topic, options).await {
                Ok(s) => {
                    bump(&self.counters.topics_followed);
                    return Some(s);
                }
                Err(e) if no_topic(&e) => tokio::time::sleep(TOPIC_RETRY).await,
                Err(e) => {
                    self.counters
                        .bus_failed(format!("subscribing to `{}`: {e}", self.topic));
                    return None;
                }
            }
        }
    }
}

fn no_topic(e: &BusError) -> bool {
    e.bus_code() == Some(ErrorCode::NoTopic)
}

fn decode_descriptor(payload: Map<String, Value>) -> Option<Incoming> {
    flysim_types::payload::from_value::<SessionDescriptor>(Value::Object(payload))
        .ok()
        .map(|d| Incoming::Descriptor(Box::new(d)))
}

/// Decodes the snapshot and copies each view's pixels; the message (and every artifact handle
/// in it) is dropped before this returns.
async fn copy_snapshot(message: Message, received_ms: f64) -> Option<CopiedSnapshot> {
    let Message {
        payload,
        attachments,
        ..
    } = message;
    let snapshot: CommittedSnapshot =
        flysim_types::payload::from_value(Value::Object(payload)).ok()?;
    let mut pixels = Vec::with_capacity(snapshot.media.views.len());
    for view in &snapshot.media.views {
        let Some((_, artifact)) = attachments.iter().find(|(id, _)| *id == view.view_id) else {
            continue;
        };
        let bytes = match artifact.local_bytes() {
            Some(b) => b.to_vec(),
            None => match artifact.read().await {
                Ok(b) => b,
                Err(_) => continue,
            },
        };
        pixels.push((view.view_id.to_string(), view.produced_step.get(), bytes));
    }
    drop(attachments);
    Some(CopiedSnapshot {
        snapshot,
        pixels,
        received_ms,
    })
}

/// What the publishing loop remembers to rebuild the state.
#[derive(Default)]
struct Shown {
    descriptor: Option<SessionDescriptor>,
    snapshot: Option<CommittedSnapshot>,
    frames: Vec<FrameEntry>,
    pngs: Vec<Arc<Vec<u8>>>,
    ended: Option<Ended>,
    received_ms: f64,
    version: u64,
}

async fn publish_loop(
    mut rx: mpsc::Receiver<Incoming>,
    latest: &watch::Sender<Option<Arc<Latest>>>,
    counters: &Counters,
) {
    let mut shown = Shown::default();
    while let Some(incoming) = rx.recv().await {
        match incoming {
            Incoming::Descriptor(d) => {
                shown.descriptor = Some(*d);
                continue;
            }
            Incoming::Event(ended) => shown.ended = Some(ended),
            Incoming::Snapshot(copied) => {
                // A snapshot that disagrees with the descriptor it names is refused (contracts
                // §10); one that arrives before any descriptor is shown without its frames.
                if let Some(descriptor) = &shown.descriptor
                    && copied.snapshot.validate_against(descriptor).is_err()
                {
                    bump(&counters.snapshots_refused);
                    continue;
                }
                let (frames, pngs) = encode_frames(shown.descriptor.as_ref(), copied.pixels).await;
                counters
                    .frames_encoded
                    .fetch_add(pngs.len() as u64, std::sync::atomic::Ordering::Relaxed);
                shown.snapshot = Some(copied.snapshot);
                shown.frames = frames;
                shown.pngs = pngs;
                shown.received_ms = copied.received_ms;
            }
        }
        shown.version += 1;
        let state = page_state(&PageInput {
            descriptor: shown.descriptor.as_ref(),
            snapshot: shown.snapshot.as_ref(),
            frames: &shown.frames,
            ended: shown.ended.as_ref(),
            version: shown.version,
            received_ms: shown.received_ms,
        });
        let next = Latest {
            state: state.to_string().into_bytes(),
            frames: shown.pngs.clone(),
            received_ms: shown.received_ms,
        };
        counters.message_built(next.message_len() as u64);
        latest.send_replace(Some(Arc::new(next)));
    }
}

/// Encodes each view the descriptor declares, off the serving thread.
async fn encode_frames(
    descriptor: Option<&SessionDescriptor>,
    pixels: Vec<(String, u64, Vec<u8>)>,
) -> (Vec<FrameEntry>, Vec<Arc<Vec<u8>>>) {
    let Some(descriptor) = descriptor else {
        return (Vec::new(), Vec::new());
    };
    let shapes: Vec<_> = pixels
        .into_iter()
        .filter_map(|(id, produced, bytes)| {
            let view = descriptor
                .environment
                .views
                .iter()
                .find(|v| v.view_id.as_str() == id)?;
            Some((
                id,
                produced,
                view.width,
                view.height,
                view.row_stride,
                bytes,
            ))
        })
        .collect();
    let encoded = tokio::task::spawn_blocking(move || {
        shapes
            .into_iter()
            .filter_map(|(id, produced, width, height, stride, bytes)| {
                let png = png_rgba(&bytes, width, height, stride)?;
                let entry = FrameEntry {
                    view_id: id,
                    width,
                    height,
                    produced_step: produced,
                    png_bytes: png.len(),
                };
                Some((entry, Arc::new(png)))
            })
            .unzip()
    })
    .await;
    encoded.unwrap_or_default()
}
