//! One test per registered `FS052x` code of this crate (the explain pages name these tests).

use std::sync::Arc;
use std::time::Duration;

use flysim_rpc::{Executed, RetryPolicy};
use flysim_types::workers::Method;
use serde_json::json;

use flysim_testkit::{Bus, Transport, runtime};

use crate::{caller, endpoint, obj, params, result, scope, serve};

#[test]
fn a_reply_from_another_worker_is_refused() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 61);
        let worker = bus.client("fly-b").await;
        let coord = bus.client("coord").await;
        let svc = worker.register("agent.fly-b", 4, 2).await.unwrap();
        let pin = svc.incarnation().to_owned();
        let other = Arc::new(flysim_rpc::RpcEndpoint::new(
            flysim_types::Id::parse("fly-b").unwrap(),
            flysim_types::Id::parse("inc-1").unwrap(),
        ));
        let _server = serve(svc, other, |r| async move {
            Executed {
                result: Ok(result(r.method, 1)),
                artifacts: Vec::new(),
            }
        });
        let rpc = caller(&coord, "agent.fly-b", &pin);
        let p = rpc.prepare(None, params(Method::WorkerStatus, 0)).unwrap();
        let e = rpc.call(&p, &[], None).await.unwrap_err();
        assert_eq!(e.code_str(), "FS0520", "{e}");
    });
}

#[test]
fn retries_that_never_settle_are_uncertain() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 62);
        let worker = bus.client("fly-a").await;
        let coord = bus.client("coord").await;
        let svc = worker.register("agent.fly-a", 4, 4).await.unwrap();
        let pin = svc.incarnation().to_owned();
        let _server = serve(svc, endpoint(), |r| async move {
            std::future::pending::<()>().await;
            Executed {
                result: Ok(result(r.method, 1)),
                artifacts: Vec::new(),
            }
        });
        let rpc = caller(&coord, "agent.fly-a", &pin);
        let p = rpc
            .prepare(scope(0), params(Method::EnvironmentAdvance, 0))
            .unwrap();
        let policy = RetryPolicy {
            attempts: 3,
            per_attempt: Duration::from_millis(40),
            backoff: Duration::from_millis(5),
        };
        let e = rpc.call_with_retry(&p, &[], policy).await.unwrap_err();
        assert_eq!(e.code_str(), "FS0521", "{e}");
        assert!(e.is_uncertain());
    });
}

#[test]
fn no_new_id_for_an_uncertain_advance() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 63);
        let coord = bus.client("coord").await;
        let rpc = caller(&coord, "env.world", "svc-0-1");
        let p = rpc
            .prepare(scope(3), params(Method::EnvironmentAdvance, 0))
            .unwrap();
        let uncertain = flysim_rpc::RpcError::Bus(flysim_bus::BusError::DeadlineElapsed {
            dispatch: flysim_bus::Dispatch::Unknown,
        });
        let e = rpc.reissue(&p, &uncertain).unwrap_err();
        assert_eq!(e.code_str(), "FS0522");
        let refused = flysim_rpc::RpcError::Bus(flysim_bus::BusError::DeadlineElapsed {
            dispatch: flysim_bus::Dispatch::NotDispatched,
        });
        assert!(rpc.reissue(&p, &refused).is_ok());
    });
}

#[test]
fn a_malformed_outcome_is_refused() {
    runtime().block_on(async {
        let bus = Bus::start(Transport::Memory, 64);
        let worker = bus.client("fly-a").await;
        let coord = bus.client("coord").await;
        let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
        let pin = svc.incarnation().to_owned();
        tokio::spawn(async move {
            let req = svc.next().await.unwrap();
            req.responder
                .reply(obj(json!({"type": "maybe"})), &[])
                .await
                .unwrap();
            svc
        });
        let rpc = caller(&coord, "agent.fly-a", &pin);
        let p = rpc.prepare(None, params(Method::WorkerStatus, 0)).unwrap();
        let e = rpc.call(&p, &[], None).await.unwrap_err();
        assert_eq!(e.code_str(), "FS0523", "{e}");
        let _ = bus.root();
    });
}
