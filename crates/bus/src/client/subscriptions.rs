//! Pub/sub on the client: declaring topics, subscribing (queue policy and credits),
//! publishing, the [`Subscription`] handle, and the [`Message`]s it yields in topic order.
//!
//! Topics are exact names and payloads are opaque; the router decides what is queued and
//! replaced.

use flysim_types::Id;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::artifacts::attach;
use super::connection::send_command;
use super::{Artifact, Client, Delivered, into_map, str_field};
use crate::error::{BusError, WireError};
use crate::wire::{spelled, unspell};

impl Client {
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
            let mut st = self.connection.lock();
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
        let v = send_command(&self.connection, "publish", body, attachments).await?;
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

/// A subscription: messages in topic order.
pub struct Subscription {
    pub(super) id: u64,
    pub(super) rx: mpsc::UnboundedReceiver<Message>,
    pub(super) client: Client,
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
        self.client.connection.lock().subs.remove(&self.id);
        Ok(v.get("removed").and_then(Value::as_bool).unwrap_or(false))
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
