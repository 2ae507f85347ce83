//! The routes: the page, the newest state as JSON, the newest frame as PNG; what the state
//! says (steps, rates, buttons, progress, the end) and what it never says (artifact
//! references, owner tokens, store paths); a world without a screen; refusals to start.

use std::net::SocketAddr;
use std::time::Duration;

use flysim_gateway::{Gateway, GatewayError};
use flysim_types::Id;
use flysim_types::publish::Topics;
use miette::Diagnostic as _;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::publisher::{Stage, World, frame};

/// One HTTP GET: the status code and the body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("reach the gateway");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send a request");
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).await.expect("read a reply");
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP reply");
    let head = String::from_utf8_lossy(&reply[..split]).into_owned();
    let status = head[9..12].parse().expect("a status code");
    (status, head, reply[split + 4..].to_vec())
}

/// Polls `/state.json` until `pred` holds (at most 5 s).
async fn state_when(addr: SocketAddr, pred: impl Fn(&Value) -> bool) -> (Value, String) {
    for _ in 0..250 {
        let (status, _, body) = get(addr, "/state.json").await;
        assert_eq!(status, 200);
        let text = String::from_utf8(body).expect("UTF-8");
        let state: Value = serde_json::from_str(&text).expect("JSON");
        if pred(&state) {
            return (state, text);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the state never got there");
}

fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_and_the_frame_of_the_newest_snapshot_are_served() {
    let stage = Stage::start(World {
        agents: 2,
        screen: true,
    })
    .await;
    let addr = stage.gateway.addr();
    for step in 0..=25 {
        stage.publish(step).await;
    }
    let (state, text) = state_when(addr, |s| s["step"] == 25 && s["views"][0].is_object()).await;
    assert_eq!(state["sequence"], 26);
    assert_eq!(state["epoch"], "epoch-0");
    assert_eq!(state["sessionId"], "demo");
    assert!((state["worldTimeMs"].as_f64().unwrap() - 25.0 * 16.742_706_298_828_125).abs() < 1e-6);
    assert_eq!(
        state["progress"],
        serde_json::json!([{"name": "score", "value": 2.0}])
    );
    let agents = state["agents"].as_array().expect("agents");
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[1]["id"], "fly-1");
    assert_eq!(agents[1]["port"], "p2");
    assert_eq!(agents[1]["buttons"], serde_json::json!(["right"]));
    assert_eq!(agents[1]["populationRateHz"], 2.0 + 4.0);
    assert_eq!(
        agents[1]["rates"],
        serde_json::json!([{"role": "move-left", "hz": 0.0}, {"role": "move-right", "hz": 2.5}])
    );
    assert_eq!(state["ended"], Value::Null);
    // Nothing of the bus reaches the browser.
    let store = stage.bus.store_root().display().to_string();
    for secret in ["artifactId", "storeId", "own-", "dlv-", store.as_str()] {
        assert!(!text.contains(secret), "the state shows `{secret}`: {text}");
    }
    let (status, head, png) = get(addr, "/frame.png").await;
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: image/png")
    );
    let shown = decode(&png);
    assert_eq!((shown.0, shown.1), (160, 144));
    assert!(shown.2 == frame(25), "the frame is not step 25's");

    stage.end(26).await;
    let (state, _) = state_when(addr, |s| !s["ended"].is_null()).await;
    assert_eq!(state["ended"]["runDigest"], Stage::run_digest());
    assert_eq!(state["ended"]["steps"], "26");
    assert_eq!(state["ended"]["outcome"], "complete");
    assert_eq!(state["step"], 25);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_without_a_screen_shows_numbers_only() {
    let stage = Stage::start(World {
        agents: 4,
        screen: false,
    })
    .await;
    let addr = stage.gateway.addr();
    stage.publish(0).await;
    let (state, _) = state_when(addr, |s| s["step"] == 0).await;
    assert_eq!(state["views"], serde_json::json!([]));
    assert_eq!(state["agents"].as_array().map(Vec::len), Some(4));
    // Boundary 0 has no decision: no buttons, not "none pressed".
    assert_eq!(state["agents"][3]["buttons"], Value::Null);
    let (status, _, _) = get(addr, "/frame.png").await;
    assert_eq!(status, 404);
    assert_eq!(stage.gateway.stats().frames_encoded, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_one_self_contained_file() {
    let stage = Stage::start(World {
        agents: 1,
        screen: true,
    })
    .await;
    let (status, head, body) = get(stage.gateway.addr(), "/").await;
    assert_eq!(status, 200);
    assert!(head.to_ascii_lowercase().contains("text/html"));
    let page = String::from_utf8(body).expect("UTF-8");
    assert!(page.contains("window.flysim"));
    assert!(page.contains("image-rendering: pixelated"));
    for external in ["http://", "https://", "<script src", "<link"] {
        assert!(!page.contains(external), "the page loads `{external}`");
    }
    assert!(stage.gateway.url().starts_with("http://127.0.0.1:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_disagrees_with_its_descriptor_is_never_shown() {
    let stage = Stage::start(World {
        agents: 1,
        screen: true,
    })
    .await;
    let addr = stage.gateway.addr();
    stage.publish(1).await;
    state_when(addr, |s| s["step"] == 1).await;
    stage
        .publish_edited(2, |p| {
            p.insert("descriptorRevision".into(), "2".into());
        })
        .await;
    stage
        .publish_edited(3, |p| {
            p["agents"][0]["agentId"] = "stranger".into();
        })
        .await;
    for _ in 0..250 {
        if stage.gateway.stats().snapshots_refused == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(stage.gateway.stats().snapshots_refused, 2);
    let (status, _, body) = get(addr, "/state.json").await;
    assert_eq!(status, 200);
    let state: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(state["step"], 1, "a refused snapshot was shown");
    stage.publish(4).await;
    state_when(addr, |s| s["step"] == 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_state_is_still_served_once_the_bus_is_gone() {
    let stage = Stage::start(World {
        agents: 1,
        screen: true,
    })
    .await;
    let addr = stage.gateway.addr();
    stage.publish(9).await;
    stage.end(10).await;
    state_when(addr, |s| !s["ended"].is_null() && s["step"] == 9).await;
    stage.bus.router.shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut socket = flysim_testkit::websocket::open(addr, None).await;
    socket.accept().await;
    let pushed = tokio::time::timeout(Duration::from_secs(5), socket.next())
        .await
        .expect("a message in time")
        .expect("the last state");
    assert_eq!(pushed.state["step"], 9);
    assert_eq!(pushed.state["ended"]["runDigest"], Stage::run_digest());
    assert!(!pushed.png.is_empty(), "the last frame is gone");
    // And the page stays connected (no close, no reconnecting loop).
    let quiet = tokio::time::timeout(Duration::from_millis(300), socket.next()).await;
    assert!(quiet.is_err(), "the gateway closed the page's connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_serving() {
    let stage = Stage::start(World {
        agents: 1,
        screen: false,
    })
    .await;
    let Stage { gateway, .. } = stage;
    let addr = gateway.addr();
    assert_eq!(get(addr, "/state.json").await.0, 200);
    tokio::task::spawn_blocking(move || gateway.shutdown())
        .await
        .expect("the gateway's thread ends");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the gateway still listens after shutdown"
    );
}

#[test]
fn a_taken_address_is_refused_with_fs0460() {
    let runtime = flysim_testkit::runtime();
    let _inside = runtime.enter();
    let bus = flysim_testkit::Bus::start(flysim_testkit::Transport::Link, 3);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let addr = taken.local_addr().expect("its address");
    let topics = Topics::of(&Id::parse("demo").expect("an id"));
    let link = bus
        .router
        .connect_link_as(Id::parse("gateway").expect("an id"));
    let refused = Gateway::start(link, bus.options("gateway"), topics, addr)
        .expect_err("the address is taken");
    assert!(matches!(refused, GatewayError::Bind { addr: a, .. } if a == addr));
    assert_eq!(
        refused.code().map(|c| c.to_string()).as_deref(),
        Some("FS0460")
    );
}

#[test]
fn a_refused_thread_or_runtime_is_fs0461() {
    // The system cannot be made to refuse a thread here; the error is built as start builds it.
    let refused = GatewayError::Start {
        what: "thread",
        source: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
    };
    assert_eq!(
        refused.code().map(|c| c.to_string()).as_deref(),
        Some("FS0461")
    );
    assert!(refused.to_string().contains("could not start its thread"));
}
