//! Dispatch: one prepared request per agent, sent in the configured order (sequential,
//! concurrent or reversed), the replies collected by agent id so completion order never
//! matters.
//!
//! It knows nothing of what the requests ask; each is resolved by the retry rule of `call`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::task::Poll;

use flysim_bus::Artifact;
use flysim_rpc::PreparedRequest;
use flysim_types::Id;
use flysim_types::trace::DispatchOrder;
use flysim_types::workers::ResultOf;

use super::call::{Reply, call_prepared};
use super::{Coordinator, Deadlines, Participant};
use crate::error::SessionError;

/// One prepared request per agent, with its participant and attachments.
pub(super) type PreparedCalls =
    BTreeMap<Id, (Arc<Participant>, PreparedRequest, Vec<(Id, Artifact)>)>;

impl Coordinator {
    /// Sends one prepared request per agent in the configured dispatch order and collects the
    /// replies by agent id. Sequential and reversed dispatch stop at the first failure;
    /// concurrent dispatch waits for every call, then reports the first failure in agent order.
    /// A single call is made in place whatever the order (there is nothing to overlap, and a
    /// task per call costs a spawn and a join).
    pub(super) async fn dispatch_all<T: ResultOf + Clone + Send>(
        &self,
        requests: PreparedCalls,
        step: u64,
    ) -> Result<BTreeMap<Id, Reply<T>>, SessionError> {
        let dispatch = if requests.len() > 1 {
            self.dispatch
        } else {
            DispatchOrder::Sequential
        };
        match dispatch {
            DispatchOrder::Sequential | DispatchOrder::Reversed => {
                let reversed = self.dispatch == DispatchOrder::Reversed;
                dispatch_in_turn(requests, reversed, self.deadlines, step).await
            }
            DispatchOrder::Concurrent => dispatch_together(requests, self.deadlines, step).await,
        }
    }
}

/// One call after another, in agent-id order or its reverse; the first failure ends them.
async fn dispatch_in_turn<T: ResultOf + Clone>(
    mut requests: PreparedCalls,
    reversed: bool,
    deadlines: Deadlines,
    step: u64,
) -> Result<BTreeMap<Id, Reply<T>>, SessionError> {
    let mut replies = BTreeMap::new();
    let mut next = || {
        if reversed {
            requests.pop_last()
        } else {
            requests.pop_first()
        }
    };
    while let Some((id, (p, request, attachments))) = next() {
        let reply = call_prepared(&p, &request, &attachments, deadlines, step).await?;
        replies.insert(id, reply);
    }
    Ok(replies)
}

/// Every call at once, polled together in this task; all are awaited, then the first failure in
/// agent order is reported.
///
/// The calls share the coordinator's task rather than each getting a task of its own: on the
/// current-thread runtime a task gives them no more overlap (each waits on its own reply either
/// way), and a task per call costs a spawn, a scheduler turn and a copy of its result out of the
/// task. Each call's future is boxed, so the set may be polled in place.
async fn dispatch_together<T: ResultOf + Clone + Send>(
    requests: PreparedCalls,
    deadlines: Deadlines,
    step: u64,
) -> Result<BTreeMap<Id, Reply<T>>, SessionError> {
    let mut calls: Vec<_> = requests
        .into_iter()
        .map(|(id, (p, request, attachments))| {
            let call = Box::pin(async move {
                call_prepared::<T>(&p, &request, &attachments, deadlines, step).await
            });
            (id, call, None)
        })
        .collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (_, call, reply) in &mut calls {
            if reply.is_none() {
                match call.as_mut().poll(cx) {
                    Poll::Ready(done) => *reply = Some(done),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    let mut replies = BTreeMap::new();
    let mut first_error = None;
    for (id, _, reply) in calls {
        match reply {
            Some(Ok(reply)) => {
                replies.insert(id, reply);
            }
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => unreachable!("the poll above ends only when every call has answered"),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(replies),
    }
}
