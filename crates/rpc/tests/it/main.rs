//! Session RPC integration tests. Every scenario runs on every transport the bus has (the
//! in-memory byte pipe, the in-process envelope link and the Unix socket) through the shared
//! harness's `both!`, which requires identical traces. This file holds the session-RPC side of
//! the harness: the scope, the endpoint, the caller and the serving loop.

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits with deadlines of their own"
)]

mod codes;
mod dedup;
mod epochs;

use std::sync::Arc;

use flysim_bus::{Client, Service};
use flysim_rpc::{Executed, RpcCaller, RpcEndpoint, RpcRequest};
use flysim_types::{Id, Scope, U64};
use serde_json::{Map, Value};

/// A JSON object from a `json!` literal.
pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// The scope of `step` in session `session-1`, epoch `epoch-1`.
pub(crate) fn scope(step: u64) -> Option<Scope> {
    Some(Scope {
        session_id: Id::parse("session-1").unwrap(),
        epoch: Id::parse("epoch-1").unwrap(),
        step: U64(step),
    })
}

/// Serves `svc` through `endpoint`, running `execute` for admitted requests, each request on
/// its own task so a status query is answered while a mutation runs.
pub(crate) fn serve<F, Fut>(
    mut svc: Service,
    endpoint: Arc<RpcEndpoint>,
    execute: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(RpcRequest) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = Executed> + Send + 'static,
{
    tokio::spawn(async move {
        while let Some(req) = svc.next().await {
            let endpoint = Arc::clone(&endpoint);
            let execute = execute.clone();
            tokio::spawn(async move {
                let _ = endpoint.serve(req, execute).await;
            });
        }
    })
}

/// A caller of `target` expecting worker `fly-a` at incarnation `inc-1`.
pub(crate) fn caller(client: &Client, target: &str, pin: &str) -> RpcCaller {
    RpcCaller::new(
        client.clone(),
        target,
        Some(pin.to_owned()),
        Id::parse("fly-a").unwrap(),
        Id::parse("inc-1").unwrap(),
        0,
    )
}

/// The endpoint of worker `fly-a` at incarnation `inc-1`.
pub(crate) fn endpoint() -> Arc<RpcEndpoint> {
    Arc::new(RpcEndpoint::new(
        Id::parse("fly-a").unwrap(),
        Id::parse("inc-1").unwrap(),
    ))
}
