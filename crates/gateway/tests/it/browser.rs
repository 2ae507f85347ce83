//! The page in a real browser: headless Chromium opens the gateway's page while the test
//! publisher publishes at 60 Hz, the step advances, the native canvas holds exactly the
//! frame of the step it shows (SHA-256 of its RGBA pixels), the end shows the run digest, and
//! a screenshot is saved. Without Chromium or its driver the test says what is missing and
//! returns.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flysim_testkit::{Browser, WATCH_NOT_BLANK, WATCH_STEP_AND_DIGEST};
use serde_json::Value;

use crate::publisher::{Stage, World, frame_digest};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// What the browser saw.
struct Seen {
    step: u64,
    digest: String,
    latencies: Vec<f64>,
    ages: Vec<f64>,
    ended_digest: Value,
}

fn drive(url: &str, stop: &AtomicBool, stage: &Stage, runtime: &tokio::runtime::Handle) -> Seen {
    let browser = Browser::start().expect("start headless Chromium");
    browser.goto(url).expect("open the page");
    let advanced = browser
        .wait_for(
            "window.flysim && window.flysim.frames > 5 && window.flysim.step > 10",
            Duration::from_secs(30),
        )
        .expect("poll the page");
    assert!(advanced.is_some(), "the step never advanced on the page");
    let not_blank = browser
        .execute(WATCH_NOT_BLANK, &[])
        .expect("read the canvas");
    assert_eq!(not_blank, Value::Bool(true), "the screen is blank");
    let pair = browser
        .execute_async(WATCH_STEP_AND_DIGEST, &[])
        .expect("read the view digest");
    let step = pair[0]
        .as_u64()
        .unwrap_or_else(|| panic!("no step: {pair}"));
    let digest = pair[1].as_str().expect("a digest").to_owned();
    // Let latencies accumulate at 60 Hz, then end the run.
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(100));
    let steps = browser
        .execute("return window.flysim.step;", &[])
        .expect("read the step");
    runtime.block_on(stage.end(steps.as_u64().unwrap_or(0) + 1));
    let ended = browser
        .wait_for(
            "window.flysim.ended && window.flysim.ended.runDigest",
            Duration::from_secs(10),
        )
        .expect("poll the end");
    let numbers = |name: &str| -> Vec<f64> {
        browser
            .execute(&format!("return window.flysim.{name};"), &[])
            .expect("read the latencies")
            .as_array()
            .expect("an array")
            .iter()
            .filter_map(Value::as_f64)
            .collect()
    };
    let (latencies, ages) = (numbers("latencies"), numbers("ages"));
    let shot = browser.screenshot().expect("a screenshot");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway-page.png");
    std::fs::write(&path, shot).expect("save the screenshot");
    eprintln!("screenshot: {}", path.display());
    Seen {
        step,
        digest,
        latencies,
        ages,
        ended_digest: ended.unwrap_or(Value::Null),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_exact_frame_in_a_real_browser() {
    if let Some(missing) = Browser::missing() {
        eprintln!("skipping the browser test: {missing}");
        return;
    }
    let stage = Arc::new(
        Stage::start(World {
            agents: 1,
            screen: true,
        })
        .await,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let publishing = tokio::spawn({
        let (stage, stop) = (Arc::clone(&stage), Arc::clone(&stop));
        async move {
            let mut tick = tokio::time::interval(Duration::from_micros(16_667));
            let mut step = 0;
            while !stop.load(Ordering::SeqCst) && step < 60 * 120 {
                tick.tick().await;
                stage.publish(step).await;
                step += 1;
            }
        }
    });
    let url = stage.gateway.url();
    let runtime = tokio::runtime::Handle::current();
    let seen = tokio::task::spawn_blocking({
        let (stage, stop) = (Arc::clone(&stage), Arc::clone(&stop));
        move || drive(&url, &stop, &stage, &runtime)
    })
    .await
    .expect("the browser steps");
    publishing.await.expect("the publisher");
    assert_eq!(
        seen.digest,
        frame_digest(seen.step),
        "the canvas does not hold step {}'s frame",
        seen.step
    );
    assert_eq!(seen.ended_digest, Value::String(Stage::run_digest()));
    let mut latencies = seen.latencies;
    assert!(
        latencies.len() > 30,
        "only {} frames arrived",
        latencies.len()
    );
    latencies.sort_by(f64::total_cmp);
    eprintln!(
        "browser latency (receive minus the gateway's send stamp) over {} messages: p50 {:.2} ms, p99 {:.2} ms",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    let mut ages = seen.ages;
    ages.sort_by(f64::total_cmp);
    if !ages.is_empty() {
        eprintln!(
            "snapshot off the bus to shown on the page: p50 {:.2} ms, p99 {:.2} ms",
            percentile(&ages, 0.5),
            percentile(&ages, 0.99)
        );
    }
    let stats = stage.gateway.stats();
    let mut delivery = stats.delivery_latencies_ms.clone();
    delivery.sort_by(f64::total_cmp);
    if !delivery.is_empty() {
        eprintln!(
            "gateway latency (snapshot off the bus to send completed) p50 {:.2} ms, p99 {:.2} ms; max held per client {} B",
            percentile(&delivery, 0.5),
            percentile(&delivery, 0.99),
            stats.max_bytes_held_per_client
        );
    }
}
