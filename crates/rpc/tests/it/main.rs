//! Session RPC integration tests; every scenario runs on both transports with identical traces.

#![allow(
    clippy::disallowed_methods,
    reason = "tests bound their waits with deadlines of their own"
)]

mod codes;
mod dedup;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flysim_bus::{Client, ClientOptions, Router, RouterConfig, Service};
use flysim_rpc::{Executed, RpcCaller, RpcEndpoint, RpcRequest};
use flysim_types::{Id, Scope, U64};
use serde_json::{Map, Value};

/// The two transports every scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Memory,
    Unix,
}

/// A router on a private temp root.
pub(crate) struct Bus {
    pub(crate) router: Router,
    transport: Transport,
    root: tempfile::TempDir,
    incarnation: AtomicU64,
}

impl Bus {
    pub(crate) fn start(transport: Transport, tag: u64) -> Self {
        let root = tempfile::tempdir().unwrap();
        let router = Router::start(RouterConfig {
            store_root: root.path().join("store"),
            limits: flysim_bus::Limits::default(),
            tag: Some(tag),
        })
        .unwrap();
        if transport == Transport::Unix {
            router
                .listen_unix(&root.path().join("sock/router.sock"))
                .unwrap();
        }
        Self {
            router,
            transport,
            root,
            incarnation: AtomicU64::new(0),
        }
    }

    pub(crate) async fn client(&self, id: &str) -> Client {
        let options = ClientOptions {
            client_id: Id::parse(id).unwrap(),
            incarnation: self.incarnation.fetch_add(1, Ordering::SeqCst) + 1,
            store_root: self.root.path().join("store"),
        };
        match self.transport {
            Transport::Memory => Client::connect(self.router.connect_in_memory(64 * 1024), options)
                .await
                .unwrap(),
            Transport::Unix => {
                Client::connect_unix(&self.root.path().join("sock/router.sock"), options)
                    .await
                    .unwrap()
            }
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.root.path()
    }
}

pub(crate) fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

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

pub(crate) fn endpoint() -> Arc<RpcEndpoint> {
    Arc::new(RpcEndpoint::new(
        Id::parse("fly-a").unwrap(),
        Id::parse("inc-1").unwrap(),
    ))
}

pub(crate) type Trace = Vec<String>;

/// Runs a scenario on both transports and requires identical, non-empty traces.
macro_rules! both {
    ($name:ident, $scenario:path) => {
        #[tokio::test]
        async fn $name() {
            let memory = $scenario(crate::Transport::Memory).await;
            let unix = $scenario(crate::Transport::Unix).await;
            assert!(!memory.is_empty(), "the scenario recorded no trace");
            assert_eq!(
                memory, unix,
                "the behaviour traces differ between transports"
            );
        }
    };
}
pub(crate) use both;
