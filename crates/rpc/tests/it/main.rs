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
use flysim_types::workers::{Method, Params, Results};
use flysim_types::{Id, Scope, U64};
use serde_json::{Map, Value};

/// A JSON object from a `json!` literal.
pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// A valid payload from `fixtures/payloads/valid/`.
fn fixture(kind: &str) -> Map<String, Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/payloads/valid")
        .join(format!("{kind}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    obj(serde_json::from_str(&text).unwrap())
}

/// The fixture kind and the string field a test marks, of `method`'s params and result.
fn marked(method: Method) -> (&'static str, &'static str, &'static str, &'static str) {
    match method {
        Method::WorkerHello => ("hello-params", "sessionId", "hello-result", "incarnationId"),
        Method::AgentInitialize => (
            "agent-initialize-params",
            "agentId",
            "agent-initialize-result",
            "agentId",
        ),
        Method::AgentPrepare => (
            "agent-prepare-params",
            "agentId",
            "prepared-decision",
            "agentId",
        ),
        Method::AgentCommit => (
            "agent-commit-params",
            "agentId",
            "agent-commit-result",
            "agentId",
        ),
        Method::EnvironmentAdvance => ("advance-params", "batchId", "step-result", "batchId"),
        other => panic!("no marked payloads of {other}"),
    }
}

/// Valid params of `method` (a fixture) marked `n`: params with different marks are different
/// bodies. `Worker.Status` has one body only.
pub(crate) fn params(method: Method, n: u64) -> Params {
    if method == Method::WorkerStatus {
        return Params::WorkerStatus(flysim_types::workers::StatusParams {});
    }
    let (kind, field, _, _) = marked(method);
    let mut map = fixture(kind);
    map.insert(field.into(), Value::String(format!("m-{n}")));
    Params::decode(method, map).unwrap()
}

/// A valid result of `method` (a fixture) marked `n`, which [`mark`] reads back.
pub(crate) fn result(method: Method, n: u64) -> Results {
    if method == Method::WorkerStatus {
        let mut map = fixture("status-result");
        map.insert("progressCounter".into(), Value::String(n.to_string()));
        return Results::decode(method, map).unwrap();
    }
    let (_, _, kind, field) = marked(method);
    let mut map = fixture(kind);
    map.insert(field.into(), Value::String(format!("m-{n}")));
    Results::decode(method, map).unwrap()
}

/// A result as a trace shows it: its method and mark (an acknowledgement: what it released).
pub(crate) fn mark(results: &Results) -> String {
    let method = results.method();
    let map = results.to_map().unwrap();
    let field = match method {
        Method::WorkerStatus => "progressCounter",
        Method::WorkerAcknowledge => "acknowledged",
        other => marked(other).3,
    };
    format!("{method} {}", map[field])
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

/// The harness's payloads are what the scenarios rely on: valid for their method, and marked,
/// so that two requests with different marks are different bodies and a replayed result is
/// told from a fresh one by its mark alone.
#[test]
fn marked_payloads_are_valid_and_tell_their_marks_apart() {
    let marked = [
        Method::WorkerHello,
        Method::AgentInitialize,
        Method::AgentPrepare,
        Method::AgentCommit,
        Method::EnvironmentAdvance,
    ];
    for method in marked {
        let (one, two) = (params(method, 1), params(method, 2));
        assert_eq!(one.method(), method);
        one.validate().unwrap();
        assert_ne!(one, two, "{method}");
        assert_ne!(one.to_map().unwrap(), two.to_map().unwrap(), "{method}");
    }
    for method in marked.into_iter().chain([Method::WorkerStatus]) {
        let result = result(method, 7);
        assert_eq!(result.method(), method);
        assert!(
            mark(&result).starts_with(method.as_str()),
            "{}",
            mark(&result)
        );
        assert!(mark(&result).contains('7'), "{}", mark(&result));
        assert_ne!(mark(&result), mark(&crate::result(method, 8)));
    }
}
