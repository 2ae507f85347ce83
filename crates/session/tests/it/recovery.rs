//! The checklist rows whose invariant is a coherent recovery (implementation guide §4): a failed
//! epoch (one Commit failing after another succeeded, a router restart during an Advance) is
//! followed by a restore from the last durable checkpoint that continues exactly as the run that
//! never failed; after a restore, a stray request of the old epoch is refused with
//! `STALE_EPOCH` and changes nothing; and a capture requested while the world waits inside an
//! Advance neither deadlocks nor captures anywhere but a committed boundary.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flysim_bus::{Client, ClientOptions, Router};
use flysim_session::{Phase, ResumeFrom, RunHooks, SessionError, run_plan_into};
use flysim_types::plan::RunMode;
use flysim_types::trace::TransitionTrace;
use flysim_types::workers::Method;
use serde_json::{Map, Value, json};

use crate::checkpoint::Collect;
use crate::{Setup, id, point, synthetic};

/// Runs the synthetic plan with a checkpoint cadence, hooks and an optional restore.
fn run(
    setup: &Setup,
    every: u64,
    from: Option<ResumeFrom>,
    hooks: RunHooks,
) -> (Result<u64, SessionError>, Collect) {
    let mut options = setup.options();
    options.checkpoint_every = Some(every);
    options.resume = from;
    let mut sink = Collect::default();
    let result = run_plan_into(&synthetic(), &options, &setup.registry, hooks, &mut sink)
        .map(|o| o.steps)
        .map_err(|f| *f.error);
    (result, sink)
}

fn behaviour(rows: &[TransitionTrace]) -> Vec<String> {
    rows.iter()
        .map(|r| serde_json::to_string(&r.behaviour).unwrap())
        .collect()
}

/// Restores `failed`'s last checkpoint on fresh workers and runs to `steps`; asserts the rows
/// after it are the uninterrupted run's, under a new epoch, and returns the boundary restored.
fn restore_and_compare(failed: &Collect, steps: u64, every: u64, label: &str) -> u64 {
    let (whole, reference) = run(&Setup::new(steps), every, None, RunHooks::default());
    assert_eq!(whole.unwrap(), steps);
    let (k, _, envelope) = failed.checkpoints.last().cloned().expect("a checkpoint");
    let k_rows = usize::try_from(k).unwrap();
    // The failed run's rows up to the checkpoint are the uninterrupted run's.
    assert_eq!(
        behaviour(&failed.rows[..=k_rows]),
        behaviour(&reference.rows[..=k_rows]),
        "{label}"
    );
    let from = ResumeFrom {
        envelope,
        prior: failed.rows[..=k_rows]
            .iter()
            .map(|r| r.behaviour.clone())
            .collect(),
    };
    let (result, resumed) = run(&Setup::new(steps), every, Some(from), RunHooks::default());
    assert_eq!(result.unwrap(), steps, "{label}");
    assert_eq!(
        behaviour(&resumed.rows),
        behaviour(&reference.rows[k_rows + 1..]),
        "{label}"
    );
    assert!(
        resumed
            .rows
            .iter()
            .all(|r| r.operational.epoch.as_str() == "epoch-2"),
        "{label}"
    );
    k
}

/// One Commit fails after another succeeded: the epoch fails at step 4 with no step 5 played,
/// and restoring its last checkpoint (boundary 4) plays on exactly as the run that never
/// failed.
#[test]
fn a_failed_commit_is_recovered_coherently_from_the_last_checkpoint() {
    let setup = Setup::new(10).fault("fly-b", |f| f.fail = Some(point(Method::AgentCommit, 4)));
    let (result, failed) = run(&setup, 2, None, RunHooks::default());
    let e = result.unwrap_err();
    assert_eq!(e.code_str(), "FS0301", "{e}");
    assert_eq!(failed.rows.len(), 5);
    let at: Vec<u64> = failed.checkpoints.iter().map(|c| c.0).collect();
    assert_eq!(at, [2, 4]);
    assert_eq!(restore_and_compare(&failed, 10, 2, "commit failure"), 4);
}

/// The router restarts during an Advance: the epoch fails (`FS0308`, boundary 3 the last
/// committed), and restoring the last checkpoint on a new router plays on exactly as the run
/// that never failed.
#[test]
fn a_router_restart_is_recovered_coherently_from_the_last_checkpoint() {
    let router: Arc<Mutex<Option<Router>>> = Arc::new(Mutex::new(None));
    let (keep, kill) = (Arc::clone(&router), Arc::clone(&router));
    let setup = Setup::new(10).fault("arena", |f| {
        f.stall = Some((
            point(Method::EnvironmentAdvance, 3),
            Duration::from_millis(800),
        ));
    });
    let hooks = RunHooks {
        launched: Some(Box::new(move |launch| {
            *keep.lock().unwrap() = Some(launch.router().clone());
        })),
        phase: Some(Box::new(move |phase, step| {
            if phase == Phase::Applying && step == 3 {
                let router = kill.lock().unwrap().clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if let Some(r) = router {
                        r.shutdown();
                    }
                });
            }
        })),
        ..RunHooks::default()
    };
    let (result, failed) = run(&setup, 2, None, hooks);
    let e = result.unwrap_err();
    assert_eq!(e.code_str(), "FS0308", "{e}");
    assert_eq!(failed.rows.len(), 4);
    let at: Vec<u64> = failed.checkpoints.iter().map(|c| c.0).collect();
    assert_eq!(at, [2]);
    assert_eq!(restore_and_compare(&failed, 10, 2, "router restart"), 2);
}

/// A client of the session's router under another id.
fn intruder(
    router: &Router,
    dir: &std::path::Path,
) -> impl std::future::Future<Output = Client> + use<> {
    let stream = router.connect_in_memory(64 * 1024);
    let options = ClientOptions {
        client_id: id("intruder"),
        incarnation: 1,
        store_root: dir.join("store"),
    };
    async move { Client::connect(stream, options).await.unwrap() }
}

/// One session RPC call from `client`; the outcome object.
async fn call(client: &Client, service: &str, method: &str, payload: Value) -> Map<String, Value> {
    let payload = payload.as_object().unwrap().clone();
    client
        .call(service, method, payload, &[], None, None)
        .await
        .unwrap()
        .outcome
}

/// Where the session's router is, once launched.
type Place = Arc<Mutex<Option<(Router, std::path::PathBuf)>>>;

/// Hooks that keep the router and, on entering `phase` at `step`, send `payload` for `method`
/// to `service` from another client after `delay`, recording the outcome.
fn stray(
    at: (Phase, u64),
    delay: Duration,
    (service, method, payload): (&'static str, &'static str, Value),
    outcome: &Arc<Mutex<Option<Map<String, Value>>>>,
) -> RunHooks {
    let place: Place = Arc::new(Mutex::new(None));
    let (keep, take, record) = (Arc::clone(&place), place, Arc::clone(outcome));
    RunHooks {
        launched: Some(Box::new(move |launch| {
            *keep.lock().unwrap() =
                Some((launch.router().clone(), launch.runtime_dir().to_owned()));
        })),
        phase: Some(Box::new(move |phase, step| {
            if (phase, step) == at {
                let (router, dir) = take.lock().unwrap().clone().unwrap();
                let (record, payload) = (Arc::clone(&record), payload.clone());
                tokio::spawn(async move {
                    let client = intruder(&router, &dir).await;
                    tokio::time::sleep(delay).await;
                    let reply = call(&client, service, method, payload).await;
                    *record.lock().unwrap() = Some(reply);
                });
            }
        })),
        ..RunHooks::default()
    }
}

/// After a restore (epoch-2 from boundary 10), an old coordinator's Prepare of epoch-1 reaches
/// the agent: it is refused `STALE_EPOCH` with mutation none, and the restored run is exactly
/// the uninterrupted one (no tick, draw or decode happened for the stray).
#[test]
fn a_request_of_the_old_epoch_after_a_restore_is_stale_and_changes_nothing() {
    let (whole, reference) = run(&Setup::new(20), 10, None, RunHooks::default());
    assert_eq!(whole.unwrap(), 20);
    let (k, _, envelope) = reference.checkpoints[0].clone();
    assert_eq!(k, 10);
    let from = ResumeFrom {
        envelope,
        prior: reference.rows[..=10]
            .iter()
            .map(|r| r.behaviour.clone())
            .collect(),
    };
    let old_prepare = json!({
        "requestId": "req-1",
        "scope": {"sessionId": "test-run", "epoch": "epoch-1", "step": "12"},
        "params": {"agentId": "fly-a", "profileDigest": "0".repeat(64),
            "interval": {"numerator": "1000000", "denominator": "1"},
            "decisionContextDigest": "0".repeat(64), "preStepStimulations": []},
    });
    let outcome = Arc::new(Mutex::new(None));
    // The agent stalls in its Prepare of step 13, so the stray is answered mid-run.
    let mut setup = Setup::new(20).fault("fly-a", |f| {
        f.stall = Some((point(Method::AgentPrepare, 13), Duration::from_millis(400)));
    });
    setup.mode = RunMode::Thread;
    let hooks = stray(
        (Phase::Preparing, 12),
        Duration::from_millis(50),
        ("agent.fly-a", "Agent.Prepare", old_prepare),
        &outcome,
    );
    let (result, resumed) = run(&setup, 10, Some(from), hooks);
    assert_eq!(result.unwrap(), 20);
    let reply = outcome
        .lock()
        .unwrap()
        .take()
        .expect("the stray was answered");
    assert_eq!(reply["error"]["code"], "STALE_EPOCH", "{reply:?}");
    assert_eq!(reply["error"]["mutation"], "none", "{reply:?}");
    assert_eq!(behaviour(&resumed.rows), behaviour(&reference.rows[11..]));
    assert_eq!(resumed.checkpoints.last().map(|c| c.0), Some(20));
    let (ours, theirs) = (&resumed.checkpoints[0].2, &reference.checkpoints[1].2);
    let ours = flysim_types::checkpoint::decode(ours).unwrap();
    let theirs = flysim_types::checkpoint::decode(theirs).unwrap();
    assert_eq!(ours.payloads, theirs.payloads);
}

/// The world waits inside its Advance of step 3 (a backend waiting for input) while a capture
/// is requested of it: the request is answered (no deadlock) and only at a committed boundary,
/// and the session's own capture due at boundary 4 is taken after the wait, byte for byte the
/// capture of a run that never waited.
#[test]
fn a_capture_requested_while_the_world_waits_is_taken_only_at_a_boundary() {
    let (clean, reference) = run(&Setup::new(6), 2, None, RunHooks::default());
    assert_eq!(clean.unwrap(), 6);
    let capture = json!({
        "requestId": "req-1",
        "scope": {"sessionId": "test-run", "epoch": "epoch-1", "step": "3"},
        "params": {"checkpointId": "stray"},
    });
    let outcome = Arc::new(Mutex::new(None));
    let mut setup = Setup::new(6).fault("arena", |f| {
        f.stall = Some((
            point(Method::EnvironmentAdvance, 3),
            Duration::from_millis(500),
        ));
    });
    setup.mode = RunMode::Thread;
    let hooks = stray(
        (Phase::Applying, 3),
        Duration::from_millis(100),
        ("environment.arena", "State.Capture", capture),
        &outcome,
    );
    let (result, waited) = run(&setup, 2, None, hooks);
    assert_eq!(result.unwrap(), 6);
    let reply = outcome
        .lock()
        .unwrap()
        .take()
        .expect("the capture was answered");
    // It waited its turn behind the Advance and captured the committed boundary after it:
    // never the world mid-step, and never boundary 3, which the Advance had already left.
    assert_eq!(reply["type"], "result", "{reply:?}");
    assert_eq!(reply["result"]["boundary"], "4", "{reply:?}");
    assert_eq!(reply["workerId"], "arena", "{reply:?}");
    assert_eq!(behaviour(&waited.rows), behaviour(&reference.rows));
    let at: Vec<u64> = waited.checkpoints.iter().map(|c| c.0).collect();
    assert_eq!(at, [2, 4, 6]);
    for (ours, theirs) in waited.checkpoints.iter().zip(&reference.checkpoints) {
        let ours = flysim_types::checkpoint::decode(&ours.2).unwrap();
        let theirs = flysim_types::checkpoint::decode(&theirs.2).unwrap();
        assert_eq!(
            ours.payloads, theirs.payloads,
            "boundary {}",
            ours.manifest["sourceScope"]["step"]
        );
    }
}
