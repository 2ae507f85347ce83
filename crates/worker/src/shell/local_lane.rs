//! [`LocalLane`]: the in-process lane to one worker's endpoint (contracts §3.11), beside its bus
//! service: the same admission, dedup, mutation gate and phases, on the worker's own runtime.
//!
//! It knows which service incarnation serves and how a reply of the local lane is framed; what a
//! request does is `dispatch`'s.

use std::sync::{Arc, Mutex};

use flysim_bus::{BusError, Dispatch, ErrorCode};
use flysim_rpc::RpcError;
use flysim_rpc::local::{LocalFuture, LocalReply, LocalRequest, LocalService};

use super::dispatch::Worker;
use super::lock;

/// What a serving shell shares with its local lane.
pub(super) struct Serving {
    pub(super) worker: Arc<Worker>,
    pub(super) runtime: tokio::runtime::Handle,
    /// The bus service incarnation (what callers pin).
    pub(super) incarnation: String,
}

/// The local lane to one in-process worker (contracts §3.11): requests reach the shell's
/// endpoint directly, through the same admission, dedup, mutation gate and phases as its bus
/// service, on the worker's own runtime. Artifacts of the replies stay in memory.
///
/// It serves while [`WorkerShell::serve`](super::WorkerShell::serve) runs; before and after, a
/// call is `NO_SERVICE`, and a call pinned to a service incarnation other than the current one
/// is `TARGET_CHANGED`, as on the bus.
#[derive(Clone)]
pub struct LocalLane {
    pub(super) name: Arc<str>,
    pub(super) slot: Arc<Mutex<Option<Serving>>>,
}

impl std::fmt::Debug for LocalLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLane")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LocalLane {
    fn refused(&self, code: ErrorCode, message: String, dispatch: Dispatch) -> BusError {
        BusError::Refused {
            op: "rpc.call".into(),
            code,
            message,
            dispatch,
        }
    }
}

impl LocalService for LocalLane {
    fn call(&self, request: LocalRequest) -> LocalFuture {
        let serving = lock(&self.slot).as_ref().map(|s| {
            (
                Arc::clone(&s.worker),
                s.runtime.clone(),
                s.incarnation.clone(),
            )
        });
        let Some((worker, runtime, incarnation)) = serving else {
            let e = self.refused(
                ErrorCode::NoService,
                format!("no service {}", self.name),
                Dispatch::NotDispatched,
            );
            return Box::pin(std::future::ready(Err(e)));
        };
        if let Some(pin) = &request.expected_incarnation
            && *pin != incarnation
        {
            let e = self.refused(
                ErrorCode::TargetChanged,
                format!("{} is now {incarnation}", self.name),
                Dispatch::NotDispatched,
            );
            return Box::pin(std::future::ready(Err(e)));
        }
        let name = Arc::clone(&self.name);
        let gone = move || {
            Err(BusError::Refused {
                op: "rpc.call".into(),
                code: ErrorCode::NoService,
                message: format!("{name} went away during the call"),
                dispatch: Dispatch::Unknown,
            })
        };
        // On the worker's runtime, and to completion even if the caller stops waiting.
        flysim_rpc::local::serve_on(runtime, handle_local(worker, request, incarnation), gone)
    }
}

/// [`super::dispatch::handle`] for a request of the local lane.
async fn handle_local(
    worker: Arc<Worker>,
    request: LocalRequest,
    incarnation: String,
) -> Result<LocalReply, BusError> {
    let endpoint = Arc::clone(&lock(&worker.endpoint));
    let executor = Arc::clone(&worker);
    let duplicate = worker.duplicate_prepare(request.params.method(), || Some(request.request_id));
    // Boxed where it starts: this call's future is then a few hundred bytes, not the
    // endpoint's and the method's state inline, and moving it to the worker's runtime
    // (`serve_on`) copies that much.
    let served =
        Box::pin(endpoint.serve_local(request, move |r| async move { executor.execute(r).await }))
            .await;
    worker.after_request();
    if duplicate {
        // Beside the reply, which it must not hold up: it waits for the original Prepare.
        let forwarding = Arc::clone(&worker);
        tokio::spawn(async move { forwarding.forward_duplicate().await });
    }
    match served {
        Ok((outcome, attachments)) => Ok(LocalReply {
            outcome,
            attachments,
            service_incarnation: incarnation,
            responder: worker.client.hello().identity.clone(),
        }),
        Err(RpcError::Bus(e)) => Err(e),
        Err(other) => Err(BusError::Refused {
            op: "rpc.call".into(),
            code: ErrorCode::CallGone,
            message: other.to_string(),
            dispatch: Dispatch::Dispatched,
        }),
    }
}
