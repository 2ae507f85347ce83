//! The publication boundary (contracts §10) seen from a watcher on the run's router: the
//! descriptor first, a snapshot per committed boundary with the boundary's telemetry, decisions
//! null at boundary 0 and present after, and the end of the run with its digest. Watching
//! changes nothing: the run digest is the golden one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flysim_bus::{Client, SubscribeMode, SubscribeOptions};
use flysim_run::{ContentSource, Execution, OnLaunch, Quiet};
use flysim_types::Id;
use flysim_types::publish::{CommittedSnapshot, SessionDescriptor, SessionEvent, Topics};

use crate::{SYNTHETIC_RUN, composition, host, plan};

/// What the watcher received, in order: (topic, payload).
type Received = Arc<Mutex<Vec<(String, serde_json::Value)>>>;

/// A watcher on its own thread and runtime: declares and subscribes to the three topics and
/// keeps every message.
fn watch(launch: &mut flysim_run::Launch, topics: Topics, received: Received) {
    let (link, options) = launch.watcher_connection(Id::from_static("test-watcher"));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = Client::connect_link(link, options).await.unwrap();
            // Declared here too (a compatible declaration is idempotent), so the watcher need
            // not wait for the session's and is subscribed before boundary 0 is published.
            for (name, retained) in [
                (&topics.descriptor, true),
                (&topics.snapshots, false),
                (&topics.events, false),
            ] {
                client.declare_topic(name, retained).await.unwrap();
            }
            let mut subscriptions = Vec::new();
            for (name, mode) in [
                (&topics.descriptor, SubscribeMode::Latest),
                (&topics.snapshots, SubscribeMode::Bounded { max_queued: 64 }),
                (&topics.events, SubscribeMode::Bounded { max_queued: 8 }),
            ] {
                let options = SubscribeOptions {
                    mode,
                    max_in_flight: 2,
                    replay_latest: true,
                };
                loop {
                    match client.subscribe(name, options).await {
                        Ok(s) => break subscriptions.push((name.clone(), s)),
                        Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                    }
                }
            }
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for (name, mut s) in subscriptions {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while let Some(m) = s.next().await {
                        let _ = tx.send((name.clone(), serde_json::Value::Object(m.payload)));
                    }
                });
            }
            drop(tx);
            while let Some(item) = rx.recv().await {
                received.lock().unwrap().push(item);
            }
        });
    });
}

#[test]
fn a_watcher_sees_the_descriptor_every_boundary_and_the_end_and_the_run_is_unchanged() {
    let scratch = tempfile::tempdir().unwrap();
    let plan = plan();
    let received: Received = Arc::default();
    let sink = Arc::clone(&received);
    let execution = Execution {
        on_launch: Some(OnLaunch(Arc::new(move |launch, session| {
            watch(launch, Topics::of(session), Arc::clone(&sink));
        }))),
        ..Execution::default()
    };
    let report = flysim_run::run(
        &plan,
        &ContentSource::for_composition(&composition(), None),
        &scratch.path().join("state"),
        None,
        &execution,
        &host(scratch.path()),
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(
        report.run_digest.hex(),
        SYNTHETIC_RUN,
        "watching changes nothing"
    );

    // The watcher's thread drains what was delivered before the router went away.
    std::thread::sleep(Duration::from_millis(300));
    let received = received.lock().unwrap().clone();
    let topics =
        Topics::of(&Id::parse(report.run_dir.file_name().unwrap().to_str().unwrap()).unwrap());
    let of = |topic: &str| -> Vec<serde_json::Value> {
        received
            .iter()
            .filter(|(t, _)| t == topic)
            .map(|(_, v)| v.clone())
            .collect()
    };
    let descriptors = of(&topics.descriptor);
    assert_eq!(descriptors.len(), 1, "one descriptor revision");
    let descriptor: SessionDescriptor = serde_json::from_value(descriptors[0].clone()).unwrap();
    assert_eq!(descriptor.composition_digest, plan.plan_digest);
    let agents: Vec<&str> = descriptor
        .agents
        .iter()
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(agents, ["fly-a", "fly-b"]);

    let snapshots: Vec<CommittedSnapshot> = of(&topics.snapshots)
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    assert!(!snapshots.is_empty());
    for pair in snapshots.windows(2) {
        assert!(pair[0].sequence < pair[1].sequence, "sequence increases");
        assert!(
            pair[0].scope.step < pair[1].scope.step,
            "never an older boundary"
        );
    }
    for s in &snapshots {
        s.validate_against(&descriptor).unwrap();
        let decided = s.scope.step.get() > 0;
        assert!(
            s.agents
                .iter()
                .all(|a| a.selected_decision.is_some() == decided)
        );
    }
    assert_eq!(snapshots[0].scope.step.get(), 0, "boundary 0 is published");
    let last = snapshots.last().unwrap();
    assert_eq!(last.scope.step.get(), 600, "the last boundary is published");

    // The last snapshot's telemetry is the last trace row's.
    let trace = std::fs::read_to_string(report.run_dir.join("trace.ndjson")).unwrap();
    // (Read with the contract's strict reader, whose numbers round exactly.)
    let row = flysim_types::json::parse_document(trace.lines().last().unwrap().as_bytes()).unwrap();
    for (i, agent) in last.agents.iter().enumerate() {
        let recorded: flysim_types::workers::AgentTelemetry =
            serde_json::from_value(row["behaviour"]["agents"][i]["telemetry"].clone()).unwrap();
        assert_eq!(agent.telemetry, recorded);
    }

    let events: Vec<SessionEvent> = of(&topics.events)
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    assert_eq!(
        events,
        [SessionEvent::Ended {
            run_digest: report.run_digest,
            steps: flysim_types::U64(600),
            outcome: Id::from_static("complete"),
        }]
    );
}

/// The step-time rule of the spectator tests (`crates/cli/tests/it/watch.rs`): the watched
/// runs' step p50s together at most 10 % over the unwatched ones'.
fn spectators_leave_the_step_time_alone(unwatched: &[u64], watched: &[u64]) -> bool {
    let (a, b): (u64, u64) = (unwatched.iter().sum(), watched.iter().sum());
    b as f64 <= a as f64 * 1.10
}

/// The p50 of a finished run's step times (the trace's operational `phaseNs.total`).
fn step_p50_ns(run_dir: &std::path::Path) -> u64 {
    let trace = std::fs::read_to_string(run_dir.join("trace.ndjson")).unwrap();
    let mut totals: Vec<u64> = trace
        .lines()
        .skip(1)
        .map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).unwrap();
            row["operational"]["phaseNs"]["total"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    totals.sort_unstable();
    totals[totals.len() / 2]
}

/// A run of `synthetic.kdl` in thread mode (the coordinator awaits every worker call, so a
/// task on its runtime gets to run), with `on_launch`; its report.
fn thread_run(scratch: &std::path::Path, on_launch: Option<OnLaunch>) -> flysim_run::RunReport {
    let execution = Execution {
        mode: Some(flysim_types::plan::RunMode::Thread),
        on_launch,
        ..Execution::default()
    };
    flysim_run::run(
        &plan(),
        &ContentSource::for_composition(&composition(), None),
        &scratch.join("state"),
        None,
        &execution,
        &host(scratch),
        &mut Quiet,
    )
    .unwrap()
}

/// The spectator tests can fail: a deliberately blocking gateway, one that does its work on
/// the session's own runtime and holds the thread half a millisecond every time it is polled,
/// is caught by their step-time rule (the run digest, even so, is unchanged: blocking slows a
/// run, it cannot change it).
#[test]
fn a_gateway_that_blocks_the_sessions_thread_fails_the_spectator_step_time_rule() {
    let scratch = tempfile::tempdir().unwrap();
    let mut unwatched = Vec::new();
    let mut blocked = Vec::new();
    for _ in 0..2 {
        let report = thread_run(scratch.path(), None);
        assert_eq!(report.run_digest.hex(), SYNTHETIC_RUN);
        unwatched.push(step_p50_ns(&report.run_dir));
        let blocking = OnLaunch(Arc::new(|_launch, _session| {
            // Spawned on the run's runtime: the thread the coordinator runs on.
            tokio::spawn(async {
                loop {
                    std::thread::sleep(Duration::from_micros(500));
                    tokio::task::yield_now().await;
                }
            });
        }));
        let report = thread_run(scratch.path(), Some(blocking));
        assert_eq!(report.run_digest.hex(), SYNTHETIC_RUN);
        blocked.push(step_p50_ns(&report.run_dir));
    }
    assert!(
        !spectators_leave_the_step_time_alone(&unwatched, &blocked),
        "the rule missed a blocking gateway: p50s {blocked:?} ns against {unwatched:?} ns"
    );
    // And the rule holds for a run against another like it.
    let again: Vec<u64> = (0..2)
        .map(|_| step_p50_ns(&thread_run(scratch.path(), None).run_dir))
        .collect();
    assert!(
        spectators_leave_the_step_time_alone(&unwatched, &again)
            || spectators_leave_the_step_time_alone(&again, &unwatched),
        "two unwatched runs: {unwatched:?} ns and {again:?} ns"
    );
}
