//! Pub/sub: `topic.declare`, `topic.clear`, `topic.delete`, `subscribe`, `unsubscribe` and
//! `publish` (all-or-nothing admission over every bounded subscriber, the retained slot and its
//! byte budget, latest-value replacement), and delivery of queued messages while a subscriber
//! has in-flight credit.
//!
//! Topics are exact names; it never reads a payload, and the artifact roots a message stands on
//! are `ownership`'s.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::command::{CommandRefusal, CommandResult, invalid, refuse};
use super::envelopes::{LONGEST_BUS_ID, delivery, delivery_fits_envelope, into_map, rebind, u64s};
use super::ownership::{add_roots, check_attachments, drop_roots};
use super::state::{
    ConnId, Delivery, DeliveryKind, OutgoingFrame, Publication, QueuePolicy, RouterCore,
    RouterState, Subscriber, Topic,
};
use crate::limits::Limits;
use crate::outbox::Lane;
use crate::wire::{Attachment, Body, Envelope, ErrorCode, spelled, unspell};

/// `topic.declare`'s body.
pub(super) struct DeclareBody<'a> {
    name: &'a str,
    /// `retained: latest` (keep the latest message for late subscribers) rather than `none`.
    retained: bool,
}

impl<'a> DeclareBody<'a> {
    pub(super) fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
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
        Ok(Self { name, retained })
    }
}

/// The body of `topic.clear` and `topic.delete`: the topic's name.
pub(super) struct TopicNameBody<'a> {
    name: &'a str,
}

impl<'a> TopicNameBody<'a> {
    pub(super) fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["name"]).map_err(invalid)?;
        Ok(Self {
            name: b.name("name").map_err(invalid)?,
        })
    }
}

/// `subscribe`'s body, its counts bounded by the policy's limits.
pub(super) struct SubscribeBody<'a> {
    topic: &'a str,
    policy: QueuePolicy,
    max_queued: u32,
    max_in_flight: u32,
    replay_latest: bool,
}

impl<'a> SubscribeBody<'a> {
    pub(super) fn parse(
        body: &'a Map<String, Value>,
        limits: &Limits,
    ) -> Result<Self, CommandRefusal> {
        let b = Body::exact(
            body,
            &["topic", "mode", "maxQueued", "maxInFlight", "replayLatest"],
        )
        .map_err(invalid)?;
        let topic = b.name("topic").map_err(invalid)?;
        let policy = match b.str("mode").map_err(invalid)? {
            "latest" => QueuePolicy::Latest,
            "bounded" => QueuePolicy::Bounded,
            other => return Err(invalid(format!("`mode` is latest or bounded, not {other}"))),
        };
        let (max_queued, max_in_flight) = match policy {
            QueuePolicy::Latest => (
                b.count("maxQueued", 1).map_err(invalid)?,
                b.count("maxInFlight", limits.max_latest_in_flight)
                    .map_err(invalid)?,
            ),
            QueuePolicy::Bounded => (
                b.count("maxQueued", limits.max_bounded_queued)
                    .map_err(invalid)?,
                b.count("maxInFlight", limits.max_bounded_in_flight)
                    .map_err(invalid)?,
            ),
        };
        let replay_latest = b.bool("replayLatest").map_err(invalid)?;
        Ok(Self {
            topic,
            policy,
            max_queued,
            max_in_flight,
            replay_latest,
        })
    }
}

/// `unsubscribe`'s body.
pub(super) struct UnsubscribeBody {
    id: u64,
}

impl UnsubscribeBody {
    pub(super) fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["subscriptionId"]).map_err(invalid)?;
        let id = b
            .str("subscriptionId")
            .ok()
            .and_then(|s| unspell("sub", s))
            .ok_or_else(|| invalid("`subscriptionId` is sub-<n>"))?;
        Ok(Self { id })
    }
}

/// `publish`'s body.
struct PublishBody<'a> {
    topic: &'a str,
    payload: &'a Map<String, Value>,
}

impl<'a> PublishBody<'a> {
    fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["topic", "payload"]).map_err(invalid)?;
        Ok(Self {
            topic: b.name("topic").map_err(invalid)?,
            payload: b.object("payload").map_err(invalid)?,
        })
    }
}

/// `topic.declare`: a compatible re-declare answers the existing incarnation.
pub(super) fn declare(
    core: &RouterCore,
    st: &mut RouterState,
    body: &DeclareBody<'_>,
) -> CommandResult {
    let DeclareBody { name, retained } = *body;
    if let Some(t) = st.topics.get(name) {
        if t.retained != retained {
            return Err(refuse(
                ErrorCode::Conflict,
                format!("topic {name} is declared with another retention"),
            ));
        }
        return Ok(into_map(
            json!({"declared": false, "topicIncarnation": core.incarnation("top", t.incarnation)}),
        ));
    }
    if st.topics.len() >= core.limits.max_topics {
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
        json!({"declared": true, "topicIncarnation": core.incarnation("top", incarnation)}),
    ))
}

/// `topic.clear`: drops the retained message, if any.
pub(super) fn clear(
    st: &mut RouterState,
    body: &TopicNameBody<'_>,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let name = body.name;
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

/// `topic.delete`: only a topic without subscribers.
pub(super) fn delete(
    st: &mut RouterState,
    body: &TopicNameBody<'_>,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let name = body.name;
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

/// The bytes of the artifacts a retained message stands on.
fn retained_size(st: &RouterState, p: &Publication) -> u64 {
    p.artifacts
        .iter()
        .filter_map(|a| st.artifacts.get(a))
        .map(|a| a.byte_length)
        .sum()
}

/// `subscribe`: a new subscriber, with the retained message queued first if asked for.
pub(super) fn subscribe(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &SubscribeBody<'_>,
) -> CommandResult {
    let topic = body.topic;
    let l = &core.limits;
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
    let retained = if body.replay_latest {
        t.retained_msg.clone()
    } else {
        None
    };
    st.next_sub += 1;
    let id = st.next_sub;
    let mut queue = VecDeque::new();
    if let Some(p) = retained {
        add_roots(st, &p.artifacts);
        queue.push_back(p);
    }
    st.subs.insert(
        id,
        Subscriber {
            conn,
            topic: topic.to_owned(),
            incarnation,
            policy: body.policy,
            max_queued: body.max_queued,
            max_in_flight: body.max_in_flight,
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
        json!({"subscriptionId": spelled("sub", id), "topicIncarnation": core.incarnation("top", incarnation)}),
    );
    pump_subscriber(core, st, id);
    Ok(reply)
}

/// `unsubscribe`: only this connection's subscriptions.
pub(super) fn unsubscribe(
    st: &mut RouterState,
    conn: ConnId,
    body: &UnsubscribeBody,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let ours = st.subs.get(&body.id).is_some_and(|s| s.conn == conn);
    if ours {
        remove_subscriber(st, body.id, garbage);
    }
    Ok(into_map(json!({"removed": ours})))
}

/// `publish`: admitted for every subscriber or for none, then queued to each.
pub(super) fn publish(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    env: &Envelope,
    frame_len: usize,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let body = PublishBody::parse(&env.body)?;
    let name = body.topic;
    let Some(t) = st.topics.get(name) else {
        return Err(refuse(
            ErrorCode::NoTopic,
            format!("topic {name} is not declared"),
        ));
    };
    let arts = check_attachments(core, st, conn, &env.attachments)?;
    if !message_fits(core, frame_len, &body, &env.attachments) {
        return Err(invalid("the topic message would exceed 64 KiB"));
    }
    let subscribers: Vec<u64> = t.subscribers.iter().copied().collect();
    let retained = t.retained;
    admit_publication(core, st, name, &subscribers, frame_len)?;
    if retained {
        admit_retained(core, st, name, &arts)?;
    }
    let Some(t) = st.topics.get_mut(name) else {
        return Err(refuse(ErrorCode::NoTopic, "gone"));
    };
    t.sequence += 1;
    let p = Arc::new(Publication {
        topic: name.to_owned(),
        incarnation: t.incarnation,
        sequence: t.sequence,
        payload: body.payload.clone(),
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
    let replaced = enqueue(core, st, &subscribers, &p, garbage);
    Ok(into_map(
        json!({"topicSequence": u64s(sequence), "subscribers": u64s(subscribers.len() as u64), "replaced": u64s(replaced)}),
    ))
}

/// Whether the largest `topic.message` delivery of this publication stays within one envelope.
fn message_fits(
    core: &RouterCore,
    frame_len: usize,
    body: &PublishBody<'_>,
    attachments: &[Attachment],
) -> bool {
    let build = || {
        delivery(
            "topic.message",
            json!({"deliveryId": spelled("dlv", u64::MAX), "subscriptionId": spelled("sub", u64::MAX), "topic": body.topic,
                   "topicIncarnation": LONGEST_BUS_ID, "topicSequence": u64s(u64::MAX), "replaced": u64s(u64::MAX), "payload": body.payload}),
            rebind(attachments, u64::MAX),
        )
    };
    delivery_fits_envelope(&core.limits, frame_len, build)
}

/// Admission: every bounded subscriber must have room, or nothing happens at all.
fn admit_publication(
    core: &RouterCore,
    st: &RouterState,
    name: &str,
    subscribers: &[u64],
    frame_len: usize,
) -> Result<(), CommandRefusal> {
    for id in subscribers {
        let Some(s) = st.subs.get(id) else { continue };
        if s.policy == QueuePolicy::Bounded {
            let queued_bytes: u64 = st
                .subs
                .values()
                .filter(|o| o.conn == s.conn && o.policy == QueuePolicy::Bounded)
                .map(|o| o.queue.len() as u64 * frame_len as u64)
                .sum();
            if s.queue.len() >= s.max_queued as usize
                || queued_bytes + frame_len as u64 > core.limits.max_queued_bytes_per_client
            {
                return Err(refuse(
                    ErrorCode::Backpressure,
                    format!("subscription sub-{id} on {name} is full"),
                ));
            }
        }
    }
    Ok(())
}

/// Admission of a retained topic's new message against the retained-bytes budget.
fn admit_retained(
    core: &RouterCore,
    st: &RouterState,
    name: &str,
    arts: &[u64],
) -> Result<(), CommandRefusal> {
    let bytes: u64 = arts
        .iter()
        .filter_map(|a| st.artifacts.get(a))
        .map(|a| a.byte_length)
        .sum();
    let old = st
        .topics
        .get(name)
        .and_then(|t| t.retained_msg.as_ref())
        .map_or(0, |p| retained_size(st, p));
    if st.retained_bytes - old + bytes > core.limits.max_retained_bytes {
        return Err(refuse(
            ErrorCode::QuotaExceeded,
            "retained bytes would exceed the limit",
        ));
    }
    Ok(())
}

/// Queues a publication to each subscriber (a latest-value queue replaces what it holds) and
/// delivers what their credit allows; returns how many queued values were replaced.
fn enqueue(
    core: &RouterCore,
    st: &mut RouterState,
    subscribers: &[u64],
    p: &Arc<Publication>,
    garbage: &mut Vec<String>,
) -> u64 {
    let mut replaced = 0u64;
    for id in subscribers {
        let Some(s) = st.subs.get_mut(id) else {
            continue;
        };
        let mut dropped = None;
        if s.policy == QueuePolicy::Latest && !s.queue.is_empty() {
            dropped = s.queue.pop_front();
            s.replaced += 1;
            replaced += 1;
        }
        s.queue.push_back(Arc::clone(p));
        add_roots(st, &p.artifacts);
        if let Some(old) = dropped {
            drop_roots(st, &old.artifacts, garbage);
        }
        pump_subscriber(core, st, *id);
    }
    replaced
}

/// Delivers queued topic messages while the subscription has in-flight credit.
pub(super) fn pump_subscriber(core: &RouterCore, st: &mut RouterState, id: u64) {
    loop {
        let Some(s) = st.subs.get_mut(&id) else {
            return;
        };
        if s.in_flight >= s.max_in_flight || s.queue.is_empty() {
            return;
        }
        let limit = core.limits.max_owners_per_client - core.limits.reserved_owners_per_client;
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
                   "topicIncarnation": core.incarnation("top", p.incarnation), "topicSequence": u64s(p.sequence),
                   "replaced": u64s(replaced), "payload": p.payload}),
            rebind(&p.attachments, dlv),
        );
        c.outbox.push(Lane::Topic, OutgoingFrame::Frame(env));
    }
}

/// Removes a subscription and the roots of the messages still queued for it.
pub(super) fn remove_subscriber(st: &mut RouterState, id: u64, garbage: &mut Vec<String>) {
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
