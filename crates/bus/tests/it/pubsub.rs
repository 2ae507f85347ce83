//! Pub/sub: latest and bounded queues, credits, retained replay, all-or-nothing fan-out.

use flysim_bus::{BusError, Message, SubscribeMode, SubscribeOptions, Subscription};
use serde_json::{Value, json};

use flysim_testkit::{Bus, Trace, Transport, both};

use crate::obj;

fn latest(max_in_flight: u32, replay_latest: bool) -> SubscribeOptions {
    SubscribeOptions {
        mode: SubscribeMode::Latest,
        max_in_flight,
        replay_latest,
    }
}

fn bounded(max_queued: u32, max_in_flight: u32) -> SubscribeOptions {
    SubscribeOptions {
        mode: SubscribeMode::Bounded { max_queued },
        max_in_flight,
        replay_latest: false,
    }
}

fn show(m: &Message) -> String {
    format!(
        "seq {} replaced {} {}",
        m.topic_sequence,
        m.replaced,
        Value::Object(m.payload.clone())
    )
}

fn failure(e: &BusError) -> String {
    format!("{:?}/{}", e.bus_code(), e.dispatch().as_str())
}

async fn next(sub: &mut Subscription) -> Message {
    tokio::time::timeout(std::time::Duration::from_secs(10), sub.next())
        .await
        .expect("a message within 10 s")
        .expect("the subscription is open")
}

async fn queues(t: Transport) -> Trace {
    let bus = Bus::start(t, 11);
    let mut trace = Trace::new();
    let publisher = bus.client("env").await;
    let viewer = bus.client("viewer").await;
    let agent = bus.client("agent").await;
    let inc = publisher.declare_topic("world.frames", true).await.unwrap();
    trace.push(format!("declared {inc}"));
    let again = publisher.declare_topic("world.frames", true).await.unwrap();
    trace.push(format!("compatible re-declare keeps {again}"));
    let e = publisher
        .declare_topic("world.frames", false)
        .await
        .unwrap_err();
    trace.push(format!("conflicting re-declare {}", failure(&e)));
    let e = publisher
        .publish("world.nothing", obj(json!({})), &[])
        .await
        .unwrap_err();
    trace.push(format!("undeclared publish {}", failure(&e)));
    let e = viewer
        .subscribe("world.nothing", latest(1, false))
        .await
        .unwrap_err();
    trace.push(format!("undeclared subscribe {}", failure(&e)));

    let mut slow = viewer
        .subscribe("world.frames", latest(1, false))
        .await
        .unwrap();
    let mut fifo = agent
        .subscribe("world.frames", bounded(4, 2))
        .await
        .unwrap();
    for k in 1..=3 {
        let p = publisher
            .publish("world.frames", obj(json!({"k": k})), &[])
            .await
            .unwrap();
        trace.push(format!("publish {k}: {p:?}"));
    }
    let held = next(&mut slow).await;
    trace.push(format!("latest first {}", show(&held)));
    drop(held);
    let coalesced = next(&mut slow).await;
    trace.push(format!("latest then {}", show(&coalesced)));
    for _ in 0..3 {
        let m = next(&mut fifo).await;
        trace.push(format!("bounded {}", show(&m)));
    }
    let late = bus.client("late").await;
    let mut replay = late
        .subscribe("world.frames", latest(1, true))
        .await
        .unwrap();
    let r = next(&mut replay).await;
    trace.push(format!("replayed retained {}", show(&r)));
    let e = publisher
        .command("topic.delete", obj(json!({"name": "world.frames"})))
        .await
        .unwrap_err();
    trace.push(format!("delete with subscribers {}", failure(&e)));
    let cleared = publisher
        .command("topic.clear", obj(json!({"name": "world.frames"})))
        .await
        .unwrap();
    trace.push(format!("clear {}", Value::Object(cleared)));
    assert_eq!(
        trace,
        [
            "declared top-000000000000000b-1",
            "compatible re-declare keeps top-000000000000000b-1",
            "conflicting re-declare Some(Conflict)/not-dispatched",
            "undeclared publish Some(NoTopic)/not-dispatched",
            "undeclared subscribe Some(NoTopic)/not-dispatched",
            "publish 1: Published { topic_sequence: 1, subscribers: 2, replaced: 0 }",
            "publish 2: Published { topic_sequence: 2, subscribers: 2, replaced: 0 }",
            "publish 3: Published { topic_sequence: 3, subscribers: 2, replaced: 1 }",
            r#"latest first seq 1 replaced 0 {"k":1}"#,
            r#"latest then seq 3 replaced 1 {"k":3}"#,
            r#"bounded seq 1 replaced 0 {"k":1}"#,
            r#"bounded seq 2 replaced 0 {"k":2}"#,
            r#"bounded seq 3 replaced 0 {"k":3}"#,
            r#"replayed retained seq 3 replaced 0 {"k":3}"#,
            "delete with subscribers Some(Conflict)/not-dispatched",
            r#"clear {"cleared":true}"#,
        ],
        "over {t:?}"
    );
    trace
}
both!(latest_bounded_and_retained_queues, queues);

async fn no_partial_fan_out(t: Transport) -> Trace {
    let bus = Bus::start(t, 12);
    let mut trace = Trace::new();
    let publisher = bus.client("env").await;
    let viewer = bus.client("viewer").await;
    let agent = bus.client("agent").await;
    publisher.declare_topic("world.obs", false).await.unwrap();
    let nobody = publisher
        .publish("world.obs", obj(json!({"k": 0})), &[])
        .await
        .unwrap();
    trace.push(format!("no subscribers: {nobody:?}"));
    let mut watcher = viewer
        .subscribe("world.obs", latest(2, false))
        .await
        .unwrap();
    let mut full = agent.subscribe("world.obs", bounded(1, 1)).await.unwrap();
    let a = publisher
        .publish("world.obs", obj(json!({"k": 1})), &[])
        .await
        .unwrap();
    trace.push(format!("delivered to both: {a:?}"));
    let in_flight = next(&mut full).await;
    let b = publisher
        .publish("world.obs", obj(json!({"k": 2})), &[])
        .await
        .unwrap();
    trace.push(format!("queued for the bounded one: {b:?}"));
    let e = publisher
        .publish("world.obs", obj(json!({"k": 3})), &[])
        .await
        .unwrap_err();
    trace.push(format!("bounded queue full: {}", failure(&e)));
    let w1 = next(&mut watcher).await;
    let w2 = next(&mut watcher).await;
    trace.push(format!("latest got {} and {}", show(&w1), show(&w2)));
    drop(in_flight);
    let queued = next(&mut full).await;
    trace.push(format!("bounded got {}", show(&queued)));
    let c = publisher
        .publish("world.obs", obj(json!({"k": 4})), &[])
        .await
        .unwrap();
    trace.push(format!("no sequence spent by the refusal: {c:?}"));
    drop((w1, w2));
    let w3 = next(&mut watcher).await;
    trace.push(format!("latest never saw k=3: {}", show(&w3)));
    let removed = full.unsubscribe().await.unwrap();
    trace.push(format!("unsubscribed {removed}"));
    assert_eq!(
        trace,
        [
            "no subscribers: Published { topic_sequence: 1, subscribers: 0, replaced: 0 }",
            "delivered to both: Published { topic_sequence: 2, subscribers: 2, replaced: 0 }",
            "queued for the bounded one: Published { topic_sequence: 3, subscribers: 2, replaced: 0 }",
            "bounded queue full: Some(Backpressure)/not-dispatched",
            r#"latest got seq 2 replaced 0 {"k":1} and seq 3 replaced 0 {"k":2}"#,
            r#"bounded got seq 3 replaced 0 {"k":2}"#,
            "no sequence spent by the refusal: Published { topic_sequence: 4, subscribers: 2, replaced: 0 }",
            r#"latest never saw k=3: seq 4 replaced 0 {"k":4}"#,
            "unsubscribed true",
        ],
        "over {t:?}"
    );
    trace
}
both!(saturation_refuses_the_whole_publication, no_partial_fan_out);

/// The bus half of the checklist's "viewer holds output indefinitely" (no session publishes
/// yet, and the gateway is another issue's): a latest-mode subscriber that never reads while a
/// publisher publishes 40 messages neither blocks nor refuses a publication, and costs a
/// bounded subscriber that does read none of its messages; the viewer is left holding one
/// delivery and the newest message only (everything between was dropped for it alone).
async fn viewer_never_reads(t: Transport) -> Trace {
    let bus = Bus::start(t, 13);
    let mut trace = Trace::new();
    let publisher = bus.client("env").await;
    let viewer = bus.client("viewer").await;
    let agent = bus.client("agent").await;
    publisher
        .declare_topic("world.frames", false)
        .await
        .unwrap();
    let mut stalled = viewer
        .subscribe("world.frames", latest(1, false))
        .await
        .unwrap();
    let mut reader = agent
        .subscribe("world.frames", bounded(2, 1))
        .await
        .unwrap();
    let mut received = Vec::new();
    for k in 1..=40u64 {
        let published = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            publisher.publish("world.frames", obj(json!({"k": k})), &[]),
        )
        .await
        .expect("a publication never waits for a viewer");
        assert!(published.is_ok(), "publication {k}: {published:?}");
        let m = next(&mut reader).await;
        received.push((m.topic_sequence, m.payload["k"].as_u64()));
    }
    let expected: Vec<(u64, Option<u64>)> = (1..=40).map(|k| (k, Some(k))).collect();
    assert_eq!(received, expected, "over {t:?}");
    trace.push(format!("reader got {} in order", received.len()));
    let first = next(&mut stalled).await;
    trace.push(format!("viewer first {}", show(&first)));
    drop(first);
    let newest = next(&mut stalled).await;
    trace.push(format!("viewer then {}", show(&newest)));
    let extra = tokio::time::timeout(std::time::Duration::from_millis(100), stalled.next()).await;
    trace.push(format!("viewer nothing more: {}", extra.is_err()));
    drop(newest);
    assert_eq!(
        trace,
        [
            "reader got 40 in order",
            r#"viewer first seq 1 replaced 0 {"k":1}"#,
            r#"viewer then seq 40 replaced 38 {"k":40}"#,
            "viewer nothing more: true",
        ],
        "over {t:?}"
    );
    trace
}
both!(
    a_viewer_that_never_reads_costs_the_publisher_and_readers_nothing,
    viewer_never_reads
);
