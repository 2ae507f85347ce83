//! Spectators cannot hurt the run: a client that never reads, one that reads slowly, ones that
//! leave in the middle of a frame, and ten at once. Each test publishes at 60 Hz first without
//! spectators and then with them, in the same test, and requires that the publisher's calls
//! stay as fast (it is never blocked or refused), that no client ever holds more than one
//! message (no queue grows), that a well-behaved client is still served to the end, and that
//! no client ever receives an older snapshot after a newer one.

use std::time::Duration;

use flysim_gateway::GatewayStats;
use tokio::task::JoinHandle;

use crate::publisher::{Stage, World, frame_digest, hex};
use flysim_testkit::websocket::{self, Pushed};

/// Steps published in each phase (1.5 s at 60 Hz).
const STEPS: u64 = 90;
/// The publisher's period: 60 Hz.
const PERIOD: Duration = Duration::from_micros(16_667);
/// The last step published.
const LAST_STEP: u64 = 2 * STEPS - 1;
/// A reader left this long without a message counts as no longer served.
const UNSERVED: Duration = Duration::from_millis(1500);
/// A publish call slower than this counts as blocked.
const BLOCKED: Duration = Duration::from_secs(1);

/// Publishes `STEPS` snapshots from `first` at 60 Hz; each call's duration.
async fn publish_phase(stage: &Stage, first: u64) -> Vec<Duration> {
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut spent = Vec::with_capacity(STEPS as usize);
    for step in first..first + STEPS {
        tick.tick().await;
        let took = tokio::time::timeout(BLOCKED, stage.publish(step))
            .await
            .unwrap_or_else(|_| panic!("the publisher was blocked at step {step}"));
        spent.push(took);
    }
    spent
}

/// The `p`-quantile (0..=1) of `v`.
fn quantile(v: &[Duration], p: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// The publisher's calls with spectators are as fast as without, within noise. The spectators
/// run in this process, on the same two cores as the publisher and the other tests, so the
/// bound allows for sharing the CPU; what it refuses is a publisher that waits on a viewer
/// (that shows as calls of a second or more, or a refused publication).
fn assert_publisher_unhurt(baseline: &[Duration], watched: &[Duration]) {
    let (b, w) = (quantile(baseline, 0.5), quantile(watched, 0.5));
    let p95 = quantile(watched, 0.95);
    let worst = quantile(watched, 1.0);
    eprintln!("publish call p50: {b:?} unwatched, {w:?} watched (p95 {p95:?}, worst {worst:?})");
    assert!(
        w <= b * 3 + Duration::from_millis(15),
        "the publisher slowed down: p50 {w:?} watched against {b:?} unwatched"
    );
    // Every single call is bounded by `BLOCKED` already; a few may be slow when the machine is.
    assert!(
        p95 < Duration::from_millis(300),
        "one publish call in twenty took {p95:?} or more"
    );
}

/// No client ever held more than one message, and every frame encoded was bounded.
fn assert_memory_bounded(stats: &GatewayStats) {
    eprintln!(
        "gateway: {} snapshots, {} frames encoded, {} deliveries, max held per client {} B, largest message {} B, held now {} B",
        stats.snapshots_received,
        stats.frames_encoded,
        stats.deliveries,
        stats.max_bytes_held_per_client,
        stats.max_message_bytes,
        stats.bytes_held
    );
    assert!(stats.max_message_bytes > 0, "no message was built");
    assert!(
        stats.max_bytes_held_per_client <= stats.max_message_bytes,
        "a client held {} bytes, more than one message ({} bytes): a queue grew",
        stats.max_bytes_held_per_client,
        stats.max_message_bytes
    );
    assert!(
        stats.bytes_held <= stats.clients_connected * stats.max_message_bytes,
        "{} bytes held by {} clients",
        stats.bytes_held,
        stats.clients_connected
    );
}

/// What a reading client saw until the end of the run and its last step, checked as it
/// arrives: versions strictly increasing, snapshot sequences never going back. (The end and
/// the last snapshot come on different topics, in either order.)
async fn read_to_the_end(mut socket: websocket::RawSocket) -> Vec<Pushed> {
    socket.accept().await;
    let mut seen: Vec<Pushed> = Vec::new();
    while let Some(pushed) = socket.next().await {
        if let Some(last) = seen.last() {
            assert!(
                pushed.state["version"].as_u64() > last.state["version"].as_u64(),
                "an older state arrived after a newer one"
            );
            assert!(
                pushed.sequence() >= last.sequence(),
                "snapshot {:?} arrived after {:?}",
                pushed.sequence(),
                last.sequence()
            );
        }
        let ended = !pushed.state["ended"].is_null() && pushed.state["step"] == LAST_STEP;
        seen.push(pushed);
        if ended {
            break;
        }
    }
    seen
}

/// Decodes a pushed PNG to its RGBA pixels.
fn pixels(png: &[u8]) -> Vec<u8> {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    buf.truncate(info.buffer_size());
    buf
}

/// A reader saw the run to its end, with the last step's exact frame, and was never left
/// waiting (the publisher publishes every 17 ms).
fn assert_served_to_the_end(seen: &[Pushed], last_step: u64) {
    let last = seen.last().expect("the reader got messages");
    let gap = seen
        .windows(2)
        .map(|w| w[1].arrived - w[0].arrived)
        .max()
        .unwrap_or_default();
    assert!(gap < UNSERVED, "a reader went {gap:?} without a message");
    assert_eq!(last.state["ended"]["runDigest"], Stage::run_digest());
    assert_eq!(last.state["step"], last_step);
    use sha2::Digest as _;
    let digest = hex(&sha2::Sha256::digest(pixels(&last.png)));
    assert_eq!(
        digest,
        frame_digest(last_step),
        "the last frame is not its step's"
    );
    for pushed in seen.iter().filter(|p| !p.png.is_empty()) {
        let step = pushed.state["step"].as_u64().expect("a step");
        assert_eq!(pushed.state["views"][0]["producedStep"], step);
    }
}

/// Runs both phases with `spectators` started between them, and a well-behaved reader
/// throughout the second phase; returns the reader's messages and the gateway's stats.
async fn watched_run<F, Fut>(spectators: F) -> (Vec<Pushed>, GatewayStats)
where
    F: FnOnce(std::net::SocketAddr) -> Fut,
    Fut: std::future::Future<Output = Vec<JoinHandle<()>>>,
{
    let stage = Stage::start(World {
        agents: 1,
        screen: true,
    })
    .await;
    let baseline = publish_phase(&stage, 0).await;
    let addr = stage.gateway.addr();
    let control = tokio::spawn(read_to_the_end(websocket::open(addr, None).await));
    let others = spectators(addr).await;
    let watched = publish_phase(&stage, STEPS).await;
    stage.end(2 * STEPS).await;
    let seen = tokio::time::timeout(Duration::from_secs(20), control)
        .await
        .expect("the control reader was served to the end")
        .expect("the control reader");
    let stats = stage.gateway.stats();
    assert_publisher_unhurt(&baseline, &watched);
    assert_memory_bounded(&stats);
    assert_served_to_the_end(&seen, LAST_STEP);
    // Spectators that finish (the ten readers) must have passed; the others are stopped.
    for mut task in others {
        match tokio::time::timeout(Duration::from_secs(2), &mut task).await {
            Ok(done) => done.expect("a spectator"),
            Err(_) => task.abort(),
        }
    }
    (seen, stats)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_hurt_the_run() {
    let (_, stats) = watched_run(|addr| async move {
        // A small receive buffer, and not even the handshake reply is read.
        let socket = websocket::open(addr, Some(4096)).await;
        vec![tokio::spawn(async move {
            let _held = socket;
            std::future::pending::<()>().await;
        })]
    })
    .await;
    assert_eq!(stats.clients_accepted, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_slowly_cannot_hurt_the_run() {
    let (_, stats) = watched_run(|addr| async move {
        let mut socket = websocket::open(addr, Some(8192)).await;
        vec![tokio::spawn(async move {
            while socket.trickle(256).await {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })]
    })
    .await;
    assert_eq!(stats.clients_accepted, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_leave_mid_frame_cannot_hurt_the_run() {
    let (_, stats) = watched_run(|addr| async move {
        vec![tokio::spawn(async move {
            for _ in 0..8 {
                websocket::open(addr, None).await.leave_mid_frame().await;
                tokio::time::sleep(Duration::from_millis(60)).await;
            }
        })]
    })
    .await;
    assert!(stats.clients_accepted >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_clients_at_once_are_each_served_in_order() {
    let (_, stats) = watched_run(|addr| async move {
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let socket = websocket::open(addr, None).await;
            tasks.push(tokio::spawn(async move {
                let seen = read_to_the_end(socket).await;
                assert_served_to_the_end(&seen, LAST_STEP);
            }));
        }
        tasks
    })
    .await;
    assert_eq!(stats.clients_accepted, 11);
}
