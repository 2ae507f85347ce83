//! Faults: partial frames and writes, malformed frames, router restarts.

use flysim_bus::frame::{FrameReader, ReadOutcome, encode};
use flysim_bus::wire::Envelope;
use flysim_bus::{BusError, SubscribeMode, SubscribeOptions};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use flysim_testkit::{Bus, Stream, Trace, Transport, both, settle};

use crate::obj;

fn failure(e: &BusError) -> String {
    format!(
        "{} {:?}/{}",
        e.code_str(),
        e.bus_code(),
        e.dispatch().as_str()
    )
}

fn hello_frame(id: &str, msg: &str) -> Vec<u8> {
    let env = json!({
        "protocol": "flybus", "major": 1, "minor": 0, "id": msg, "replyTo": null,
        "kind": "command", "op": "bus.hello",
        "body": {"clientId": id, "clientIncarnation": "1", "supportedMajors": [1]},
        "attachments": [],
    });
    serde_json::to_vec(&env).unwrap()
}

/// Reads frames until the router closes; returns each frame's `op` and the closing code.
async fn drain(raw: &mut Box<dyn Stream>) -> Vec<String> {
    let mut frames = FrameReader::new(raw);
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), frames.next())
            .await
            .expect("the router answers within 10 s");
        match next {
            ReadOutcome::Frame(bytes) => {
                let env = Envelope::parse(&bytes).unwrap();
                let detail = match env.op.as_str() {
                    "connection.closing" => env.body["code"].as_str().unwrap_or("").to_owned(),
                    _ => env.body["ok"].to_string(),
                };
                seen.push(format!("{} {detail}", env.op));
            }
            ReadOutcome::Closed | ReadOutcome::Broken(_) => {
                seen.push("closed".into());
                return seen;
            }
            ReadOutcome::Refused(e) => panic!("the router sent a bad frame: {e}"),
        }
    }
}

async fn partial(t: Transport) -> Trace {
    let bus = Bus::start(t, 31);
    let mut trace = Trace::new();
    // A raw hello written one byte at a time, each byte flushed separately.
    let mut raw = bus.raw().await;
    let mut wire = Vec::new();
    encode(&hello_frame("raw", "msg-1"), &mut wire);
    for b in &wire {
        raw.write_all(std::slice::from_ref(b)).await.unwrap();
        raw.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    let mut frames = FrameReader::new(&mut raw);
    let ReadOutcome::Frame(reply) = frames.next().await else {
        panic!("no hello reply")
    };
    let reply = Envelope::parse(&reply).unwrap();
    trace.push(format!(
        "byte-by-byte hello answered: {} ok={}",
        reply.op, reply.body["ok"]
    ));
    // Full clients whose every read and write on both ends moves one byte.
    let worker = bus.trickle_client("worker").await;
    let coord = bus.trickle_client("coord").await;
    let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    let server = tokio::spawn(async move {
        let req = svc.next().await.unwrap();
        let bytes = req.attachments[0].1.read().await.unwrap();
        req.responder
            .reply(
                obj(json!({"sum": bytes.iter().map(|b| u64::from(*b)).sum::<u64>()})),
                &[],
            )
            .await
            .unwrap();
        svc
    });
    let mut w = coord
        .allocate(300, "application/octet-stream")
        .await
        .unwrap();
    w.write(&[3u8; 300]).unwrap();
    let a = w.seal(None).await.unwrap();
    let big = "x".repeat(20_000);
    let r = coord
        .call(
            "agent.fly-a",
            "Agent.Prepare",
            obj(json!({"pad": big})),
            &[("in", &a)],
            None,
            None,
        )
        .await
        .unwrap();
    trace.push(format!("trickled call: {}", Value::Object(r.outcome)));
    let _svc = server.await.unwrap();
    worker.declare_topic("t.x", false).await.unwrap();
    let mut sub = coord
        .subscribe(
            "t.x",
            SubscribeOptions {
                mode: SubscribeMode::Bounded { max_queued: 4 },
                max_in_flight: 4,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    worker
        .publish("t.x", obj(json!({"n": 1})), &[])
        .await
        .unwrap();
    let m = sub.next().await.unwrap();
    trace.push(format!("trickled message seq {}", m.topic_sequence));
    assert_eq!(
        trace,
        [
            "byte-by-byte hello answered: reply ok=true",
            r#"trickled call: {"sum":900}"#,
            "trickled message seq 1",
        ],
        "over {t:?}"
    );
    trace
}
both!(partial_frames_and_partial_writes, partial);

async fn malformed(t: Transport) -> Trace {
    let bus = Bus::start(t, 32);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("env.world", 4, 2).await.unwrap();
    let server = tokio::spawn(async move {
        while let Some(req) = svc.next().await {
            req.responder
                .reply(obj(json!({"ok": 1})), &[])
                .await
                .unwrap();
        }
    });
    let hello = hello_frame("raw", "msg-1");
    let mut unknown_field: Value = serde_json::from_slice(&hello).unwrap();
    unknown_field["extra"] = json!(true);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("zero length", 0u32.to_le_bytes().to_vec()),
        ("oversize length", u32::MAX.to_le_bytes().to_vec()),
        ("65537 bytes", 65_537u32.to_le_bytes().to_vec()),
        ("not json", framed(b"{not json")),
        ("unknown envelope field", framed(&serde_json::to_vec(&unknown_field).unwrap())),
        ("command before hello", framed(&serde_json::to_vec(&json!({
            "protocol": "flybus", "major": 1, "minor": 0, "id": "msg-1", "replyTo": null,
            "kind": "command", "op": "topic.declare", "body": {"name": "x", "retained": "none"}, "attachments": []})).unwrap())),
        ("repeated id", [framed(&hello_frame("raw-b", "msg-3")), framed(&hello_frame("raw-b", "msg-3"))].concat()),
        ("second hello", [framed(&hello_frame("raw-c", "msg-1")), framed(&hello_frame("raw-c", "msg-2"))].concat()),
        ("version 2", framed(&serde_json::to_vec(&json!({
            "protocol": "flybus", "major": 1, "minor": 0, "id": "msg-1", "replyTo": null, "kind": "command",
            "op": "bus.hello", "body": {"clientId": "raw-d", "clientIncarnation": "1", "supportedMajors": [2]},
            "attachments": []})).unwrap())),
    ];
    for (what, bytes) in cases {
        let mut raw = bus.raw().await;
        raw.write_all(&bytes).await.unwrap();
        raw.flush().await.unwrap();
        let seen = drain(&mut raw).await;
        trace.push(format!("{what}: {seen:?}"));
    }
    // A body-level error is answered and the connection stays up.
    let e = coord
        .command("no.such.op", obj(json!({})))
        .await
        .unwrap_err();
    trace.push(format!("unknown op: {}", failure(&e)));
    let e = coord
        .command("subscribe", obj(json!({"topic": "x"})))
        .await
        .unwrap_err();
    trace.push(format!("bad body: {}", failure(&e)));
    let r = coord
        .call("env.world", "m", obj(json!({})), &[], None, None)
        .await
        .unwrap();
    trace.push(format!(
        "other connections unaffected: {}",
        Value::Object(r.outcome)
    ));
    let s = settle(&bus.router, |s| s.connections == 2).await;
    trace.push(format!("connections left {}", s.connections));
    server.abort();
    assert_eq!(
        trace,
        [
            r#"zero length: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"oversize length: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"65537 bytes: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"not json: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"unknown envelope field: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"command before hello: ["connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"repeated id: ["reply true", "connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"second hello: ["reply true", "connection.closing INVALID_ENVELOPE", "closed"]"#,
            r#"version 2: ["reply false", "connection.closing VERSION_MISMATCH", "closed"]"#,
            "unknown op: FS0504 Some(InvalidEnvelope)/not-dispatched",
            "bad body: FS0504 Some(InvalidEnvelope)/not-dispatched",
            r#"other connections unaffected: {"ok":1}"#,
            "connections left 2",
        ],
        "over {t:?}"
    );
    trace
}
both!(a_malformed_frame_closes_only_that_connection, malformed);

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(body, &mut out);
    out
}

async fn restart(t: Transport) -> Trace {
    let mut bus = Bus::start(t, 33);
    let mut trace = Trace::new();
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let mut svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    let old_incarnation = svc.incarnation().to_owned();
    let mut w = coord.allocate(16, "text/plain").await.unwrap();
    w.write(&[1; 16]).unwrap();
    let a = coord_seal(w).await;
    let old_ref = a.reference().clone();
    let old_store = bus.store_root().join(old_ref.store_id.as_str());
    let pending = coord
        .start_call("agent.fly-a", "Agent.Prepare", obj(json!({})), &[], None)
        .await
        .unwrap();
    let _req = svc.next().await.unwrap();
    bus.restart(34).await;
    let e = pending.result(None).await.unwrap_err();
    trace.push(format!("pending call across the restart: {}", failure(&e)));
    trace.push(format!(
        "old service handle ends: {}",
        svc.next().await.is_none()
    ));
    let e = coord
        .call(
            "agent.fly-a",
            "Worker.Status",
            obj(json!({})),
            &[],
            None,
            None,
        )
        .await
        .unwrap_err();
    trace.push(format!("old client: {}", failure(&e)));
    let e = a.read().await.unwrap_err();
    trace.push(format!("old artifact handle: {}", failure(&e)));
    trace.push(format!(
        "old store directory removed: {}",
        !old_store.exists()
    ));
    let worker = bus.client("worker").await;
    let coord = bus.client("coord").await;
    let svc = worker.register("agent.fly-a", 4, 2).await.unwrap();
    trace.push(format!(
        "new incarnation differs: {}",
        svc.incarnation() != old_incarnation
    ));
    let e = coord
        .call(
            "agent.fly-a",
            "Worker.Status",
            obj(json!({})),
            &[],
            Some(&old_incarnation),
            None,
        )
        .await
        .unwrap_err();
    trace.push(format!("call pinned to the old route: {}", failure(&e)));
    let e = coord
        .command(
            "artifact.retain",
            obj(json!({"ref": old_ref, "ownerId": "own-1"})),
        )
        .await
        .unwrap_err();
    trace.push(format!("old ref on the new router: {}", failure(&e)));
    assert_eq!(
        trace,
        [
            "pending call across the restart: FS0505 Some(RouterLost)/unknown",
            "old service handle ends: true",
            "old client: FS0505 Some(RouterLost)/unknown",
            "old artifact handle: FS0505 Some(RouterLost)/unknown",
            "old store directory removed: true",
            "new incarnation differs: true",
            "call pinned to the old route: FS0504 Some(TargetChanged)/not-dispatched",
            "old ref on the new router: FS0504 Some(ArtifactGone)/not-dispatched",
        ],
        "over {t:?}"
    );
    trace
}
both!(a_router_restart_invalidates_old_handles_and_routes, restart);

async fn coord_seal(w: flysim_bus::ArtifactWriter) -> flysim_bus::Artifact {
    w.seal(None).await.unwrap()
}
