//! RPC: registration, routing, correlation, credits, saturation, deadlines, disconnects.

use std::time::Duration;

use flysim_bus::BusError;
use serde_json::{Value, json};
use tokio::time::Instant;

use flysim_testkit::{Bus, Trace, Transport, both, settle};

use crate::obj;

fn failure(e: &BusError) -> String {
    format!("{:?}/{}", e.bus_code(), e.dispatch().as_str())
}

async fn routing(t: Transport) -> Trace {
    let bus = Bus::start(t, 1);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    let incarnation = svc.incarnation().to_owned();
    trace.push(format!("registered {incarnation}"));
    let intruder = bus.client("intruder").await;
    let e = intruder.register("agent.fly-a", 4, 2).await.unwrap_err();
    trace.push(format!("takeover refused {}", failure(&e)));
    let e = worker.register("bad..name", 4, 2).await.unwrap_err();
    trace.push(format!("bad name {}", failure(&e)));
    let server = tokio::spawn(async move {
        while let Some(req) = svc.next().await {
            let outcome = obj(json!({
                "echo": req.payload,
                "method": req.method,
                "caller": req.caller.client_id,
                "callId": req.call_id.to_string(),
            }));
            req.responder.reply(outcome, &[]).await.unwrap();
        }
    });
    for i in 0..3 {
        let r = coord
            .call(
                "agent.fly-a",
                "Worker.Status",
                obj(json!({"i": i})),
                &[],
                Some(&incarnation),
                None,
            )
            .await
            .unwrap();
        trace.push(format!(
            "result {} from {} via {}: {}",
            r.call_id,
            r.responder.client_id,
            r.service_incarnation,
            Value::Object(r.outcome)
        ));
    }
    let e = coord
        .call(
            "agent.fly-a",
            "m",
            obj(json!({})),
            &[],
            Some("svc-0000000000000001-99"),
            None,
        )
        .await
        .unwrap_err();
    trace.push(format!("stale pin {}", failure(&e)));
    let e = coord
        .call("agent.nobody", "m", obj(json!({})), &[], None, None)
        .await
        .unwrap_err();
    trace.push(format!("unknown target {}", failure(&e)));
    let e = coord
        .call("agent.fly-a", "", obj(json!({})), &[], None, None)
        .await
        .unwrap_err();
    trace.push(format!("empty method {}", failure(&e)));
    // The refused calls spent their ids: the next call is call-7.
    let r = coord
        .call("agent.fly-a", "m", obj(json!({})), &[], None, None)
        .await
        .unwrap();
    trace.push(format!("unpinned {}", r.call_id));
    server.abort();
    assert_eq!(
        trace,
        [
            "registered svc-0000000000000001-1",
            "takeover refused Some(Conflict)/not-dispatched",
            "bad name Some(InvalidEnvelope)/not-dispatched",
            r#"result call-1 from worker via svc-0000000000000001-1: {"callId":"call-1","caller":"coord","echo":{"i":0},"method":"Worker.Status"}"#,
            r#"result call-2 from worker via svc-0000000000000001-1: {"callId":"call-2","caller":"coord","echo":{"i":1},"method":"Worker.Status"}"#,
            r#"result call-3 from worker via svc-0000000000000001-1: {"callId":"call-3","caller":"coord","echo":{"i":2},"method":"Worker.Status"}"#,
            "stale pin Some(TargetChanged)/not-dispatched",
            "unknown target Some(NoService)/not-dispatched",
            "empty method Some(InvalidEnvelope)/not-dispatched",
            "unpinned call-7",
        ],
        "over {t:?}"
    );
    trace
}
both!(routing_pinning_and_exclusive_registration, routing);

/// The router holds back its confirmation of a reply (nobody waits for it promptly) until the
/// next frame to that connection or, at most, its short delay (1 ms). A worker that waits for
/// the confirmation with nothing else going on still gets it alone, whether its replies come in
/// quick succession (the router's one timer still armed from the last) or after pauses longer
/// than the delay (the timer armed again).
async fn lone_confirmations(t: Transport) -> Trace {
    let bus = Bus::start(t, 1);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    for (i, pause_ms) in [0u64, 0, 5, 0, 20, 0].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        let call = coord.call("agent.fly-a", "m", obj(json!({"i": i})), &[], None, None);
        let serve = async {
            let req = svc.next().await.unwrap();
            let replied = Instant::now();
            let routed = tokio::time::timeout(
                Duration::from_secs(5),
                req.responder.reply(obj(json!({"i": i})), &[]),
            )
            .await;
            (routed, replied.elapsed())
        };
        let (result, (routed, waited)) = tokio::join!(call, serve);
        let result = result.unwrap();
        let routed = routed.unwrap_or_else(|_| panic!("reply {i}: no confirmation in 5 s"));
        assert!(
            waited < Duration::from_millis(500),
            "reply {i} confirmed after {waited:?}"
        );
        trace.push(format!(
            "reply {i}: {} routed {}",
            Value::Object(result.outcome),
            routed.unwrap()
        ));
    }
    assert_eq!(trace.len(), 6);
    trace
}
both!(
    a_confirmation_nothing_else_carries_arrives_alone,
    lone_confirmations
);

async fn out_of_order(t: Transport) -> Trace {
    let bus = Bus::start(t, 2);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("env.world", 4, 2).await.unwrap();
    let first = coord
        .start_call("env.world", "first", obj(json!({})), &[], None)
        .await
        .unwrap();
    let second = coord
        .start_call("env.world", "second", obj(json!({})), &[], None)
        .await
        .unwrap();
    let a = svc.next().await.unwrap();
    let b = svc.next().await.unwrap();
    trace.push(format!(
        "dispatched {} {} then {} {}",
        a.call_id, a.method, b.call_id, b.method
    ));
    // Answer the second request first.
    let routed = b
        .responder
        .reply(obj(json!({"answer": b.method})), &[])
        .await
        .unwrap();
    trace.push(format!("second routed {routed}"));
    let r2 = second.result(None).await.unwrap();
    trace.push(format!("{} -> {}", r2.call_id, Value::Object(r2.outcome)));
    a.responder
        .reply(obj(json!({"answer": a.method})), &[])
        .await
        .unwrap();
    let r1 = first.result(None).await.unwrap();
    trace.push(format!("{} -> {}", r1.call_id, Value::Object(r1.outcome)));
    assert_eq!(
        trace,
        [
            "dispatched call-1 first then call-2 second",
            "second routed true",
            r#"call-2 -> {"answer":"second"}"#,
            r#"call-1 -> {"answer":"first"}"#,
        ],
        "over {t:?}"
    );
    trace
}
both!(out_of_order_replies_are_correlated, out_of_order);

async fn status_while_slow(t: Transport) -> Trace {
    let bus = Bus::start(t, 3);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let mut release = Some(release_rx);
        while let Some(req) = svc.next().await {
            if req.method == "Agent.Prepare" {
                let gate = release.take().unwrap();
                tokio::spawn(async move {
                    let _ = gate.await;
                    req.responder
                        .reply(obj(json!({"prepared": true})), &[])
                        .await
                        .unwrap();
                });
            } else {
                req.responder
                    .reply(obj(json!({"state": "preparing"})), &[])
                    .await
                    .unwrap();
            }
        }
    });
    let slow = coord
        .start_call("agent.fly-a", "Agent.Prepare", obj(json!({})), &[], None)
        .await
        .unwrap();
    let status = coord
        .call(
            "agent.fly-a",
            "Worker.Status",
            obj(json!({})),
            &[],
            None,
            Some(Instant::now() + Duration::from_secs(10)),
        )
        .await
        .unwrap();
    trace.push(format!(
        "status answered while prepare runs: {}",
        Value::Object(status.outcome)
    ));
    release_tx.send(()).unwrap();
    let done = slow.result(None).await.unwrap();
    trace.push(format!("prepare then {}", Value::Object(done.outcome)));
    server.abort();
    assert_eq!(
        trace,
        [
            r#"status answered while prepare runs: {"state":"preparing"}"#,
            r#"prepare then {"prepared":true}"#,
        ],
        "over {t:?}"
    );
    trace
}
both!(
    status_is_answered_while_another_handler_is_delayed,
    status_while_slow
);

async fn saturation(t: Transport) -> Trace {
    let bus = Bus::start(t, 4);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("env.world", 1, 1).await.unwrap();
    let c1 = coord
        .start_call("env.world", "a", obj(json!({})), &[], None)
        .await
        .unwrap();
    let c2 = coord
        .start_call("env.world", "b", obj(json!({})), &[], None)
        .await
        .unwrap();
    let e = coord
        .start_call("env.world", "c", obj(json!({})), &[], None)
        .await
        .unwrap_err();
    trace.push(format!("third call {}", failure(&e)));
    let state = c2.cancel().await.unwrap();
    trace.push(format!("queued call cancelled: {state:?}"));
    let c4 = coord
        .start_call("env.world", "d", obj(json!({})), &[], None)
        .await
        .unwrap();
    trace.push(format!("room again for {}", c4.call_id()));
    let first = svc.next().await.unwrap();
    trace.push(format!("handler sees {} {}", first.call_id, first.method));
    first.responder.reply(obj(json!({})), &[]).await.unwrap();
    let second = svc.next().await.unwrap();
    trace.push(format!("then {} {}", second.call_id, second.method));
    second.responder.reply(obj(json!({})), &[]).await.unwrap();
    trace.push(format!("{} done", c1.result(None).await.unwrap().call_id));
    trace.push(format!("{} done", c4.result(None).await.unwrap().call_id));
    assert_eq!(
        trace,
        [
            "third call Some(Backpressure)/not-dispatched",
            "queued call cancelled: CancelledBeforeDispatch",
            "room again for call-4",
            "handler sees call-1 a",
            "then call-4 d",
            "call-1 done",
            "call-4 done",
        ],
        "over {t:?}"
    );
    trace
}
both!(saturation_is_refused_before_admission, saturation);

async fn deadlines(t: Transport) -> Trace {
    let bus = Bus::start(t, 5);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("env.world", 4, 1).await.unwrap();
    let soon = || Some(Instant::now() + Duration::from_millis(60));
    let held = coord
        .start_call("env.world", "held", obj(json!({})), &[], None)
        .await
        .unwrap();
    let e = coord
        .call("env.world", "queued", obj(json!({})), &[], None, soon())
        .await
        .unwrap_err();
    trace.push(format!(
        "queued call past deadline: {} {}",
        e.code_str(),
        failure(&e)
    ));
    let req = svc.next().await.unwrap();
    trace.push(format!("handler holds {}", req.call_id));
    let e = held.result(soon()).await.unwrap_err();
    trace.push(format!(
        "dispatched call past deadline: {} {}",
        e.code_str(),
        failure(&e)
    ));
    let routed = req.responder.reply(obj(json!({})), &[]).await.unwrap();
    trace.push(format!("late reply routed {routed}"));
    let s = settle(&bus.router, |s| s.calls == 0).await;
    trace.push(format!("calls left {}", s.calls));
    assert_eq!(
        trace,
        [
            "queued call past deadline: FS0508 None/not-dispatched",
            "handler holds call-1",
            "dispatched call past deadline: FS0508 None/unknown",
            "late reply routed false",
            "calls left 0",
        ],
        "over {t:?}"
    );
    trace
}
both!(caller_deadlines_report_dispatch_certainty, deadlines);

async fn responder_rules(t: Transport) -> Trace {
    let bus = Bus::start(t, 6);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("env.world", 4, 2).await.unwrap();
    let pending = coord
        .start_call("env.world", "dropped", obj(json!({})), &[], None)
        .await
        .unwrap();
    let req = svc.next().await.unwrap();
    drop(req);
    let e = pending.result(None).await.unwrap_err();
    trace.push(format!("released responder: {}", failure(&e)));
    let pending = coord
        .start_call("env.world", "twice", obj(json!({})), &[], None)
        .await
        .unwrap();
    let req = svc.next().await.unwrap();
    let call_id = req.call_id.to_string();
    let dlv = req.delivery.clone();
    req.responder
        .reply(obj(json!({"n": 1})), &[])
        .await
        .unwrap();
    let dlv_id = dlv.token().to_string();
    let e = worker
        .command(
            "rpc.reply",
            obj(json!({"callId": call_id, "requestDeliveryId": dlv_id, "outcome": {}})),
        )
        .await
        .unwrap_err();
    trace.push(format!("second reply: {}", failure(&e)));
    trace.push(format!(
        "first reply stands: {}",
        Value::Object(pending.result(None).await.unwrap().outcome)
    ));
    let cancel = coord
        .command("rpc.cancel", obj(json!({"callId": "call-99"})))
        .await
        .unwrap();
    trace.push(format!("unknown cancel: {}", Value::Object(cancel)));
    assert_eq!(
        trace,
        [
            "released responder: Some(CallGone)/dispatched",
            "second reply: Some(CallGone)/not-dispatched",
            r#"first reply stands: {"n":1}"#,
            r#"unknown cancel: {"state":"call-gone"}"#,
        ],
        "over {t:?}"
    );
    trace
}
both!(
    a_released_responder_and_a_second_reply_are_call_gone,
    responder_rules
);

async fn disconnects(t: Transport) -> Trace {
    let bus = Bus::start(t, 7);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let mut svc = worker.register("env.world", 4, 1).await.unwrap();
    // A caller that disconnects after its request was dispatched: the late reply is not routed.
    {
        let caller = bus.client("caller").await;
        let pending = caller
            .start_call("env.world", "orphan", obj(json!({})), &[], None)
            .await
            .unwrap();
        let req = svc.next().await.unwrap();
        drop(pending);
        drop(caller);
        settle(&bus.router, |s| s.connections == 1).await;
        let routed = req.responder.reply(obj(json!({})), &[]).await.unwrap();
        trace.push(format!("reply to a gone caller routed {routed}"));
    }
    // A service that disconnects with one call dispatched and one queued.
    let coord = bus.client("coord").await;
    let worker2 = bus.client("worker2").await;
    let mut svc2 = worker2.register("agent.fly-b", 4, 1).await.unwrap();
    let dispatched = coord
        .start_call("agent.fly-b", "one", obj(json!({})), &[], None)
        .await
        .unwrap();
    let queued = coord
        .start_call("agent.fly-b", "two", obj(json!({})), &[], None)
        .await
        .unwrap();
    let req = svc2.next().await.unwrap();
    drop(svc2);
    drop(worker2);
    drop(req);
    let e = dispatched.result(None).await.unwrap_err();
    trace.push(format!("dispatched call: {}", failure(&e)));
    let e = queued.result(None).await.unwrap_err();
    trace.push(format!("queued call: {}", failure(&e)));
    let e = coord
        .call("agent.fly-b", "three", obj(json!({})), &[], None, None)
        .await
        .unwrap_err();
    trace.push(format!("after: {}", failure(&e)));
    // The id of a disconnected client may come back only with a newer incarnation.
    let again = bus.client("worker2").await;
    let re = again.register("agent.fly-b", 4, 1).await.unwrap();
    trace.push(format!("re-registered as {}", re.incarnation()));
    let s = settle(&bus.router, |s| s.calls == 0 && s.roots == 0).await;
    trace.push(format!("calls {} roots {}", s.calls, s.roots));
    assert_eq!(
        trace,
        [
            "reply to a gone caller routed false",
            "dispatched call: Some(NoService)/dispatched",
            "queued call: Some(NoService)/not-dispatched",
            "after: Some(NoService)/not-dispatched",
            "re-registered as svc-0000000000000007-3",
            "calls 0 roots 0",
        ],
        "over {t:?}"
    );
    trace
}
both!(disconnects_fail_calls_with_the_right_certainty, disconnects);

async fn identities(t: Transport) -> Trace {
    let bus = Bus::start(t, 8);
    let mut trace = Trace::new();
    let mut options = bus.options("worker");
    options.incarnation = 5;
    let first = bus.connect(options.clone()).await.unwrap();
    let e = bus.connect(options.clone()).await.unwrap_err();
    trace.push(format!("second live connection: {}", failure(&e)));
    drop(first);
    settle(&bus.router, |s| s.connections == 0).await;
    let e = bus.connect(options.clone()).await.unwrap_err();
    trace.push(format!("reused incarnation: {}", failure(&e)));
    options.incarnation = 6;
    let again = bus.connect(options).await.unwrap();
    trace.push(format!(
        "newer incarnation: {}",
        again.hello().connection_id
    ));
    assert_eq!(
        trace,
        [
            "second live connection: Some(Conflict)/not-dispatched",
            "reused incarnation: Some(Conflict)/not-dispatched",
            "newer incarnation: conn-4",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    one_live_connection_per_client_id_and_no_incarnation_reuse,
    identities
);

async fn bound(t: Transport) -> Trace {
    let bus = Bus::start(t, 9);
    let mut trace = Trace::new();
    let e = bus.bound_client("fly-a", "fly-b").await.unwrap_err();
    trace.push(format!("hello as another id: {}", failure(&e)));
    let ok = bus.bound_client("fly-a", "fly-a").await.unwrap();
    trace.push(format!(
        "hello as the bound id: {}",
        ok.hello().connection_id
    ));
    let s = settle(&bus.router, |s| s.connections == 1).await;
    trace.push(format!("connections {}", s.connections));
    assert_eq!(
        trace,
        [
            "hello as another id: Some(NotAuthorized)/not-dispatched",
            "hello as the bound id: conn-2",
            "connections 1",
        ],
        "over {t:?}"
    );
    trace
}
both!(launcher_bound_endpoints_authenticate_the_hello, bound);
