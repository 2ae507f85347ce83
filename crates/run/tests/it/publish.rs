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

/// A watcher on its own thread and runtime: subscribes to the three topics (retrying until the
/// session declares them) and keeps every message.
fn watch(launch: &mut flysim_run::Launch, topics: Topics, received: Received) {
    let (link, options) = launch.watcher_connection(Id::from_static("test-watcher"));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let client = Client::connect_link(link, options).await.unwrap();
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
