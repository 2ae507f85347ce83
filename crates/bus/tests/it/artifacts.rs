//! Artifacts: allocate, write, seal, open, owners, collection, and bytes that outlive owners.

use std::io::{Read as _, Seek as _};
use std::os::unix::fs::PermissionsExt as _;

use flysim_bus::{Artifact, BusError, Client, Service, SubscribeMode, SubscribeOptions};
use flysim_types::digest::sha256;
use serde_json::{Value, json};

use flysim_testkit::{Bus, Trace, Transport, both, settle};

use crate::obj;

fn failure(e: &BusError) -> String {
    format!("{:?}/{}", e.bus_code(), e.dispatch().as_str())
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

async fn lifecycle(t: Transport) -> Trace {
    let bus = Bus::start(t, 21);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let consumer = bus.client("agent").await;
    let bytes = pattern(100_000, 7);

    let mut w = producer
        .allocate(bytes.len() as u64, "application/octet-stream")
        .await
        .unwrap();
    w.write(&bytes[..60_000]).unwrap();
    w.write(&bytes[60_000..]).unwrap();
    let e = w.write(b"x").unwrap_err();
    trace.push(format!("write past allocation: {}", e.code_str()));
    let a = w.seal(Some(sha256(&bytes))).await.unwrap();
    trace.push(format!(
        "sealed {}",
        serde_json::to_string(a.reference()).unwrap()
    ));
    trace.push(format!("owner {}", a.owner_token()));
    let sealed_path = bus
        .store_root()
        .join(a.reference().store_id.as_str())
        .join(a.reference().artifact_id.as_str());
    push_modes(t, &bus, &sealed_path, &mut trace);
    trace.push(format!(
        "read back equal: {}",
        a.read().await.unwrap() == bytes
    ));

    let mut bad = producer.allocate(4, "text/plain").await.unwrap();
    bad.write(b"abcd").unwrap();
    let e = bad.seal(Some(sha256(b"abce"))).await.unwrap_err();
    trace.push(format!("wrong digest: {}", failure(&e)));
    let e = producer
        .allocate(200 << 20, "text/plain")
        .await
        .unwrap_err();
    trace.push(format!("too large: {}", failure(&e)));

    // Another connection cannot use this connection's owner token.
    let e = consumer
        .publish("nothing", obj(json!({})), &[("frame", &a)])
        .await
        .unwrap_err();
    trace.push(format!("foreign topic first: {}", failure(&e)));
    consumer.declare_topic("env.frames", false).await.unwrap();
    let e = consumer
        .publish("env.frames", obj(json!({})), &[("frame", &a)])
        .await
        .unwrap_err();
    trace.push(format!("foreign owner: {}", failure(&e)));

    // RPC with artifacts both ways.
    let _svc = rpc_both_ways(&producer, &consumer, &a, &mut trace).await;
    drop(a);
    let s = settle(&bus.router, |s| s.artifacts == 0).await;
    trace.push(format!(
        "at rest: artifacts {} roots {} bytes {}",
        s.artifacts, s.roots, s.store_bytes
    ));
    let leftover: Vec<_> = std::fs::read_dir(sealed_path.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| n.starts_with("a-"))
        .collect();
    trace.push(format!("files left {leftover:?}"));
    assert_eq!(
        trace,
        [
            "write past allocation: FS0510",
            r#"sealed {"storeId":"store-0000000000000015","artifactId":"a-1","generation":"1","byteLength":"100000","contentType":"application/octet-stream","digest":"731620161155f68e1209f22bc34a726bf5a583f40acf23ae55684b674fdbebf2"}"#,
            "owner own-1",
            "sealed file 444, store dir 700",
            "read back equal: true",
            "wrong digest: Some(ArtifactMismatch)/not-dispatched",
            "too large: Some(QuotaExceeded)/not-dispatched",
            "foreign topic first: Some(NoTopic)/not-dispatched",
            "foreign owner: Some(OwnerInvalid)/not-dispatched",
            r#"reply routed true: {"len":100000}"#,
            "result attachment half owned by dlv-1",
            "result bytes equal: true",
            "retained hold own-3 still reads: 50000",
            "at rest: artifacts 0 roots 0 bytes 0",
            "files left []",
        ],
        "over {t:?}"
    );
    trace
}
both!(artifacts_are_sealed_owned_and_collected, lifecycle);

/// The sealed file's and store directory's modes into the trace; on the Unix transport, checks
/// the socket's and its directory's.
fn push_modes(t: Transport, bus: &Bus, sealed_path: &std::path::Path, trace: &mut Trace) {
    let mode = std::fs::metadata(sealed_path).unwrap().permissions().mode() & 0o777;
    let dir_mode = std::fs::metadata(sealed_path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    trace.push(format!("sealed file {mode:o}, store dir {dir_mode:o}"));
    if t == Transport::Unix {
        let sock = std::fs::metadata(bus.socket())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        let sock_dir = std::fs::metadata(bus.socket().parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!((sock, sock_dir), (0o600, 0o700));
    }
}

/// A call carrying `a` whose reply carries an artifact back; returns the service, which lives as
/// long as the caller's scenario.
async fn rpc_both_ways(
    producer: &Client,
    consumer: &Client,
    a: &Artifact,
    trace: &mut Trace,
) -> Service {
    let mut svc = consumer.register("agent.fly-a", 4, 2).await.unwrap();
    let service_client = consumer.clone();
    let server = tokio::spawn(async move {
        let req = svc.next().await.unwrap();
        let (_, input) = &req.attachments[0];
        let got = input.read().await.unwrap();
        let reply_bytes = pattern(got.len() / 2, 9);
        let mut w = service_client
            .allocate(reply_bytes.len() as u64, "application/octet-stream")
            .await
            .unwrap();
        w.write(&reply_bytes).unwrap();
        let out = w.seal(None).await.unwrap();
        let routed = req
            .responder
            .reply(obj(json!({"len": got.len()})), &[("half", &out)])
            .await
            .unwrap();
        (routed, svc)
    });
    let r = producer
        .call(
            "agent.fly-a",
            "Agent.Prepare",
            obj(json!({})),
            &[("input", a)],
            None,
            None,
        )
        .await
        .unwrap();
    let (routed, svc) = server.await.unwrap();
    trace.push(format!(
        "reply routed {routed}: {}",
        Value::Object(r.outcome.clone())
    ));
    let (name, half) = &r.attachments[0];
    trace.push(format!(
        "result attachment {name} owned by {}",
        half.owner_token()
    ));
    trace.push(format!(
        "result bytes equal: {}",
        half.read().await.unwrap() == pattern(50_000, 9)
    ));
    let kept = half.retain().await.unwrap();
    drop(r);
    trace.push(format!(
        "retained hold {} still reads: {}",
        kept.owner_token(),
        kept.read().await.unwrap().len()
    ));
    drop(kept);
    svc
}

async fn dropped_while_read(t: Transport) -> Trace {
    let bus = Bus::start(t, 22);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let viewer = bus.client("viewer").await;
    producer.declare_topic("world.frames", false).await.unwrap();
    let mut sub = viewer
        .subscribe(
            "world.frames",
            SubscribeOptions {
                mode: SubscribeMode::Latest,
                max_in_flight: 1,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    let frame = pattern(640 * 480 * 4, 3);
    let mut w = producer
        .allocate(frame.len() as u64, "image/rgba8")
        .await
        .unwrap();
    w.write(&frame).unwrap();
    let a = w.seal(None).await.unwrap();
    producer
        .publish("world.frames", obj(json!({"step": "1"})), &[("frame", &a)])
        .await
        .unwrap();
    drop(a);
    let message = sub.next().await.unwrap();
    let artifact = message.attachments[0].1.clone();
    let mut file = artifact.open().await.unwrap();
    let mut head = vec![0u8; 1000];
    file.read_exact(&mut head).unwrap();
    drop(message);
    drop(artifact);
    let s = settle(&bus.router, |s| s.artifacts == 0).await;
    trace.push(format!(
        "collected while being read: artifacts {} roots {}",
        s.artifacts, s.roots
    ));
    let mut rest = Vec::new();
    file.read_to_end(&mut rest).unwrap();
    head.extend(rest);
    trace.push(format!("bytes stay valid: {}", head == frame));
    file.rewind().unwrap();
    assert_eq!(
        trace,
        [
            "collected while being read: artifacts 0 roots 0",
            "bytes stay valid: true",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    bytes_stay_valid_after_the_message_is_dropped,
    dropped_while_read
);

async fn latest_replacement(t: Transport) -> Trace {
    let bus = Bus::start(t, 23);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let viewer = bus.client("viewer").await;
    let agent = bus.client("agent").await;
    producer.declare_topic("world.frames", false).await.unwrap();
    let mut slow = viewer
        .subscribe(
            "world.frames",
            SubscribeOptions {
                mode: SubscribeMode::Latest,
                max_in_flight: 1,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    let mut fifo = agent
        .subscribe(
            "world.frames",
            SubscribeOptions {
                mode: SubscribeMode::Bounded { max_queued: 8 },
                max_in_flight: 8,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    let mut refs = Vec::new();
    for k in 1..=3u8 {
        let mut w = producer.allocate(1024, "image/rgba8").await.unwrap();
        w.write(&pattern(1024, k)).unwrap();
        let a = w.seal(None).await.unwrap();
        let p = producer
            .publish("world.frames", obj(json!({"k": k})), &[("frame", &a)])
            .await
            .unwrap();
        trace.push(format!("publish {k}: replaced {}", p.replaced));
        refs.push(a.reference().artifact_id.to_string());
        drop(a);
    }
    let mut kept = Vec::new();
    for _ in 0..3 {
        kept.push(fifo.next().await.unwrap());
    }
    let first = slow.next().await.unwrap();
    let s = settle(&bus.router, |s| s.roots == 5).await;
    // a-1: bounded + latest in flight; a-2: bounded only (its latest root was replaced);
    // a-3: bounded + latest queued.
    trace.push(format!(
        "roots after replacement {} over {} artifacts",
        s.roots, s.artifacts
    ));
    let second = kept.remove(1);
    trace.push(format!(
        "a-2 still readable through the bounded delivery: {}",
        second.attachments[0].1.read().await.unwrap() == pattern(1024, 2)
    ));
    drop(second);
    let s = settle(&bus.router, |s| s.artifacts == 2).await;
    trace.push(format!(
        "a-2 collected once its last root went: artifacts {} roots {}",
        s.artifacts, s.roots
    ));
    drop(first);
    let third = slow.next().await.unwrap();
    trace.push(format!(
        "latest then gets k={} replaced {}",
        third.payload["k"], third.replaced
    ));
    drop(third);
    drop(kept);
    let s = settle(&bus.router, |s| s.artifacts == 0).await;
    trace.push(format!(
        "at rest {} {} {}",
        s.artifacts, s.roots, s.store_bytes
    ));
    trace.push(format!("refs {refs:?}"));
    assert_eq!(
        trace,
        [
            "publish 1: replaced 0",
            "publish 2: replaced 0",
            "publish 3: replaced 1",
            "roots after replacement 5 over 3 artifacts",
            "a-2 still readable through the bounded delivery: true",
            "a-2 collected once its last root went: artifacts 2 roots 4",
            "latest then gets k=3 replaced 1",
            "at rest 0 0 0",
            r#"refs ["a-1", "a-2", "a-3"]"#,
        ],
        "over {t:?}"
    );
    trace
}
both!(
    latest_replacement_releases_only_that_queues_root,
    latest_replacement
);

/// In-memory artifacts (contracts §3.11): readable where they were made, never on the bus as
/// they are; promoted once per connection to a sealed copy of the same bytes, which travels.
async fn in_memory(t: Transport) -> Trace {
    let bus = Bus::start(t, 24);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let consumer = bus.client("agent").await;
    let bytes = pattern(4096, 3);
    let local = producer
        .local_artifact(bytes.clone(), "image/x-rgba8", Some(sha256(&bytes)))
        .unwrap();
    assert!(local.is_local());
    let r = local.reference();
    assert!(r.store_id.as_str().starts_with("local-"), "{r:?}");
    assert_eq!(r.artifact_id.as_str(), "a-1");
    assert_eq!(
        (r.byte_length.get(), r.digest),
        (4096, Some(sha256(&bytes)))
    );
    assert_eq!(local.read().await.unwrap(), bytes);
    assert!(
        local.open().await.is_err(),
        "an in-memory artifact has no file"
    );
    assert!(local.retain().await.unwrap().is_local());
    let second = producer
        .local_artifact(Vec::new(), "text/plain", None)
        .unwrap();
    assert_eq!(second.reference().artifact_id.as_str(), "a-2");
    assert!(producer.local_artifact(Vec::new(), "", None).is_err());
    let s = bus.router.stats();
    trace.push(format!(
        "router sees artifacts {} roots {}",
        s.artifacts, s.roots
    ));

    consumer.declare_topic("env.frames", false).await.unwrap();
    let e = producer
        .publish("env.frames", obj(json!({})), &[("frame", &local)])
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "FS0511", "{e}");
    trace.push("unpromoted on the bus: refused before sending".into());

    let sealed = local.promote(&producer).await.unwrap();
    let again = local.promote(&producer).await.unwrap();
    assert!(!sealed.is_local());
    assert_eq!(sealed.reference(), again.reference(), "promoted once");
    assert_ne!(sealed.reference(), local.reference());
    assert_eq!(sealed.reference().digest, local.reference().digest);
    assert_eq!(sealed.read().await.unwrap(), bytes);
    assert_eq!(local.local_bytes(), Some(&bytes[..]));
    assert_eq!(sealed.local_bytes(), None);
    let mut sub = consumer
        .subscribe(
            "env.frames",
            SubscribeOptions {
                mode: SubscribeMode::Bounded { max_queued: 4 },
                max_in_flight: 4,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    producer
        .publish("env.frames", obj(json!({})), &[("frame", &sealed)])
        .await
        .unwrap();
    let message = sub.next().await.unwrap();
    let (_, frame) = &message.attachments[0];
    assert_eq!(frame.read().await.unwrap(), bytes);
    trace.push("promoted copy travels and reads the same bytes".into());
    drop((message, sealed, again, local));
    let s = settle(&bus.router, |s| s.artifacts == 0).await;
    trace.push(format!("at rest: artifacts {}", s.artifacts));
    assert_eq!(
        trace,
        [
            "router sees artifacts 0 roots 0",
            "unpromoted on the bus: refused before sending",
            "promoted copy travels and reads the same bytes",
            "at rest: artifacts 0",
        ]
    );
    trace
}
both!(
    in_memory_artifacts_stay_off_the_bus_until_promoted,
    in_memory
);

/// An in-memory artifact shares its producer's buffer: the producer gets it back for reuse
/// (`Arc::get_mut`) only once the artifact and every clone of it are gone, and a promoted copy
/// does not hold it.
async fn in_memory_shared(t: Transport) -> Trace {
    let bus = Bus::start(t, 24);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let mut buffer = std::sync::Arc::new(pattern(1024, 5));
    let local = producer
        .local_artifact(
            std::sync::Arc::clone(&buffer),
            "application/octet-stream",
            None,
        )
        .unwrap();
    let clone = local.clone();
    assert_eq!(clone.local_bytes(), Some(&buffer[..]));
    let promoted = local.promote(&producer).await.unwrap();
    assert!(!promoted.is_local());
    drop(local);
    trace.push(format!(
        "held by a clone: reusable {}",
        std::sync::Arc::get_mut(&mut buffer).is_some()
    ));
    drop(clone);
    let reusable = std::sync::Arc::get_mut(&mut buffer).is_some();
    trace.push(format!("all handles dropped: reusable {reusable}"));
    assert_eq!(promoted.read().await.unwrap(), pattern(1024, 5));
    assert_eq!(
        trace,
        [
            "held by a clone: reusable false",
            "all handles dropped: reusable true",
        ]
    );
    trace
}
both!(
    in_memory_bytes_return_to_their_producer_once_released,
    in_memory_shared
);

/// A queued seal: the artifact is usable at once (the router handles the connection's commands
/// in order), `confirm` reports the router's answer, and a refused seal leaves it unusable.
async fn queued_seal(t: Transport) -> Trace {
    let bus = Bus::start(t, 25);
    let mut trace = Trace::new();
    let producer = bus.client("env").await;
    let consumer = bus.client("agent").await;
    consumer.declare_topic("frames", false).await.unwrap();
    let mut sub = consumer
        .subscribe(
            "frames",
            SubscribeOptions {
                mode: SubscribeMode::Bounded { max_queued: 4 },
                max_in_flight: 4,
                replay_latest: false,
            },
        )
        .await
        .unwrap();
    let bytes = pattern(64, 5);
    let mut w = producer.allocate(64, "image/x-rgba8").await.unwrap();
    w.write(&bytes).unwrap();
    let frame = w.seal_queued(Some(sha256(&bytes))).unwrap();
    // Published before the seal's answer arrived: the router sealed it first.
    producer
        .publish("frames", obj(json!({})), &[("frame", &frame)])
        .await
        .unwrap();
    frame.confirm().await.unwrap();
    frame.confirm().await.unwrap();
    let message = sub.next().await.unwrap();
    let (_, got) = &message.attachments[0];
    assert_eq!(got.reference(), frame.reference());
    assert_eq!(got.read().await.unwrap(), bytes);
    trace.push("queued seal: attached at once, confirmed, same ref and bytes".into());

    let mut bad = producer.allocate(4, "text/plain").await.unwrap();
    bad.write(b"abcd").unwrap();
    let bad = bad.seal_queued(Some(sha256(b"abce"))).unwrap();
    let e = producer
        .publish("frames", obj(json!({})), &[("frame", &bad)])
        .await
        .unwrap_err();
    trace.push(format!("attached after a refused seal: {}", failure(&e)));
    let e = bad.confirm().await.unwrap_err();
    trace.push(format!("confirm: {}", failure(&e)));
    assert_eq!(
        trace,
        [
            "queued seal: attached at once, confirmed, same ref and bytes",
            "attached after a refused seal: Some(ArtifactUnsealed)/not-dispatched",
            "confirm: Some(ArtifactMismatch)/dispatched",
        ]
    );
    trace
}
both!(a_queued_seal_orders_before_later_commands, queued_seal);
