//! Flybus benchmark: RPC round-trip latency and a frame fan-out scenario.
//!
//! Run with `cargo bench -p flysim-bus --bench rpc_latency` (optionally
//! `-- --calls N --frames-seconds S --only FLAVOUR/TRANSPORT/CALLERS`). It prints, for the in-memory byte pipe, the in-process
//! envelope link and the Unix-socket transport, and 1, 2 and 4 concurrent callers, the p50/p90/p99 of the call round trip (caller `call()` to
//! terminal result, through the router to an echo service and back), on a Tokio multi-thread
//! runtime with 2 workers and on a current-thread runtime. Then it publishes a 640x480 RGBA
//! frame (1,228,800 bytes) at 60 Hz to three latest-mode readers, one of them slow, and prints
//! frames delivered and coalesced, process CPU, peak RSS, peak store bytes, and what is left at
//! rest. Everything runs in this one process; wall-clock time is used for measurement only.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall-clock time"
)]
#![expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on standard output"
)]

use std::io::Read as _;
use std::time::{Duration, Instant};

use flysim_bus::{Client, ClientOptions, Router, RouterConfig, SubscribeMode, SubscribeOptions};
use flysim_types::Id;
use serde_json::{Map, Value, json};

/// The allocator `flysim` itself runs with (the router and every worker live in that binary), so
/// the allocation measured here is the shipped one.
#[global_allocator]
static ALLOCATOR: flysim_alloc::Allocator = flysim_alloc::Allocator;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Transport {
    Memory,
    Link,
    Unix,
}

impl Transport {
    const ALL: [Self; 3] = [Self::Memory, Self::Link, Self::Unix];

    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Link => "link",
            Self::Unix => "unix",
        }
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

struct Setup {
    router: Router,
    root: tempfile::TempDir,
    transport: Transport,
    next: u64,
}

impl Setup {
    fn new(transport: Transport) -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let router = Router::start(RouterConfig::new(root.path().join("store"))).expect("router");
        if transport == Transport::Unix {
            router
                .listen_unix(&root.path().join("sock/router.sock"))
                .expect("listen");
        }
        Self {
            router,
            root,
            transport,
            next: 0,
        }
    }

    async fn client(&mut self, id: &str) -> Client {
        self.next += 1;
        let options = ClientOptions {
            client_id: Id::parse(id).expect("id"),
            incarnation: self.next,
            store_root: self.root.path().join("store"),
        };
        match self.transport {
            Transport::Memory => {
                Client::connect(self.router.connect_in_memory(256 * 1024), options).await
            }
            Transport::Link => {
                let link = self.router.connect_link_as(options.client_id.clone());
                Client::connect_link(link, options).await
            }
            Transport::Unix => {
                Client::connect_unix(&self.root.path().join("sock/router.sock"), options).await
            }
        }
        .expect("connect")
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

async fn rpc_round_trips(transport: Transport, callers: usize, calls: usize) -> Vec<Duration> {
    let mut setup = Setup::new(transport);
    let worker = setup.client("worker").await;
    let mut svc = worker
        .register("bench.echo", 16, 16)
        .await
        .expect("register");
    let server = tokio::spawn(async move {
        while let Some(req) = svc.next().await {
            tokio::spawn(async move {
                let _ = req.responder.reply(req.payload, &[]).await;
            });
        }
    });
    let mut tasks = Vec::new();
    for c in 0..callers {
        let client = setup.client(&format!("caller-{c}")).await;
        tasks.push(tokio::spawn(async move {
            let payload = obj(json!({"requestId": "req-1", "scope": null, "params": {"n": 1}}));
            // Warm-up.
            for _ in 0..200 {
                client
                    .call(
                        "bench.echo",
                        "Worker.Status",
                        payload.clone(),
                        &[],
                        None,
                        None,
                    )
                    .await
                    .expect("call");
            }
            let mut samples = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = Instant::now();
                client
                    .call(
                        "bench.echo",
                        "Worker.Status",
                        payload.clone(),
                        &[],
                        None,
                        None,
                    )
                    .await
                    .expect("call");
                samples.push(start.elapsed());
            }
            samples
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("caller"));
    }
    server.abort();
    setup.router.shutdown();
    all.sort();
    all
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (100 Hz on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn frames(transport: Transport, seconds: u64) {
    const FRAME: usize = 640 * 480 * 4;
    let mut setup = Setup::new(transport);
    let env = setup.client("env").await;
    env.declare_topic("world.frames", false)
        .await
        .expect("topic");
    let mut readers = Vec::new();
    for (i, slow) in [(0, false), (1, false), (2, true)] {
        let client = setup.client(&format!("reader-{i}")).await;
        let mut sub = client
            .subscribe(
                "world.frames",
                SubscribeOptions {
                    mode: SubscribeMode::Latest,
                    max_in_flight: 2,
                    replay_latest: false,
                },
            )
            .await
            .expect("subscribe");
        readers.push(tokio::spawn(async move {
            let _client = client;
            let (mut delivered, mut coalesced, mut bytes) = (0u64, 0u64, 0u64);
            while let Some(message) = sub.next().await {
                delivered += 1;
                coalesced += message.replaced;
                let mut file = message.attachments[0].1.open().await.expect("open");
                let mut buf = Vec::with_capacity(FRAME);
                file.read_to_end(&mut buf).expect("read");
                bytes += buf.len() as u64;
                if slow {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                if message.payload.get("last").is_some() {
                    break;
                }
            }
            (delivered, coalesced, bytes)
        }));
    }
    let pixels = vec![0x5au8; FRAME];
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_nanos(16_666_667));
    let total = seconds * 60;
    let mut max_payload = 0usize;
    for n in 1..=total {
        tick.tick().await;
        let mut w = env
            .allocate(FRAME as u64, "image/rgba8")
            .await
            .expect("allocate");
        w.write(&pixels).expect("write");
        let frame = w.seal(None).await.expect("seal");
        let payload = if n == total {
            obj(json!({"step": n.to_string(), "last": true}))
        } else {
            obj(json!({"step": n.to_string()}))
        };
        max_payload = max_payload.max(serde_json::to_vec(&payload).map_or(0, |b| b.len()));
        env.publish("world.frames", payload, &[("frame", &frame)])
            .await
            .expect("publish");
    }
    let elapsed = start.elapsed();
    let mut results = Vec::new();
    for r in readers {
        results.push(tokio::time::timeout(Duration::from_secs(30), r).await);
    }
    let cpu = cpu_seconds() - cpu0;
    let rest = {
        let mut s = setup.router.stats();
        for _ in 0..200 {
            if s.artifacts == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            s = setup.router.stats();
        }
        s
    };
    let name = transport.name();
    println!(
        "frames/{name}: {total} frames of {FRAME} B published in {:.2} s ({:.1} fps)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    for (i, r) in results.iter().enumerate() {
        match r {
            Ok(Ok((d, c, b))) => println!(
                "  reader-{i}{}: delivered {d}, coalesced {c}, read {:.1} MB",
                if i == 2 {
                    " (slow, 100 ms per frame)"
                } else {
                    ""
                },
                *b as f64 / 1e6
            ),
            _ => println!("  reader-{i}: did not finish"),
        }
    }
    println!(
        "  process CPU {:.2} s ({:.0} % of one core; router, publisher and readers share the process)",
        cpu,
        100.0 * cpu / elapsed.as_secs_f64()
    );
    println!("  peak RSS {:.1} MiB", peak_rss_kib() as f64 / 1024.0);
    println!(
        "  peak store bytes {:.1} MB; at rest: artifacts {}, owner roots {}, store bytes {}",
        rest.peak_store_bytes as f64 / 1e6,
        rest.artifacts,
        rest.roots,
        rest.store_bytes
    );
    println!(
        "  largest publish payload {max_payload} B (pixels travel only as artifacts; envelopes are capped at 64 KiB)"
    );
    setup.router.shutdown();
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `--only FLAVOUR/TRANSPORT/CALLERS` (e.g. `current-thread/unix/1`): the one RPC row to run,
/// for profiling it; the frame scenario is then skipped unless `--frames-seconds` is given.
fn only() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() {
    let calls = usize::try_from(arg("--calls", 5000)).unwrap_or(5000);
    let only = only();
    let seconds = arg("--frames-seconds", if only.is_some() { 0 } else { 10 });
    for (flavour, rt) in [
        (
            "multi-thread(2)",
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime"),
        ),
        (
            "current-thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
        ),
    ] {
        for transport in Transport::ALL {
            for callers in [1, 2, 4] {
                let row = format!("{flavour}/{}/{callers}", transport.name());
                if only.as_ref().is_some_and(|only| *only != row) {
                    continue;
                }
                let samples = rt.block_on(rpc_round_trips(transport, callers, calls));
                let us = |d: Duration| d.as_secs_f64() * 1e6;
                println!(
                    "rpc {flavour} {:6} callers={callers}: n={} p50 {:.1} us  p90 {:.1} us  p99 {:.1} us",
                    transport.name(),
                    samples.len(),
                    us(percentile(&samples, 0.50)),
                    us(percentile(&samples, 0.90)),
                    us(percentile(&samples, 0.99)),
                );
            }
        }
    }
    if seconds > 0 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        for transport in Transport::ALL {
            rt.block_on(frames(transport, seconds));
        }
    }
}
