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

use crate::{SYNTHETIC_RUN, composition, host, plan, root};

/// What the watcher received, in order: (topic, payload, the names of its attachments).
type Received = Arc<Mutex<Vec<(String, serde_json::Value, Vec<String>)>>>;

/// A watcher: it declares and subscribes to the three topics on the run's own runtime (so its
/// subscriptions stand before the session publishes boundary 0: the runtime runs it at the
/// coordinator's first wait), then reads them on a thread of its own and keeps every message
/// with the names of its attachments.
fn watch(launch: &mut flysim_run::Launch, topics: Topics, received: Received) {
    let (link, options) = launch.watcher_connection(Id::from_static("test-watcher"));
    let (tx, rx) = std::sync::mpsc::channel();
    tokio::spawn(async move {
        let client = Client::connect_link(link, options).await.unwrap();
        let mut subscriptions = Vec::new();
        for (name, retained, mode) in [
            (&topics.descriptor, true, SubscribeMode::Latest),
            (
                &topics.snapshots,
                false,
                SubscribeMode::Bounded { max_queued: 64 },
            ),
            (
                &topics.events,
                false,
                SubscribeMode::Bounded { max_queued: 8 },
            ),
        ] {
            // A compatible declaration is idempotent: the watcher need not wait for the session's.
            client.declare_topic(name, retained).await.unwrap();
            let options = SubscribeOptions {
                mode,
                max_in_flight: 2,
                replay_latest: true,
            };
            subscriptions.push((name.clone(), client.subscribe(name, options).await.unwrap()));
        }
        let _ = tx.send((client, subscriptions));
    });
    std::thread::spawn(move || {
        let Ok((client, subscriptions)) = rx.recv() else {
            return;
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for (name, mut s) in subscriptions {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while let Some(m) = s.next().await {
                        let names = m.attachments.iter().map(|(id, _)| id.to_string()).collect();
                        let _ =
                            tx.send((name.clone(), serde_json::Value::Object(m.payload), names));
                    }
                });
            }
            drop(tx);
            while let Some(item) = rx.recv().await {
                received.lock().unwrap().push(item);
            }
            drop(client);
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
            .filter(|(t, ..)| t == topic)
            .map(|(_, v, _)| v.clone())
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

/// The step-time rule of the spectator tests (`crates/cli/tests/it/watch.rs`): each watched
/// run's step p50 over that of the unwatched run just before it; the median of those ratios at
/// most 1.10.
fn spectators_leave_the_step_time_alone(unwatched: &[u64], watched: &[u64]) -> bool {
    let mut ratios: Vec<f64> = unwatched
        .iter()
        .zip(watched)
        .map(|(plain, watched)| *watched as f64 / *plain as f64)
        .collect();
    ratios.sort_unstable_by(f64::total_cmp);
    ratios[ratios.len() / 2] <= 1.10
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
    for _ in 0..3 {
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
    let again: Vec<u64> = (0..3)
        .map(|_| step_p50_ns(&thread_run(scratch.path(), None).run_dir))
        .collect();
    assert!(
        spectators_leave_the_step_time_alone(&unwatched, &again)
            || spectators_leave_the_step_time_alone(&again, &unwatched),
        "two unwatched runs: {unwatched:?} ns and {again:?} ns"
    );
}

/// A resumed run publishes its restored boundary, with no decision and the restored frame
/// (produced at that boundary), and every later snapshot the frame of its own boundary: no
/// media of before the restore. (A resume of zero steps publishes the restored
/// boundary alone; a longer one may coalesce it with the next, as a latest topic does.)
#[test]
fn a_resumed_run_publishes_the_restored_boundary_with_its_own_frame() {
    if let flysim_binjgb::Availability::Absent { reason } = flysim_binjgb::availability() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!("skipped: the binjgb core is absent from this build: {reason}");
        }
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let path = root().join("compositions/gameboy.kdl");
    let bytes = std::fs::read(&path).unwrap();
    let plan = flysim_compose::plan(
        flysim_compose::Input {
            name: "gameboy.kdl",
            bytes: &bytes,
            dir: path.parent().unwrap(),
        },
        None,
        &flysim_run::components::SPECS,
    )
    .unwrap();
    let content = ContentSource::for_composition(&path, None);
    let state = scratch.path().join("state");
    let host = host(scratch.path());
    // 120 steps and a checkpoint where the bound stops the run.
    let first = flysim_run::run(
        &plan,
        &content,
        &state,
        Some(120),
        &Execution::default(),
        &host,
        &mut Quiet,
    )
    .unwrap();
    assert_eq!(first.steps, 120);

    let received: Received = Arc::default();
    let sink = Arc::clone(&received);
    let execution = Execution {
        on_launch: Some(OnLaunch(Arc::new(move |launch, session| {
            watch(launch, Topics::of(session), Arc::clone(&sink));
        }))),
        ..Execution::default()
    };
    let snapshots_of = |steps: u64| {
        received.lock().unwrap().clear();
        let resumed = flysim_run::resume(
            &first.run_dir,
            Some(steps),
            None,
            &execution,
            &host,
            &mut Quiet,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let all = received.lock().unwrap().clone();
        let snapshots: Vec<(CommittedSnapshot, Vec<String>)> = all
            .into_iter()
            .filter(|(t, ..)| t.ends_with(".snapshots"))
            .map(|(_, v, frames)| (serde_json::from_value(v).unwrap(), frames))
            .collect();
        (resumed, snapshots)
    };

    let (resumed, snapshots) = snapshots_of(0);
    assert_eq!(resumed.steps, 120);
    assert_eq!(snapshots.len(), 1, "the restored boundary alone");
    let (restored, _) = &snapshots[0];
    assert_eq!(restored.scope.step.get(), 120);
    assert_eq!(
        restored.scope.epoch.as_str(),
        "epoch-2",
        "under the new epoch"
    );
    assert!(
        restored
            .agents
            .iter()
            .all(|a| a.selected_decision.is_none())
    );
    assert!(restored.agents.iter().all(|a| a.applied_controls.is_none()));

    let (resumed, more) = snapshots_of(30);
    assert_eq!(resumed.steps, 150);
    let trace = std::fs::read_to_string(first.run_dir.join("trace.ndjson")).unwrap();
    let rows: Vec<&str> = trace.lines().collect();
    for (snapshot, frames) in snapshots.iter().chain(&more) {
        let k = usize::try_from(snapshot.scope.step.get()).unwrap();
        assert!(k >= 120, "a boundary of before the restore: {k}");
        let row = flysim_types::json::parse_document(rows[k].as_bytes()).unwrap();
        let view = &row["behaviour"]["observation"]["views"][0];
        assert_eq!(view["producedStep"], k.to_string());
        let produced = snapshot.media.views[0].produced_step.get();
        assert_eq!(produced, k as u64, "boundary {k}'s own frame");
        let attached = [view["viewId"].as_str().unwrap().to_owned()];
        assert_eq!(frames.as_slice(), attached.as_slice(), "its frame attached");
    }
}
