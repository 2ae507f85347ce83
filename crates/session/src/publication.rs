//! The session's publisher (contracts §10): the descriptor, a snapshot per committed boundary
//! and the session's events, put on the bus by a task of their own so that no step waits for
//! a publication.
//!
//! The coordinator hands the publisher values and never awaits it: the newest snapshot
//! replaces one not yet published (the snapshot topic is a latest topic, so a watcher could
//! only have seen the newest anyway), the descriptor and events queue in order, and the
//! descriptor always goes out before the first snapshot. A publication that fails (no router,
//! a full bounded subscriber) is counted and dropped: nothing here reaches the run.
//!
//! It knows nothing of steps or phases; it knows the bus client, the topic names and how a
//! snapshot's frames are attached (in-memory frames are promoted to bus artifacts first).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flysim_bus::{Artifact, Client};
use flysim_types::Id;
use flysim_types::publish::{CommittedSnapshot, SessionDescriptor, SessionEvent, Topics};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

/// How long the end of a session waits for the last publications to go out.
const DRAIN: Duration = Duration::from_secs(2);

/// The shortest wall time between two snapshot publications: a person's eye and a browser see
/// at most 60 frames a second, so an unpaced run (thousands of steps a second) publishes the
/// newest boundary 60 times a second instead of paying for every one. A run paced at a Game
/// Boy's speed publishes every boundary. Which boundaries are published never reaches the
/// run.
const MIN_INTERVAL: Duration = Duration::from_micros(16_000);

/// A snapshot and the frames its media names, by view id.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) snapshot: CommittedSnapshot,
    pub(crate) frames: Vec<(Id, Artifact)>,
}

/// What queues in order.
#[derive(Debug)]
enum Ordered {
    Descriptor(Box<SessionDescriptor>),
    Event(SessionEvent),
}

/// What the publisher did, for tests and the note.
#[derive(Debug, Default)]
pub struct PublicationCounts {
    /// Snapshots published.
    pub snapshots: AtomicU64,
    /// Snapshots handed to the publisher (one per committed boundary); those not published
    /// were replaced by a newer one first.
    pub handed: AtomicU64,
    /// Publications the bus refused or that could not be built.
    pub failed: AtomicU64,
}

/// The session's publisher; started by the first value handed to it.
pub(crate) struct Publisher {
    client: Client,
    topics: Topics,
    latest: watch::Sender<Option<Outgoing>>,
    ordered: Option<mpsc::UnboundedSender<Ordered>>,
    task: Option<tokio::task::JoinHandle<()>>,
    counts: Arc<PublicationCounts>,
    /// Snapshots handed over so far (the next snapshot's sequence).
    handed: u64,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topics", &self.topics)
            .field("handed", &self.handed)
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher of `topics` on `client`; nothing is declared until it is first used.
    pub(crate) fn new(client: Client, topics: Topics) -> Self {
        Self {
            client,
            topics,
            latest: watch::Sender::new(None),
            ordered: None,
            task: None,
            counts: Arc::default(),
            handed: 0,
        }
    }

    /// The counts of what was published.
    pub(crate) fn counts(&self) -> Arc<PublicationCounts> {
        Arc::clone(&self.counts)
    }

    /// The sequence number the next snapshot takes.
    pub(crate) fn next_sequence(&self) -> u64 {
        self.handed
    }

    /// Publishes `descriptor` on the retained topic, before any later snapshot.
    pub(crate) fn descriptor(&mut self, descriptor: SessionDescriptor) {
        self.send(Ordered::Descriptor(Box::new(descriptor)));
    }

    /// Publishes `event` on the events topic, after the snapshots handed over before it.
    pub(crate) fn event(&mut self, event: SessionEvent) {
        self.send(Ordered::Event(event));
    }

    /// Publishes `outgoing` on the snapshot topic, replacing one not yet published.
    pub(crate) fn snapshot(&mut self, outgoing: Outgoing) {
        self.start();
        self.handed += 1;
        self.counts.handed.store(self.handed, Ordering::Relaxed);
        self.latest.send_replace(Some(outgoing));
    }

    /// Ends publishing: what was handed over goes out (bounded by [`DRAIN`]), then the task
    /// stops.
    pub(crate) async fn finish(&mut self) {
        self.ordered = None;
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(DRAIN, task).await;
        }
    }

    fn send(&mut self, item: Ordered) {
        self.start();
        if let Some(tx) = &self.ordered
            && tx.send(item).is_err()
        {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Spawns the publishing task on the current runtime, once (it declares the topics first,
    /// so a watcher may subscribe from then on).
    pub(crate) fn start(&mut self) {
        if self.task.is_some() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        self.ordered = Some(tx);
        let run = Run {
            client: self.client.clone(),
            topics: self.topics.clone(),
            counts: Arc::clone(&self.counts),
        };
        self.task = Some(tokio::spawn(run.serve(self.latest.subscribe(), rx)));
    }
}

/// The publishing task's state.
struct Run {
    client: Client,
    topics: Topics,
    counts: Arc<PublicationCounts>,
}

impl Run {
    async fn serve(
        self,
        mut latest: watch::Receiver<Option<Outgoing>>,
        mut ordered: mpsc::UnboundedReceiver<Ordered>,
    ) {
        if !self.declare().await {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        loop {
            tokio::select! {
                biased;
                item = ordered.recv() => match item {
                    Some(Ordered::Descriptor(d)) => {
                        let payload = to_map(&*d);
                        self.publish(&self.topics.descriptor, payload, &[]).await;
                    }
                    Some(Ordered::Event(e)) => {
                        // The event follows every snapshot handed over before it.
                        if latest.has_changed().unwrap_or(false) {
                            let out = latest.borrow_and_update().clone();
                            self.publish_snapshot(out).await;
                        }
                        self.publish(&self.topics.events, to_map(&e), &[]).await;
                    }
                    None => break,
                },
                changed = latest.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let out = latest.borrow_and_update().clone();
                    self.publish_snapshot(out).await;
                    // The rate bound: the newest boundary handed over meanwhile goes next.
                    tokio::time::sleep(MIN_INTERVAL).await;
                }
            }
        }
        if latest.has_changed().unwrap_or(false) {
            let out = latest.borrow_and_update().clone();
            self.publish_snapshot(out).await;
        }
    }

    async fn declare(&self) -> bool {
        let topics = [
            (&self.topics.descriptor, true),
            (&self.topics.snapshots, false),
            (&self.topics.events, false),
        ];
        for (name, retained) in topics {
            if self.client.declare_topic(name, retained).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Attaches each view's frame (promoted to a bus artifact if it is in memory) under its
    /// view id, the snapshot naming the attached artifact.
    async fn publish_snapshot(&self, out: Option<Outgoing>) {
        let Some(Outgoing {
            mut snapshot,
            frames,
        }) = out
        else {
            return;
        };
        let mut attached = Vec::with_capacity(frames.len());
        for view in &mut snapshot.media.views {
            let Some((_, frame)) = frames.iter().find(|(_, a)| a.reference() == &view.pixels)
            else {
                continue;
            };
            match frame.promote(&self.client).await {
                Ok(shared) => {
                    view.pixels = shared.reference().clone();
                    attached.push((view.view_id.clone(), shared));
                }
                Err(_) => {
                    self.counts.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        let names: Vec<(&str, &Artifact)> =
            attached.iter().map(|(id, a)| (id.as_str(), a)).collect();
        if self
            .publish(&self.topics.snapshots, to_map(&snapshot), &names)
            .await
        {
            self.counts.snapshots.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn publish(
        &self,
        topic: &str,
        payload: Option<Map<String, Value>>,
        attachments: &[(&str, &Artifact)],
    ) -> bool {
        let Some(payload) = payload else {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let ok = self
            .client
            .publish(topic, payload, attachments)
            .await
            .is_ok();
        if !ok {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }
}

/// A value as the JSON object a publication carries.
fn to_map<T: serde::Serialize>(value: &T) -> Option<Map<String, Value>> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}
