//! A test publisher: what a session publishes (descriptor, snapshots with RGBA frames, the
//! ended event) on an in-memory router, with frames of a known pattern, and a gateway started
//! on the same router.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use flysim_bus::Client;
use flysim_gateway::Gateway;
use flysim_testkit::{Bus, Transport};
use flysim_types::Id;
use flysim_types::publish::Topics;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

/// The Game Boy screen.
pub(crate) const WIDTH: u32 = 160;
pub(crate) const HEIGHT: u32 = 144;
/// The session every test publishes.
pub(crate) const SESSION: &str = "demo";

fn digest(tag: &str) -> String {
    hex(&Sha256::digest(tag.as_bytes()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn schema(id: &str) -> Value {
    json!({"id": id, "version": 1, "digest": digest(id)})
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// The pixels of the frame of `step`: a pattern that moves with the step, opaque.
pub(crate) fn frame(step: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity((WIDTH * HEIGHT * 4) as usize);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let s = step as u32;
            out.extend_from_slice(&[
                (x + s) as u8,
                (y * 2 + s) as u8,
                ((x ^ y) + 3 * s) as u8,
                255,
            ]);
        }
    }
    out
}

/// The hex SHA-256 of [`frame`]`(step)`.
pub(crate) fn frame_digest(step: u64) -> String {
    hex(&Sha256::digest(frame(step)))
}

/// What a test publishes: how many flies, and whether the world has a screen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct World {
    pub(crate) agents: usize,
    pub(crate) screen: bool,
}

fn agent_id(i: usize) -> String {
    format!("fly-{i}")
}

fn descriptor(world: World) -> Map<String, Value> {
    let ports: Vec<Value> = (0..world.agents)
        .map(|i| {
            json!({"portId": format!("p{}", i + 1), "controls": {
                "buttons": ["a", "b", "left", "right"], "axes": [], "schema": schema("pad-v1")}})
        })
        .collect();
    let views = if world.screen {
        json!([{"viewId": "screen", "width": WIDTH, "height": HEIGHT, "format": "rgba8",
                "rowStride": WIDTH * 4, "pixelAspect": {"numerator": 1, "denominator": 1},
                "observationDelaySteps": 0}])
    } else {
        json!([])
    };
    let agents: Vec<Value> = (0..world.agents)
        .map(|i| {
            json!({"agentId": agent_id(i), "portId": format!("p{}", i + 1),
                   "profileDigest": digest("profile"), "datasetDigest": digest("dataset"),
                   "indexDigest": digest("index"), "neuronCount": "1000",
                   "rateRoles": ["move-left", "move-right"], "supportedStimuli": []})
        })
        .collect();
    obj(json!({
        "sessionId": SESSION, "revision": "1", "compositionDigest": digest("plan"),
        "schedulerId": "lockstep-v1",
        "environment": {
            "backendDigest": digest("backend"), "contentDigest": digest("content"),
            "configurationDigest": digest("config"),
            "stepDuration": {"numerator": "8572265625", "denominator": "512"},
            "ports": ports, "inspectionSchema": schema("inspection-v1"), "views": views,
            "audio": [], "recovery": "exact-checkpoint", "determinism": "fixed-build"},
        "taskSchema": schema("task-v1"),
        "agents": agents,
    }))
}

fn snapshot(world: World, step: u64, pixels: Option<Value>) -> Map<String, Value> {
    let agents: Vec<Value> = (0..world.agents)
        .map(|i| {
            let left = step.is_multiple_of(2);
            json!({"agentId": agent_id(i),
                "telemetry": {"brainTicks": (step * 10).to_string(),
                    "populationRateHz": 2.0 + (step % 7) as f64,
                    "rates": [{"roleId": "move-left", "hz": (step % 5) as f64 * 3.0},
                              {"roleId": "move-right", "hz": (i as f64) + 1.5}],
                    "learning": {"enabled": false, "updates": "0", "changed": "0", "signal": 0.0},
                    "stimulusRemainingMs": null},
                "selectedDecision": if step == 0 { Value::Null } else {
                    json!({"schema": schema("intent-v1"), "value": {"left": left}}) },
                "appliedControls": if step == 0 { Value::Null } else {
                    json!({"portId": format!("p{}", i + 1), "axes": [], "buttons": [
                        {"id": "a", "down": false}, {"id": "b", "down": false},
                        {"id": "left", "down": left}, {"id": "right", "down": !left}]}) }})
        })
        .collect();
    let views = match pixels {
        Some(r) => json!([{"viewId": "screen", "producedStep": step.to_string(), "pixels": r}]),
        None => json!([]),
    };
    let world_ns = u128::from(step) * 8_572_265_625;
    obj(json!({
        "descriptorRevision": "1", "publisherIncarnation": "pub-1",
        "scope": {"sessionId": SESSION, "epoch": "epoch-0", "step": step.to_string()},
        "episodeId": "episode-0", "sequence": (step + 1).to_string(),
        "worldTime": reduced(world_ns, 512),
        "agents": agents,
        "progress": {"schema": schema("task-v1"), "value": {"score": step / 10}},
        "media": {"views": views, "audio": []},
        "eventIds": [],
    }))
}

fn reduced(num: u128, den: u128) -> Value {
    let (mut a, mut b) = (num, den);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let g = a.max(1);
    json!({"numerator": (num / g).to_string(), "denominator": (den / g).to_string()})
}

/// A router, a publisher on it, and a gateway following it.
pub(crate) struct Stage {
    pub(crate) bus: Bus,
    pub(crate) publisher: Client,
    pub(crate) gateway: Gateway,
    pub(crate) topics: Topics,
    world: World,
}

impl Stage {
    /// Starts a router and a gateway on `127.0.0.1:0`, then the publisher, which declares the
    /// topics (after the gateway started, so it has to wait for them) and the descriptor.
    pub(crate) async fn start(world: World) -> Self {
        let bus = Bus::start(Transport::Link, 7);
        let topics = Topics::of(&Id::parse(SESSION).expect("an id"));
        let link = bus
            .router
            .connect_link_as(Id::parse("gateway").expect("an id"));
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("an address");
        let gateway = Gateway::start(link, bus.options("gateway"), topics.clone(), addr)
            .expect("the gateway starts");
        tokio::time::sleep(Duration::from_millis(60)).await;
        let publisher = bus.client("session").await;
        publisher
            .declare_topic(&topics.descriptor, true)
            .await
            .expect("declare");
        publisher
            .declare_topic(&topics.snapshots, false)
            .await
            .expect("declare");
        publisher
            .declare_topic(&topics.events, false)
            .await
            .expect("declare");
        publisher
            .publish(&topics.descriptor, descriptor(world), &[])
            .await
            .expect("publish the descriptor");
        for _ in 0..500 {
            if gateway.stats().topics_followed == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            gateway.stats().topics_followed,
            3,
            "the gateway never subscribed"
        );
        Self {
            bus,
            publisher,
            gateway,
            topics,
            world,
        }
    }

    /// Publishes the snapshot of `step` with its frame; returns how long the publisher spent
    /// (allocating, writing and sealing the frame, and the publish call).
    pub(crate) async fn publish(&self, step: u64) -> Duration {
        self.publish_edited(step, |_| {}).await
    }

    /// As [`Stage::publish`], with the snapshot's payload changed by `edit` first.
    pub(crate) async fn publish_edited(
        &self,
        step: u64,
        edit: impl FnOnce(&mut Map<String, Value>),
    ) -> Duration {
        let started = Instant::now();
        let artifact = if self.world.screen {
            let pixels = frame(step);
            let mut writer = self
                .publisher
                .allocate(pixels.len() as u64, "image/x-rgba8")
                .await
                .expect("allocate a frame");
            writer.write(&pixels).expect("write the frame");
            Some(writer.seal(None).await.expect("seal the frame"))
        } else {
            None
        };
        let reference = artifact
            .as_ref()
            .map(|a| serde_json::to_value(a.reference()).expect("a ref"));
        let attachments: Vec<(&str, &flysim_bus::Artifact)> =
            artifact.iter().map(|a| ("screen", a)).collect();
        let mut payload = snapshot(self.world, step, reference);
        edit(&mut payload);
        self.publisher
            .publish(&self.topics.snapshots, payload, &attachments)
            .await
            .expect("publish a snapshot");
        started.elapsed()
    }

    /// Publishes the session's end.
    pub(crate) async fn end(&self, steps: u64) {
        let event = json!({"type": "ended", "runDigest": digest("run"), "steps": steps.to_string(),
                           "outcome": "complete"});
        self.publisher
            .publish(&self.topics.events, obj(event), &[])
            .await
            .expect("publish the end");
    }

    /// The run digest [`Stage::end`] publishes.
    pub(crate) fn run_digest() -> String {
        digest("run")
    }
}
