//! The local lane (contracts §3.11): session RPC to a worker in this process without a bus round
//! trip.
//!
//! Whoever runs a worker in this process may offer a [`LocalService`] for its service name on
//! the caller's bus client ([`offer`]). An [`RpcCaller`](crate::RpcCaller) built on that client
//! for that name then sends its requests through the lane: the request, checked for bus
//! identities, straight to the worker's [`RpcEndpoint`](crate::RpcEndpoint), which validates,
//! admits, deduplicates, orders and executes it exactly as it would a bus request, and answers
//! with the same outcome.
//! Params and results travel as the values they are ([`Params`], [`crate::outcome`]): no JSON
//! is written or read for a call that never leaves the process. Nothing else changes: the caller's
//! deadlines, retries, reply matching and incarnation pinning, the worker's phases and dedup,
//! and every digest are those of the bus path.
//!
//! Artifacts on the lane are in-memory ([`flysim_bus::Client::local_artifact`]): no store file
//! and no seal copy. A bus call or reply that carries one promotes it to a sealed copy first and
//! names the copy's ref wherever the payload named the in-memory one ([`rewrite_refs`]).
//!
//! A lane lives as long as its caller's bus connection: a call on a closed connection fails with
//! `ROUTER_LOST` just as a bus call does, so a lost router still ends the epoch.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use flysim_bus::client::Peer;
use flysim_bus::{Artifact, BusError, Client};
use flysim_types::workers::{ArtifactRef, Params};
use flysim_types::{DomainRequestId, Id, Scope};
use serde_json::{Map, Value};

use crate::outcome::Outcome;

/// One request on the lane.
#[derive(Debug)]
pub struct LocalRequest {
    /// The caller, as the router would stamp it.
    pub caller: Peer,
    /// The service incarnation the caller pinned (`None`: whoever serves the name now).
    pub expected_incarnation: Option<String>,
    /// The domain request id.
    pub request_id: DomainRequestId,
    /// The scope, or `None` for scope-free methods.
    pub scope: Option<Scope>,
    /// The params (their variant names the method), already checked for bus identities,
    /// shared with the caller's retries.
    pub params: Arc<Params>,
    /// Its artifacts.
    pub attachments: Vec<(Id, Artifact)>,
}

/// A terminal outcome from the lane.
#[derive(Debug)]
pub struct LocalReply {
    /// The outcome.
    pub outcome: Outcome,
    /// The reply's artifacts.
    pub attachments: Vec<(Id, Artifact)>,
    /// The service incarnation that answered.
    pub service_incarnation: String,
    /// Who answered (the worker's bus identity).
    pub responder: Peer,
}

/// What a lane's call resolves to: the reply, or the bus-equivalent refusal (`NO_SERVICE`,
/// `TARGET_CHANGED`, a lost worker).
pub type LocalFuture = Pin<Box<dyn Future<Output = Result<LocalReply, BusError>> + Send>>;

/// Serves one call on `runtime`, the worker's runtime, to completion even if the caller stops
/// waiting; `gone` makes the answer if that runtime drops it unfinished.
///
/// A caller already running on that runtime (in-process mode: coordinator and workers share
/// one current-thread runtime) polls the work in place: a call that never has to wait, which
/// is nearly every step operation there, then costs no task, no channel and no scheduler turn.
/// Work that does have to wait, or that is dropped before it was first polled, moves into a
/// task of `runtime` as it is and is finished there.
pub fn serve_on<T, W, G>(
    runtime: tokio::runtime::Handle,
    work: W,
    gone: G,
) -> Pin<Box<dyn Future<Output = T> + Send>>
where
    T: Send + 'static,
    W: Future<Output = T> + Send + 'static,
    G: FnOnce() -> T + Send + 'static,
{
    let here = tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == runtime.id());
    let mut call = InPlace {
        state: CallState::Waiting(Box::pin(work), gone),
        runtime,
    };
    if !here {
        call.spawn();
    }
    Box::pin(call)
}

/// Where the work of a [`serve_on`] call is; `G` makes the answer if the work is lost.
enum CallState<T, G> {
    /// Not started, or started in place and not yet waiting.
    Waiting(Pin<Box<dyn Future<Output = T> + Send>>, G),
    /// A task of the worker's runtime, answering on the channel.
    Spawned(tokio::sync::oneshot::Receiver<T>, G),
    /// Answered.
    Done,
}

struct InPlace<T: Send + 'static, G> {
    state: CallState<T, G>,
    runtime: tokio::runtime::Handle,
}

impl<T: Send + 'static, G> InPlace<T, G> {
    /// Hands unfinished work to a task of the worker's runtime.
    fn spawn(&mut self) {
        if let CallState::Waiting(work, gone) = std::mem::replace(&mut self.state, CallState::Done)
        {
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.runtime.spawn(async move {
                let _ = tx.send(work.await);
            });
            self.state = CallState::Spawned(rx, gone);
        }
    }
}

// Nothing in it is pinned structurally: the work is boxed.
impl<T: Send + 'static, G> Unpin for InPlace<T, G> {}

impl<T: Send + 'static, G: FnOnce() -> T> Future for InPlace<T, G> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<T> {
        use std::task::Poll;
        let this = &mut *self;
        if let CallState::Waiting(work, _) = &mut this.state {
            if let Poll::Ready(reply) = work.as_mut().poll(cx) {
                this.state = CallState::Done;
                return Poll::Ready(reply);
            }
            // It has to wait: the rest runs as a task (whose first poll registers its own
            // waker), so it completes even if this caller goes away.
            this.spawn();
        }
        let CallState::Spawned(rx, _) = &mut this.state else {
            return Poll::Pending;
        };
        let Poll::Ready(answer) = Pin::new(rx).poll(cx) else {
            return Poll::Pending;
        };
        match std::mem::replace(&mut this.state, CallState::Done) {
            CallState::Spawned(_, gone) => Poll::Ready(answer.unwrap_or_else(|_| gone())),
            _ => Poll::Pending,
        }
    }
}

impl<T: Send + 'static, G> Drop for InPlace<T, G> {
    fn drop(&mut self) {
        // Dropped before it was ever polled: the work still runs, as a task.
        if matches!(self.state, CallState::Waiting(..)) {
            self.spawn();
        }
    }
}

/// A worker served in this process.
pub trait LocalService: Send + Sync {
    /// Starts serving `request`; the work proceeds even if the returned future is dropped (a
    /// caller's deadline passing leaves the outcome uncertain, as on the bus).
    fn call(&self, request: LocalRequest) -> LocalFuture;
}

/// The handle stored on a bus client for one service name.
struct Entry(Arc<dyn LocalService>);

/// Offers `service` as the local lane to the service `name` on `client` (and its clones).
pub fn offer(client: &Client, name: &str, service: Arc<dyn LocalService>) {
    client.offer_local(name, Arc::new(Entry(service)));
}

/// The local lane to `name` offered on `client`, if any.
#[must_use]
pub fn lookup(client: &Client, name: &str) -> Option<Arc<dyn LocalService>> {
    let handle = client.local(name)?;
    handle.downcast::<Entry>().ok().map(|e| Arc::clone(&e.0))
}

/// Replaces, anywhere in `value`, an object that is exactly one of the `from` refs by the
/// matching `to` ref (a promoted artifact's ref where the payload named the in-memory one).
pub fn rewrite_refs(value: &mut Value, pairs: &[(ArtifactRef, ArtifactRef)]) {
    match value {
        Value::Object(map) => {
            if map.len() == 6 && map.contains_key("artifactId") && map.contains_key("storeId") {
                let found = serde_json::from_value::<ArtifactRef>(Value::Object(map.clone()))
                    .ok()
                    .and_then(|r| pairs.iter().find(|(from, _)| *from == r));
                if let Some((_, to)) = found {
                    if let Ok(Value::Object(to)) = serde_json::to_value(to) {
                        *map = to;
                    }
                    return;
                }
            }
            for item in map.values_mut() {
                rewrite_refs(item, pairs);
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, pairs);
            }
        }
        _ => {}
    }
}

/// Promotes every in-memory artifact of `attachments` with `promote`, and rewrites their refs in
/// `payload`. Returns the attachments to send (promoted where needed).
///
/// # Errors
///
/// The first promotion that fails.
pub(crate) async fn promote_all<F, Fut>(
    attachments: &[(&str, &Artifact)],
    payload: &mut Map<String, Value>,
    promote: F,
) -> Result<Vec<(String, Artifact)>, BusError>
where
    F: Fn(Artifact) -> Fut,
    Fut: Future<Output = Result<Artifact, BusError>>,
{
    let mut out = Vec::with_capacity(attachments.len());
    let mut pairs = Vec::new();
    for (name, artifact) in attachments {
        if artifact.is_local() {
            let sealed = promote((*artifact).clone()).await?;
            pairs.push((artifact.reference().clone(), sealed.reference().clone()));
            out.push(((*name).to_owned(), sealed));
        } else {
            out.push(((*name).to_owned(), (*artifact).clone()));
        }
    }
    if !pairs.is_empty() {
        let mut value = Value::Object(std::mem::take(payload));
        rewrite_refs(&mut value, &pairs);
        if let Value::Object(map) = value {
            *payload = map;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The task a served call ran in.
    fn task() -> Option<tokio::task::Id> {
        tokio::task::try_id()
    }

    #[test]
    fn a_call_on_the_workers_runtime_runs_in_place_and_elsewhere_as_its_task() {
        let rt = current_thread();
        let other = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let here = rt.handle().clone();
        let (caller, seen) = rt.block_on(async {
            (
                task(),
                serve_on(here, async { Some(task()) }, || None).await,
            )
        });
        assert_eq!(seen, Some(caller), "polled in place, in the caller's task");
        let there = other.handle().clone();
        let (caller, seen) = rt.block_on(async {
            (
                task(),
                serve_on(there, async { Some(task()) }, || None).await,
            )
        });
        assert!(
            matches!(seen, Some(Some(_))) && seen != Some(caller),
            "ran as a task of the worker's runtime"
        );
    }

    #[test]
    fn a_call_that_waits_or_is_dropped_still_completes_on_the_workers_runtime() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let rt = current_thread();
        let done = Arc::new(AtomicU32::new(0));
        let gate = Arc::new(tokio::sync::Notify::new());
        rt.block_on(async {
            // Waits in place, is moved into a task, and its caller gives up.
            let work = {
                let (done, gate) = (Arc::clone(&done), Arc::clone(&gate));
                async move {
                    gate.notified().await;
                    done.fetch_add(1, Ordering::SeqCst);
                    task()
                }
            };
            let call = serve_on(tokio::runtime::Handle::current(), work, || None);
            let waited = tokio::time::timeout(std::time::Duration::from_millis(5), call).await;
            assert!(waited.is_err(), "it waits for the gate");
            // Dropped before it was ever polled.
            let work = {
                let done = Arc::clone(&done);
                async move {
                    done.fetch_add(10, Ordering::SeqCst);
                    task()
                }
            };
            drop(serve_on(tokio::runtime::Handle::current(), work, || None));
            gate.notify_one();
            for _ in 0..100 {
                if done.load(Ordering::SeqCst) == 11 {
                    break;
                }
                tokio::task::yield_now().await;
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 11, "both calls completed");
        // A waiting call whose caller stays gets its task's answer.
        let answer = rt.block_on(async {
            let gate = Arc::new(tokio::sync::Notify::new());
            let opened = Arc::clone(&gate);
            let call = serve_on(
                tokio::runtime::Handle::current(),
                async move {
                    opened.notified().await;
                    Some(task())
                },
                || None,
            );
            tokio::spawn(async move { gate.notify_one() });
            call.await
        });
        assert!(matches!(answer, Some(Some(_))), "{answer:?}");
    }

    #[test]
    fn a_call_its_runtime_drops_unfinished_answers_gone() {
        let rt = current_thread();
        let worker = current_thread();
        let call = serve_on(
            worker.handle().clone(),
            std::future::pending::<&str>(),
            || "gone",
        );
        drop(worker);
        assert_eq!(rt.block_on(call), "gone");
    }

    fn r(store: &str, id: &str) -> ArtifactRef {
        ArtifactRef {
            store_id: Id::parse(store).unwrap(),
            artifact_id: Id::parse(id).unwrap(),
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(4),
            content_type: "image/x-rgba8".into(),
            digest: None,
        }
    }

    #[test]
    fn refs_are_rewritten_wherever_they_appear_and_nothing_else_is() {
        let (from, to, other) = (
            r("local-x-1", "a-1"),
            r("store-x", "a-9"),
            r("local-x-1", "a-2"),
        );
        let mut value = json!({
            "views": [{"viewId": "v", "pixels": from}, {"viewId": "w", "pixels": other}],
            "nested": {"deep": [from]},
            "near": {"artifactId": "a-1", "storeId": "local-x-1"},
        });
        rewrite_refs(&mut value, &[(from.clone(), to.clone())]);
        let to = serde_json::to_value(&to).unwrap();
        assert_eq!(value["views"][0]["pixels"], to);
        assert_eq!(value["nested"]["deep"][0], to);
        assert_eq!(
            value["views"][1]["pixels"],
            serde_json::to_value(&other).unwrap()
        );
        assert_eq!(
            value["near"],
            json!({"artifactId": "a-1", "storeId": "local-x-1"})
        );
    }
}
