//! Deduplication end to end: lost results, retransmission, conflicts, windows, acknowledge,
//! and cached artifacts replayed after their first caller consumed them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flysim_bus::Artifact;
use flysim_rpc::{Executed, Outcome, RetryPolicy, RpcError, RpcReply};
use flysim_types::workers::{AcknowledgeParams, Method, Params};
use flysim_types::{DomainRequestId, Id};
use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;

use flysim_testkit::{Bus, Trace, Transport, both, settle};

use crate::{caller, endpoint, mark, obj, params, result, scope, serve};

fn show(reply: &RpcReply) -> String {
    match &reply.outcome {
        Outcome::Success(s) => format!("{} result {}", s.request_id, mark(&s.result)),
        Outcome::Failure(f) => format!(
            "{} error {:?} ({:?})",
            f.request_id, f.error.code, f.error.mutation
        ),
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        attempts: 200,
        per_attempt: Duration::from_secs(5),
        backoff: Duration::from_millis(5),
    }
}

/// What `retransmission` observes, on every transport.
const RETRANSMISSION: [&str; 13] = [
    "first attempt: FS0508 uncertain=true",
    "a new id for it: FS0522",
    "retransmission while running: req-1 error InProgress (None)",
    r#"retransmission after: req-1 result Agent.Prepare "m-1""#,
    "executions 1",
    "same key, new id: req-2 error Conflict (None)",
    r#"same id, changed body: "CONFLICT""#,
    r#"step 1: req-3 result Agent.Prepare "m-2""#,
    r#"step 2: req-4 result Agent.Prepare "m-3""#,
    "expired retry: req-1 error ResultExpired (None)",
    "fresh id, old step: req-5 error StaleStep (None)",
    r#"status twice: req-6 result Worker.Status "4" / req-6 result Worker.Status "4""#,
    "executions 4",
];

async fn retransmission(t: Transport) -> Trace {
    let bus = Bus::start(t, 51);
    let mut trace = Trace::new();
    let worker = bus.client("fly-a").await;
    let coord = bus.client("coord").await;
    let svc = worker.register("agent.fly-a", 8, 4).await.unwrap();
    let pin = svc.incarnation().to_owned();
    let executions = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Notify::new());
    let ep = endpoint();
    let (runs, open) = (Arc::clone(&executions), Arc::clone(&gate));
    let server = serve(svc, Arc::clone(&ep), move |r| {
        let (runs, open) = (Arc::clone(&runs), Arc::clone(&open));
        async move {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            if r.scope.as_ref().is_some_and(|s| s.step.get() == 0) {
                open.notified().await;
            }
            Executed {
                result: Ok(result(r.method, n)),
                artifacts: Vec::new(),
            }
        }
    });
    let rpc = caller(&coord, "agent.fly-a", &pin);
    let prepare = rpc
        .prepare(scope(0), params(Method::AgentPrepare, 0))
        .unwrap();
    // The first attempt's result is lost: its deadline passes while the handler runs.
    let e = rpc
        .call(
            &prepare,
            &[],
            Some(Instant::now() + Duration::from_millis(80)),
        )
        .await
        .unwrap_err();
    trace.push(format!(
        "first attempt: {} uncertain={}",
        e.code_str(),
        e.is_uncertain()
    ));
    let e2 = rpc.reissue(&prepare, &e).unwrap_err();
    trace.push(format!("a new id for it: {}", e2.code_str()));
    let again = rpc.call(&prepare, &[], None).await.unwrap();
    trace.push(format!("retransmission while running: {}", show(&again)));
    gate.notify_one();
    let replay = rpc.call_with_retry(&prepare, &[], policy()).await.unwrap();
    trace.push(format!("retransmission after: {}", show(&replay)));
    trace.push(format!("executions {}", executions.load(Ordering::SeqCst)));
    let other_id = rpc
        .prepare(scope(0), params(Method::AgentPrepare, 0))
        .unwrap();
    trace.push(format!(
        "same key, new id: {}",
        show(&rpc.call(&other_id, &[], None).await.unwrap())
    ));
    // Valid params, other than the first request's.
    let other = params(Method::AgentPrepare, 1).to_map().unwrap();
    let changed = obj(json!({"requestId": "req-1", "scope": scope(0), "params": other}));
    let raw = coord
        .call(
            "agent.fly-a",
            Method::AgentPrepare.as_str(),
            changed,
            &[],
            Some(&pin),
            None,
        )
        .await
        .unwrap();
    trace.push(format!(
        "same id, changed body: {}",
        raw.outcome["error"]["code"]
    ));
    for step in [1, 2] {
        let p = rpc
            .prepare(scope(step), params(Method::AgentPrepare, step))
            .unwrap();
        trace.push(format!(
            "step {step}: {}",
            show(&rpc.call(&p, &[], None).await.unwrap())
        ));
    }
    trace.push(format!(
        "expired retry: {}",
        show(&rpc.call(&prepare, &[], None).await.unwrap())
    ));
    let fresh_old = rpc
        .prepare(scope(0), params(Method::AgentCommit, 0))
        .unwrap();
    trace.push(format!(
        "fresh id, old step: {}",
        show(&rpc.call(&fresh_old, &[], None).await.unwrap())
    ));
    let status = rpc.prepare(None, params(Method::WorkerStatus, 0)).unwrap();
    let s1 = rpc.call(&status, &[], None).await.unwrap();
    let s2 = rpc.call(&status, &[], None).await.unwrap();
    trace.push(format!("status twice: {} / {}", show(&s1), show(&s2)));
    trace.push(format!("executions {}", executions.load(Ordering::SeqCst)));
    server.abort();
    assert_eq!(trace, RETRANSMISSION, "over {t:?}");
    trace
}
both!(a_lost_result_is_replayed_not_executed_again, retransmission);

async fn cached_artifact(t: Transport) -> Trace {
    let bus = Bus::start(t, 52);
    let mut trace = Trace::new();
    let worker = bus.client("fly-a").await;
    let coord = bus.client("coord").await;
    let svc = worker.register("env.world", 8, 4).await.unwrap();
    let pin = svc.incarnation().to_owned();
    let executions = Arc::new(AtomicU64::new(0));
    let runs = Arc::clone(&executions);
    let producer = worker.clone();
    let server = serve(svc, endpoint(), move |r| {
        let (runs, producer) = (Arc::clone(&runs), producer.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let step = r.scope.as_ref().map_or(0, |s| s.step.get());
            let bytes = vec![u8::try_from(step).unwrap_or(0); 4096];
            let mut w = producer
                .allocate(bytes.len() as u64, "image/rgba8")
                .await
                .unwrap();
            w.write(&bytes).unwrap();
            let frame = w
                .seal(Some(flysim_types::digest::sha256(&bytes)))
                .await
                .unwrap();
            Executed {
                result: Ok(result(r.method, step + 1)),
                artifacts: vec![(Id::parse("frame").unwrap(), frame)],
            }
        }
    });
    let rpc = caller(&coord, "env.world", &pin);
    let advance = rpc
        .prepare(scope(7), params(Method::EnvironmentAdvance, 7))
        .unwrap();
    let first = rpc.call(&advance, &[], None).await.unwrap();
    let bytes = first.attachments[0].1.read().await.unwrap();
    trace.push(format!(
        "first caller: {} frame {} bytes of {}",
        show(&first),
        bytes.len(),
        bytes[0]
    ));
    drop(first);
    let s = settle(&bus.router, |s| s.roots == 1).await;
    trace.push(format!(
        "after the first caller consumed it: artifacts {} roots {}",
        s.artifacts, s.roots
    ));
    let retry = rpc.call(&advance, &[], None).await.unwrap();
    let (name, frame): &(Id, Artifact) = &retry.attachments[0];
    let again = frame.read().await.unwrap();
    trace.push(format!(
        "retry replays {}: {name} readable {} equal {}",
        show(&retry),
        again.len(),
        again == bytes
    ));
    trace.push(format!("executions {}", executions.load(Ordering::SeqCst)));
    drop(retry);
    for step in [8, 9] {
        let p = rpc
            .prepare(scope(step), params(Method::EnvironmentAdvance, step))
            .unwrap();
        drop(rpc.call(&p, &[], None).await.unwrap());
    }
    let s = settle(&bus.router, |s| s.artifacts == 2 && s.roots == 2).await;
    trace.push(format!(
        "step 7 evicted with its hold: artifacts {} roots {}",
        s.artifacts, s.roots
    ));
    server.abort();
    assert_eq!(
        trace,
        [
            r#"first caller: req-1 result Environment.Advance "m-8" frame 4096 bytes of 7"#,
            "after the first caller consumed it: artifacts 1 roots 1",
            r#"retry replays req-1 result Environment.Advance "m-8": frame readable 4096 equal true"#,
            "executions 1",
            "step 7 evicted with its hold: artifacts 2 roots 2",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    a_cached_artifact_is_replayable_after_its_first_caller_consumed_it,
    cached_artifact
);

async fn acknowledge(t: Transport) -> Trace {
    let bus = Bus::start(t, 53);
    let mut trace = Trace::new();
    let worker = bus.client("fly-a").await;
    let coord = bus.client("coord").await;
    let svc = worker.register("agent.fly-a", 8, 4).await.unwrap();
    let pin = svc.incarnation().to_owned();
    let server = serve(svc, endpoint(), |r| async move {
        Executed {
            result: Ok(result(r.method, r.request_id.0)),
            artifacts: Vec::new(),
        }
    });
    let rpc = caller(&coord, "agent.fly-a", &pin);
    let mut first = None;
    for i in 0..16 {
        let p = rpc
            .prepare(None, params(Method::AgentInitialize, i))
            .unwrap();
        rpc.call(&p, &[], None).await.unwrap();
        first.get_or_insert(p);
    }
    let extra = rpc
        .prepare(None, params(Method::AgentInitialize, 16))
        .unwrap();
    trace.push(format!(
        "17th unacknowledged: {}",
        show(&rpc.call(&extra, &[], None).await.unwrap())
    ));
    let ack = rpc
        .prepare(
            None,
            AcknowledgeParams {
                request_ids: [1, 2, 99].map(DomainRequestId).to_vec(),
            },
        )
        .unwrap();
    trace.push(format!(
        "acknowledge: {}",
        show(&rpc.call(&ack, &[], None).await.unwrap())
    ));
    trace.push(format!(
        "after: {}",
        show(&rpc.call(&extra, &[], None).await.unwrap())
    ));
    let first = first.unwrap();
    trace.push(format!(
        "acknowledged retry: {}",
        show(&rpc.call(&first, &[], None).await.unwrap())
    ));
    // Params no typed value can hold arrive only over the bus: refused where they are decoded.
    let bad = coord
        .call(
            "agent.fly-a",
            Method::WorkerAcknowledge.as_str(),
            obj(
                json!({"requestId": "req-19", "scope": null, "params": {"requestIds": ["call-1"]}}),
            ),
            &[],
            Some(&pin),
            None,
        )
        .await
        .unwrap();
    trace.push(format!(
        "bad acknowledge: {} {}",
        bad.outcome["requestId"], bad.outcome["error"]["code"]
    ));
    let Params::AgentInitialize(mut hidden) = params(Method::AgentInitialize, 0) else {
        unreachable!()
    };
    let context = obj(json!({"x": {"callId": "call-1"}}));
    hidden.initial_decision_context.value = context;
    let e: RpcError = rpc.prepare(None, hidden).unwrap_err();
    trace.push(format!("bus identity in params: {}", e.code_str()));
    server.abort();
    assert_eq!(
        trace,
        [
            "17th unacknowledged: req-17 error Busy (None)",
            r#"acknowledge: req-18 result Worker.Acknowledge ["req-1","req-2"]"#,
            r#"after: req-17 result Agent.Initialize "m-17""#,
            "acknowledged retry: req-1 error ResultExpired (None)",
            r#"bad acknowledge: "req-19" "INVALID_ARGUMENT""#,
            "bus identity in params: FS0122",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    lifecycle_replies_are_retained_until_acknowledged,
    acknowledge
);

/// Request ids increase per caller, so two callers use the same serials: a second client's
/// `Worker.Status` with `req-1` is its own query, neither a `CONFLICT` with the first client's
/// `Worker.Hello` `req-1` nor a replay of it, and each caller's retry replays its own reply.
/// The same holds for lifecycle replies, which only their caller can acknowledge.
async fn per_caller(t: Transport) -> Trace {
    let bus = Bus::start(t, 54);
    let mut trace = Trace::new();
    let worker = bus.client("fly-a").await;
    let coord = bus.client("coord").await;
    let monitor = bus.client("monitor").await;
    let svc = worker.register("agent.fly-a", 8, 4).await.unwrap();
    let pin = svc.incarnation().to_owned();
    let executions = Arc::new(AtomicU64::new(0));
    let runs = Arc::clone(&executions);
    let server = serve(svc, endpoint(), move |r| {
        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            Executed {
                result: Ok(result(r.method, n)),
                artifacts: Vec::new(),
            }
        }
    });
    let first = caller(&coord, "agent.fly-a", &pin);
    let second = caller(&monitor, "agent.fly-a", &pin);
    let hello = first.prepare(None, params(Method::WorkerHello, 0)).unwrap();
    let status = second
        .prepare(None, params(Method::WorkerStatus, 0))
        .unwrap();
    trace.push(format!(
        "ids: {} and {}",
        hello.request_id(),
        status.request_id()
    ));
    for (who, rpc, request) in [
        ("coord hello", &first, &hello),
        ("monitor status", &second, &status),
        ("coord hello again", &first, &hello),
        ("monitor status again", &second, &status),
    ] {
        let reply = rpc.call(request, &[], None).await.unwrap();
        trace.push(format!("{who}: {}", show(&reply)));
    }
    let init_a = first
        .prepare(None, params(Method::AgentInitialize, 1))
        .unwrap();
    let init_b = second
        .prepare(None, params(Method::AgentInitialize, 2))
        .unwrap();
    for (who, rpc, request) in [("coord", &first, &init_a), ("monitor", &second, &init_b)] {
        let reply = rpc.call(request, &[], None).await.unwrap();
        trace.push(format!("{who} initialize: {}", show(&reply)));
    }
    let ack = second
        .prepare(
            None,
            AcknowledgeParams {
                request_ids: vec![init_a.request_id()],
            },
        )
        .unwrap();
    let reply = second.call(&ack, &[], None).await.unwrap();
    trace.push(format!("monitor acknowledges req-2: {}", show(&reply)));
    let reply = first.call(&init_a, &[], None).await.unwrap();
    trace.push(format!("coord initialize retry: {}", show(&reply)));
    trace.push(format!("executions {}", executions.load(Ordering::SeqCst)));
    server.abort();
    let expected = [
        "ids: req-1 and req-1",
        r#"coord hello: req-1 result Worker.Hello "m-1""#,
        r#"monitor status: req-1 result Worker.Status "2""#,
        r#"coord hello again: req-1 result Worker.Hello "m-1""#,
        r#"monitor status again: req-1 result Worker.Status "2""#,
        r#"coord initialize: req-2 result Agent.Initialize "m-3""#,
        r#"monitor initialize: req-2 result Agent.Initialize "m-4""#,
        r#"monitor acknowledges req-2: req-3 result Worker.Acknowledge ["req-2"]"#,
        r#"coord initialize retry: req-2 result Agent.Initialize "m-3""#,
        "executions 4",
    ];
    assert_eq!(trace, expected, "over {t:?}");
    trace
}
both!(
    query_and_lifecycle_replies_are_cached_per_caller,
    per_caller
);

/// A reply whose frame was sealed in the same write (a queued seal) and whose seal the router
/// refused: the router refuses the reply too, so the first attempt sees no result; the retry
/// gets the cached failure (`BACKEND_FAILURE`, mutation applied) instead of the undeliverable
/// reply, and nothing runs twice.
async fn refused_seal(t: Transport) -> Trace {
    let bus = Bus::start(t, 55);
    let mut trace = Trace::new();
    let worker = bus.client("env").await;
    let coord = bus.client("coord").await;
    let svc = worker.register("env.world", 8, 4).await.unwrap();
    let pin = svc.incarnation().to_owned();
    let executions = Arc::new(AtomicU64::new(0));
    let runs = Arc::clone(&executions);
    let producer = worker.clone();
    let server = serve(svc, endpoint(), move |_r| {
        let (runs, producer) = (Arc::clone(&runs), producer.clone());
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let mut w = producer.allocate(4, "image/rgba8").await.unwrap();
            w.write(b"abcd").unwrap();
            // A digest that is not the bytes': the router will refuse the seal.
            let frame = w
                .seal_queued(Some(flysim_types::digest::sha256(b"abce")))
                .unwrap();
            Executed {
                result: Ok(result(Method::EnvironmentAdvance, 8)),
                artifacts: vec![(Id::parse("frame").unwrap(), frame)],
            }
        }
    });
    let rpc = caller(&coord, "env.world", &pin);
    let advance = rpc
        .prepare(scope(7), params(Method::EnvironmentAdvance, 7))
        .unwrap();
    let e = rpc
        .call(
            &advance,
            &[],
            Some(Instant::now() + Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    trace.push(format!(
        "first attempt: {} uncertain={}",
        e.code_str(),
        e.is_uncertain()
    ));
    let retry = rpc.call(&advance, &[], None).await.unwrap();
    trace.push(format!("retry: {}", show(&retry)));
    trace.push(format!("executions {}", executions.load(Ordering::SeqCst)));
    server.abort();
    assert_eq!(
        trace,
        [
            "first attempt: FS0508 uncertain=true",
            "retry: req-1 error BackendFailure (Applied)",
            "executions 1",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    a_reply_whose_queued_seal_was_refused_becomes_a_cached_failure,
    refused_seal
);
