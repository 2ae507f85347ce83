//! The failure-injection checklist (implementation guide §4), the rows that concern the
//! session, plus the diagnosed refusals of the launcher and the phase machine. Each scenario runs
//! twice: with the workers reached through their local lanes, and over the bus.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flysim_arena::CounterTask;
use flysim_bus::{Client, ClientOptions, Router};
use flysim_component::task::{Evaluation, Task, TaskError, Transition};
use flysim_session::launcher::{Launch, LaunchOptions, WorkerProgram};
use flysim_session::{Coordinator, PauseHandle, Phase, PhaseMachine, RunHooks, SessionError};
use flysim_types::plan::{RunMode, Transport};
use flysim_types::trace::DispatchOrder;
use flysim_types::workers::{Method, PortBinding, StatusResult, WorkerState};
use flysim_types::{Id, TypedValue};
use serde_json::{Value, json};

use crate::{Setup, id, point};

fn short(mut setup: Setup) -> Setup {
    setup.deadlines.attempt = Duration::from_millis(100);
    setup.deadlines.budget = Duration::from_secs(3);
    setup
}

type Seen = Arc<Mutex<Vec<(Phase, u64)>>>;

fn phases() -> (Seen, RunHooks) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let hooks = RunHooks {
        phase: Some(Box::new(move |phase, step| {
            record.lock().unwrap().push((phase, step))
        })),
        ..RunHooks::default()
    };
    (seen, hooks)
}

/// Duplicate Prepare after a lost reply: the first attempt's deadline passes while the agent
/// works, the coordinator resends the same request, gets `IN_PROGRESS`, then the cached reply.
/// The mutation counter (ticks, draws, decodes, commits, in `progressCounter`) proves that no
/// tick, draw or decode was repeated.
#[test]
fn duplicate_prepare_after_a_lost_reply_repeats_no_work() {
    for local_lane in [true, false] {
        let (clean, clean_rows) = Setup::new(8).lane(local_lane).run(RunHooks::default());
        let clean = clean.unwrap();
        let faulted = short(Setup::new(8).lane(local_lane)).fault("fly-a", |f| {
            f.stall = Some((point(Method::AgentPrepare, 3), Duration::from_millis(350)));
        });
        let (result, rows) = faulted.run(RunHooks::default());
        let outcome = result.unwrap();
        assert_eq!(outcome.run_digest, clean.run_digest);
        assert_eq!(rows.len(), clean_rows.len());
        for (worker, status) in &outcome.statuses {
            assert_eq!(
                status.progress_counter, clean.statuses[worker].progress_counter,
                "{worker} did more work after the lost reply"
            );
        }
    }
}

fn intruder(
    router: &Router,
    runtime_dir: &std::path::Path,
) -> impl std::future::Future<Output = Client> {
    let stream = router.connect_in_memory(64 * 1024);
    let options = ClientOptions {
        client_id: id("intruder"),
        incarnation: 1,
        store_root: runtime_dir.join("store"),
    };
    async move { Client::connect(stream, options).await.unwrap() }
}

async fn status(client: &Client, service: &str, serial: u64) -> StatusResult {
    let payload =
        json!({"requestId": format!("req-{}", 100_000 + serial), "scope": null, "params": {}});
    let reply = client
        .call(
            service,
            Method::WorkerStatus.as_str(),
            payload.as_object().unwrap().clone(),
            &[],
            None,
            None,
        )
        .await
        .unwrap();
    serde_json::from_value(reply.outcome["result"].clone()).unwrap()
}

/// One synthetic session launched (one agent thread each, the local lane as asked) and its
/// coordinator, not yet started: for tests that drive the coordinator step by step.
async fn launched(local_lane: bool, worker_threads: Option<u32>) -> (Launch, Coordinator) {
    let setup = Setup::new(1).lane(local_lane);
    let plan = crate::synthetic();
    let launch = Launch::start(&plan, &setup.options().launch, &setup.registry)
        .await
        .unwrap();
    let coordinator = Coordinator::new(
        plan,
        launch.client().clone(),
        &setup.registry,
        id("test-run"),
        DispatchOrder::Sequential,
        setup.deadlines,
        worker_threads,
        PauseHandle::default(),
    )
    .unwrap();
    (launch, coordinator)
}

/// The same batch with altered controls, under its own request or step or a new request at the
/// next step: `CONFLICT`, and the world does not move.
#[test]
fn the_same_batch_with_altered_controls_is_a_conflict_and_no_second_mutation() {
    for local_lane in [true, false] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (launch, mut coordinator) = launched(local_lane, None).await;
            coordinator.start().await.unwrap();
            let row = coordinator.step_once().await.unwrap();
            let client = intruder(launch.router(), launch.runtime_dir()).await;
            let before = status(&client, "environment.arena", 1).await;
            let altered = |request: String| {
                json!({
                    "requestId": request,
                    "scope": {"sessionId": "test-run", "epoch": "epoch-1", "step": "0"},
                    "params": {"batchId": "ep-0.batch-0", "controls": [
                        {"portId": "p1", "buttons": [{"id": "press", "down": true}], "axes": []},
                        {"portId": "p2", "buttons": [{"id": "press", "down": true}], "axes": []},
                    ]},
                })
            };
            let original = row.operational.advance_request_id.unwrap().to_string();
            // Its own request id and a new one at the step it ran, and a new request at the
            // worker's step naming the batch already applied.
            for (request, step) in [
                (original, "0"),
                ("req-9000".to_owned(), "0"),
                ("req-9001".to_owned(), "1"),
            ] {
                let mut body = altered(request);
                body["scope"]["step"] = json!(step);
                let reply = client
                    .call(
                        "environment.arena",
                        Method::EnvironmentAdvance.as_str(),
                        body.as_object().unwrap().clone(),
                        &[],
                        None,
                        None,
                    )
                    .await
                    .unwrap();
                assert_eq!(
                    reply.outcome["error"]["code"], "CONFLICT",
                    "{:?}",
                    reply.outcome
                );
                assert_eq!(reply.outcome["error"]["mutation"], "none");
                if step == "1" {
                    assert!(
                        reply.outcome["error"]["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("`ep-0.batch-0` was already applied")),
                        "{:?}",
                        reply.outcome
                    );
                }
            }
            let after = status(&client, "environment.arena", 2).await;
            assert_eq!(after.progress_counter, before.progress_counter);
            assert_eq!(after.last_batch_id, Some(id("ep-0.batch-0")));
            coordinator.shutdown().await;
            launch.reap(Duration::from_secs(1)).await;
        });
    }
}

/// A lost Advance result is resolved against its original request id: one world step.
#[test]
fn a_lost_advance_result_is_resolved_against_its_request() {
    for local_lane in [true, false] {
        let (clean, _) = Setup::new(6).lane(local_lane).run(RunHooks::default());
        let clean = clean.unwrap();
        let faulted = short(Setup::new(6).lane(local_lane)).fault("arena", |f| {
            f.stall = Some((
                point(Method::EnvironmentAdvance, 2),
                Duration::from_millis(350),
            ));
        });
        let (result, _) = faulted.run(RunHooks::default());
        let outcome = result.unwrap();
        assert_eq!(outcome.run_digest, clean.run_digest);
        assert_eq!(
            outcome.statuses[&id("arena")].progress_counter,
            clean.statuses[&id("arena")].progress_counter
        );
    }
}

/// A lost Advance result that stays unresolved for the whole budget fails the epoch: a bounded,
/// diagnosed outcome naming the environment, and never a second batch.
#[test]
fn a_lost_advance_result_beyond_the_budget_fails_the_epoch() {
    for local_lane in [true, false] {
        let mut setup = Setup::new(6).lane(local_lane).fault("arena", |f| {
            f.stall = Some((
                point(Method::EnvironmentAdvance, 2),
                Duration::from_millis(1500),
            ));
        });
        setup.deadlines.attempt = Duration::from_millis(100);
        setup.deadlines.budget = Duration::from_millis(400);
        let (seen, hooks) = phases();
        let begun = Instant::now();
        let (result, rows) = setup.run(hooks);
        let failure = result.unwrap_err();
        assert_eq!(failure.error.code_str(), "FS0302", "{}", failure.error);
        let message = failure.error.to_string();
        assert!(
            message.contains("arena") && message.contains(Method::EnvironmentAdvance.as_str()),
            "{message}"
        );
        assert!(begun.elapsed() < Duration::from_secs(5));
        assert_eq!(rows.len(), 3);
        assert_eq!(failure.steps, 2);
        let applying = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, s)| *p == Phase::Applying && *s == 2)
            .count();
        assert_eq!(applying, 1, "one batch for step 2, never a second");
    }
}

/// One Commit fails after another succeeded: the epoch fails and no next step is prepared.
#[test]
fn one_commit_failing_after_another_succeeded_stops_the_step() {
    for local_lane in [true, false] {
        let setup = Setup::new(10)
            .lane(local_lane)
            .fault("fly-b", |f| f.fail = Some(point(Method::AgentCommit, 4)));
        let (seen, hooks) = phases();
        let (result, rows) = setup.run(hooks);
        let failure = result.unwrap_err();
        assert_eq!(failure.error.code_str(), "FS0301", "{}", failure.error);
        match &*failure.error {
            SessionError::Refused {
                participant,
                method,
                step,
                ..
            } => {
                assert_eq!(
                    (participant.as_str(), *method, *step),
                    ("fly-b", Method::AgentCommit, 4)
                );
            }
            other => panic!("{other}"),
        }
        assert_eq!(rows.len(), 5);
        let seen = seen.lock().unwrap();
        assert!(
            !seen.contains(&(Phase::Preparing, 5)),
            "a next step was prepared"
        );
        assert_eq!(seen.last(), Some(&(Phase::Committing, 4)));
    }
}

/// An old worker's reply after a restart is rejected: the restarted agent has a new
/// incarnation, the pinned call is refused and the epoch is invalid.
#[test]
fn a_restarted_worker_invalidates_the_epoch() {
    for local_lane in [true, false] {
        let setup = Setup::new(10).lane(local_lane).fault("fly-a", |f| {
            f.restart_after = Some(point(Method::AgentCommit, 2))
        });
        let (result, rows) = setup.run(RunHooks::default());
        let failure = result.unwrap_err();
        assert_eq!(failure.error.code_str(), "FS0307", "{}", failure.error);
        assert!(failure.error.to_string().contains("fly-a"));
        assert_eq!(rows.len(), 4);
    }
}

/// The router restarts during an Advance: the call is lost, the epoch fails within the deadline
/// and the failure names the environment.
#[test]
fn a_router_restart_during_advance_fails_the_epoch() {
    for local_lane in [true, false] {
        let router: Arc<Mutex<Option<Router>>> = Arc::new(Mutex::new(None));
        let keep = Arc::clone(&router);
        let kill = Arc::clone(&router);
        let setup = Setup::new(10).lane(local_lane).fault("arena", |f| {
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
        let begun = Instant::now();
        let (result, rows) = setup.run(hooks);
        let failure = result.unwrap_err();
        assert_eq!(failure.error.code_str(), "FS0308", "{}", failure.error);
        assert!(
            failure.error.to_string().contains("arena"),
            "{}",
            failure.error
        );
        assert_eq!(rows.len(), 4);
        assert!(begun.elapsed() < Duration::from_secs(5));
    }
}

/// `Worker.Status` answers while a mutation runs, and `progressCounter` moves only on work.
#[test]
fn status_answers_while_a_mutation_runs() {
    for local_lane in [true, false] {
        let seen: Arc<Mutex<Vec<StatusResult>>> = Arc::new(Mutex::new(Vec::new()));
        let place: Arc<Mutex<Option<(Router, std::path::PathBuf)>>> = Arc::new(Mutex::new(None));
        let (keep, take, record) = (Arc::clone(&place), Arc::clone(&place), Arc::clone(&seen));
        let mut setup = Setup::new(4).lane(local_lane).fault("fly-a", |f| {
            f.stall = Some((point(Method::AgentPrepare, 2), Duration::from_millis(400)));
        });
        setup.mode = RunMode::Thread;
        let hooks = RunHooks {
            launched: Some(Box::new(move |launch| {
                *keep.lock().unwrap() =
                    Some((launch.router().clone(), launch.runtime_dir().to_owned()));
            })),
            phase: Some(Box::new(move |phase, step| {
                if phase == Phase::Preparing && step == 2 {
                    let (router, dir) = take.lock().unwrap().clone().unwrap();
                    let record = Arc::clone(&record);
                    tokio::spawn(async move {
                        let client = intruder(&router, &dir).await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        for serial in [1, 2] {
                            let s = status(&client, "agent.fly-a", serial).await;
                            record.lock().unwrap().push(s);
                        }
                    });
                }
            })),
            ..RunHooks::default()
        };
        let (result, _) = setup.run(hooks);
        result.unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        for s in seen.iter() {
            assert_eq!(s.state, WorkerState::Preparing);
            assert!(s.active_request_id.is_some());
        }
        assert_eq!(seen[0].progress_counter, seen[1].progress_counter);
    }
}

/// Identity is checked at Hello: an agent started within one thread is refused when the
/// session asks it for two.
#[test]
fn a_worker_started_within_fewer_threads_is_refused_at_hello() {
    for local_lane in [true, false] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (launch, mut coordinator) = launched(local_lane, Some(2)).await;
            let e = coordinator.start().await.unwrap_err();
            assert_eq!(e.code_str(), "FS0303", "{e}");
            assert_eq!(coordinator.phase(), Phase::Failed);
            coordinator.shutdown().await;
            launch.reap(Duration::from_secs(1)).await;
        });
    }
}

/// A worker process that cannot start is diagnosed, naming the worker.
#[test]
fn a_worker_that_cannot_start_is_diagnosed() {
    let mut setup = Setup::new(1);
    setup.mode = RunMode::Process;
    setup.transport = Transport::Unix;
    let mut options = setup.options();
    options.launch.program = Some(WorkerProgram {
        exe: "/nonexistent/flysim".into(),
        args: Vec::new(),
        env: Vec::new(),
    });
    let failure = flysim_session::run_plan(
        &crate::synthetic(),
        &options,
        &setup.registry,
        RunHooks::default(),
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert_eq!(failure.error.code_str(), "FS0309", "{}", failure.error);
    assert!(failure.error.to_string().contains("arena"));
    let _ = LaunchOptions::clone(&options.launch);
}

/// A worker process that ends before its Hello is reported as soon as it ends, with how it
/// ended, not after the start deadline.
#[test]
fn a_worker_process_that_exits_at_start_is_reported_at_once() {
    let mut setup = Setup::new(1);
    setup.mode = RunMode::Process;
    setup.transport = Transport::Unix;
    let mut options = setup.options();
    options.deadlines.start = Duration::from_secs(120);
    // `sh -c 'exit 3' sh worker ...`: every worker process exits with status 3 at once.
    options.launch.program = Some(WorkerProgram {
        exe: "/bin/sh".into(),
        args: vec!["-c".into(), "exit 3".into(), "sh".into()],
        env: Vec::new(),
    });
    let begun = Instant::now();
    let failure = flysim_session::run_plan(
        &crate::synthetic(),
        &options,
        &setup.registry,
        RunHooks::default(),
        &mut |_| Ok(()),
    )
    .unwrap_err();
    assert_eq!(failure.error.code_str(), "FS0309", "{}", failure.error);
    let message = failure.error.to_string();
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(
        message.contains("arena"),
        "the environment is named: {message}"
    );
    // Far below the 120 s start deadline it would otherwise wait out.
    assert!(
        begun.elapsed() < Duration::from_secs(60),
        "{:?}",
        begun.elapsed()
    );
}

/// A task that refuses a transition fails the epoch at that step.
struct Refusing(CounterTask);

impl Task for Refusing {
    fn bootstrap(
        &mut self,
        episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
        _memory: Option<flysim_component::MemoryView<'_>>,
    ) -> Result<flysim_component::task::Bootstrap, TaskError> {
        self.0.bootstrap(episode, initial, bindings, None)
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
        if t.step == 3 {
            return Err(TaskError::Ledger("the ledger refuses step 3".to_owned()));
        }
        self.0.evaluate_transition(t)
    }
}

#[test]
fn a_failing_task_fails_the_epoch() {
    for local_lane in [true, false] {
        let mut setup = Setup::new(10).lane(local_lane);
        setup.registry = setup.registry.clone().with_task(
            "counter-v1",
            Arc::new(|_| Box::new(Refusing(CounterTask::new(None)))),
        );
        let (result, rows) = setup.run(RunHooks::default());
        let failure = result.unwrap_err();
        assert_eq!(failure.error.code_str(), "FS0310", "{}", failure.error);
        assert!(failure.error.to_string().contains("task"));
        assert_eq!(rows.len(), 4);
    }
}

#[test]
fn the_phase_machine_refuses_undeclared_edges() {
    let mut machine = PhaseMachine::default();
    let e = machine.go(Phase::Committing).unwrap_err();
    assert_eq!(e.code_str(), "FS0306");
    for phase in [
        Phase::Ready,
        Phase::Preparing,
        Phase::Applying,
        Phase::Observing,
        Phase::Committing,
        Phase::Ready,
        Phase::Paused,
        Phase::Ready,
    ] {
        machine.go(phase).unwrap();
    }
    // No skipping the Advance, no committing twice, nothing after Stopped.
    assert!(!PhaseMachine::allowed(Phase::Preparing, Phase::Committing));
    assert!(!PhaseMachine::allowed(Phase::Committing, Phase::Committing));
    assert!(!PhaseMachine::allowed(Phase::Stopped, Phase::Ready));
    assert!(!PhaseMachine::allowed(Phase::Failed, Phase::Ready));
    let _ = Value::Null;
}

/// A backend's own refusal to start (a coded diagnostic of its crate).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("the test world cannot run here: its tool is not installed")]
#[diagnostic(code("FS0811"), help("install the tool"))]
struct ToolMissing;

/// A backend that refuses to start with its own code is reported with that code, not wrapped
/// in FS0305, and nothing runs.
#[test]
fn a_backend_refusal_keeps_its_own_code() {
    let mut setup = Setup::new(1);
    setup.registry = crate::arena_registry().with_environment(
        flysim_arena::SPEC.name,
        Arc::new(|_, _| Err(flysim_component::BackendError::refused(ToolMissing))),
    );
    let mut rows = 0;
    let failure = flysim_session::run_plan(
        &crate::synthetic(),
        &setup.options(),
        &setup.registry,
        RunHooks::default(),
        &mut |_| {
            rows += 1;
            Ok(())
        },
    )
    .unwrap_err();
    assert!(
        matches!(*failure.error, SessionError::BackendRefused(_)),
        "{:?}",
        failure.error
    );
    assert_eq!(failure.error.code_str(), "FS0811", "{}", failure.error);
    assert_eq!(
        miette::Diagnostic::help(&*failure.error).map(|h| h.to_string()),
        Some("install the tool".to_owned())
    );
    assert_eq!(rows, 0, "no row is written");
}
