//! The end of connections: the teardown of one closed connection (contracts §3.8
//! "Disconnect"), which releases every registration, subscription, call and root it had, and
//! [`Router::shutdown`], which gives every connection its closing notices and cuts it.
//!
//! It undoes what the command handlers built, through their own removal functions; it admits
//! nothing new.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::Router;
use super::envelopes::notice;
use super::ownership::drop_roots;
use super::pubsub::remove_subscriber;
use super::rpc::cancel;
use super::services::remove_service;
use super::state::{ConnId, OutgoingFrame, RouterCore};
use crate::outbox::{Lane, Outbox};
use crate::wire::spelled;

/// Releases everything a closed connection owned (contracts §3.8 "Disconnect").
pub(super) fn teardown(core: &RouterCore, conn: ConnId) {
    let mut garbage = Vec::new();
    {
        let mut st = core.lock();
        let Some(c) = st.conns.get(&conn) else { return };
        let services: Vec<String> = c.services.iter().cloned().collect();
        let subs: Vec<u64> = c.subs.iter().copied().collect();
        let client = c.client.clone();
        for name in services {
            remove_service(core, &mut st, &name, "disconnected", &mut garbage);
        }
        for id in subs {
            remove_subscriber(&mut st, id, &mut garbage);
        }
        // Calls this connection made: queued ones are withdrawn, dispatched ones detached.
        let mine: Vec<u64> = st
            .calls
            .keys()
            .filter(|k| k.0 == conn)
            .map(|k| k.1)
            .collect();
        for serial in mine {
            cancel(core, &mut st, conn, serial, &mut garbage);
        }
        // Calls this connection was serving (service gone already): answered as gone.
        let Some(c) = st.conns.remove(&conn) else {
            return;
        };
        c.outbox.close();
        let mut arts = Vec::new();
        for d in c.deliveries.into_values() {
            arts.extend(d.artifacts);
        }
        for h in c.holds.into_values() {
            arts.push(h.artifact);
        }
        drop_roots(&mut st, &arts, &mut garbage);
        if let Some((id, _)) = client
            && let Some(r) = st.clients.get_mut(id.as_str())
            && r.live == Some(conn)
        {
            r.live = None;
        }
    }
    core.unlink_all(garbage);
}

impl Router {
    /// Ends every connection (each gets a `subscription.closed` per subscription and a
    /// `connection.closing` notice first) and removes this router's store directory.
    pub fn shutdown(&self) {
        let outboxes: Vec<Arc<Outbox<OutgoingFrame>>> = {
            let mut st = self.lock();
            st.shut = true;
            let subs: Vec<(u64, ConnId, String, u64)> = st
                .subs
                .iter()
                .map(|(id, s)| (*id, s.conn, s.topic.clone(), s.incarnation))
                .collect();
            for (id, conn, topic, inc) in subs {
                let body = json!({
                    "subscriptionId": spelled("sub", id),
                    "topic": topic,
                    "topicIncarnation": self.core.incarnation("top", inc),
                    "reason": "router-shutdown",
                });
                if let Some(c) = st.conns.get(&conn) {
                    c.outbox.push(
                        Lane::Control,
                        OutgoingFrame::Frame(notice("subscription.closed", body)),
                    );
                }
            }
            st.conns.values().map(|c| Arc::clone(&c.outbox)).collect()
        };
        for outbox in &outboxes {
            outbox.push_final(OutgoingFrame::Frame(notice(
                "connection.closing",
                json!({"code": "ROUTER_LOST", "message": "the router is shutting down"}),
            )));
        }
        // Give writers a moment to flush the notices, then cut every connection.
        let core = Arc::clone(&self.core);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            for outbox in outboxes {
                outbox.kill();
            }
            drop(core);
        });
        self.core.store.destroy();
    }
}
