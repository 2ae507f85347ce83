//! The transaction on the success path: the clock, bootstrap, determinism across modes,
//! transports, dispatch orders and thread counts, pause and terminal episodes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flysim_arena::task::CounterTask;
use flysim_session::{Phase, RunHooks, Stop};
use flysim_types::RationalNs;
use flysim_types::plan::{RunMode, Transport};
use flysim_types::trace::DispatchOrder;

use crate::Setup;

#[test]
fn sixty_hertz_on_a_one_ms_tick_gives_16_17_17() {
    let (result, rows) = Setup::new(3).run(RunHooks::default());
    result.unwrap();
    for (row, (ticks, remainder)) in rows[1..].iter().zip([
        (16, RationalNs::new(2_000_000, 3).unwrap()),
        (17, RationalNs::new(1_000_000, 3).unwrap()),
        (17, RationalNs::ZERO),
    ]) {
        for agent in &row.behaviour.agents {
            assert_eq!(agent.ticks_advanced.get(), ticks);
            assert_eq!(agent.remainder, remainder);
        }
    }
    // Ten warm-up ticks, then 50 over three steps.
    assert_eq!(rows[3].behaviour.agents[0].brain_ticks.get(), 60);
}

#[test]
fn bootstrap_and_warm_up_advance_nothing_and_pay_nothing() {
    let (result, rows) = Setup::new(0).run(RunHooks::default());
    let outcome = result.unwrap();
    assert_eq!(rows.len(), 1);
    let zero = &rows[0].behaviour;
    assert_eq!(zero.boundary.get(), 0);
    assert!(zero.batch_id.is_none() && zero.control_digest.is_none());
    assert_eq!(zero.observation.engine_frame.as_deref(), Some("0"));
    assert!(
        zero.agents
            .iter()
            .all(|a| a.rewards.is_empty() && a.ticks_advanced.get() == 10)
    );
    assert!(zero.events.is_empty());
    // The environment did one lifecycle mutation (Initialize) and stepped zero times.
    assert_eq!(
        outcome.statuses[&crate::id("arena")].progress_counter.get(),
        1
    );
}

/// Every execution mode (in-process and thread here; process in the CLI tests), transport,
/// dispatch order and thread count, over the local lane or the bus, with the coordinator's busy
/// polling off and on, gives the same run digest.
#[test]
fn behaviour_is_the_same_in_every_mode_transport_dispatch_thread_count_and_poll_window() {
    let mut digests = Vec::new();
    for mode in [RunMode::InProcess, RunMode::Thread] {
        for transport in [Transport::Memory, Transport::Unix] {
            for dispatch in [
                DispatchOrder::Sequential,
                DispatchOrder::Concurrent,
                DispatchOrder::Reversed,
            ] {
                for threads in [1, 2] {
                    for (local_lane, poll) in [(true, 0), (true, 200), (false, 0), (false, 200)] {
                        let mut setup = Setup::new(12).busy_poll(Duration::from_micros(poll));
                        setup.mode = mode;
                        setup.transport = transport;
                        setup.dispatch = dispatch;
                        setup.worker_threads = Some(threads);
                        setup.local_lane = local_lane;
                        let (result, _) = setup.run(RunHooks::default());
                        let outcome = result.unwrap();
                        digests.push((
                            format!(
                                "{mode:?} {transport:?} {dispatch:?} {threads} lane={local_lane} poll={poll}us"
                            ),
                            outcome.run_digest,
                        ));
                    }
                }
            }
        }
    }
    let first = digests[0].1;
    for (what, digest) in &digests {
        assert_eq!(*digest, first, "{what}");
    }
}

#[test]
fn a_pause_requested_mid_step_finishes_the_step() {
    let hooks = RunHooks::default();
    let pause = hooks.pause.clone();
    let phases = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&phases);
    let hooks = RunHooks {
        phase: Some(Box::new(move |phase, step| {
            seen.lock().unwrap().push((phase, step));
            if phase == Phase::Applying && step == 4 {
                pause.request();
            }
        })),
        ..hooks
    };
    let (result, rows) = Setup::new(20).run(hooks);
    let outcome = result.unwrap();
    assert_eq!(
        outcome.stop,
        Stop::Paused {
            reason: "requested".into()
        }
    );
    assert_eq!(outcome.steps, 5);
    assert_eq!(rows.len(), 6);
    let phases = phases.lock().unwrap();
    // Committing(4) -> Ready(5) -> Paused(5): no new edge, no Prepare of step 5.
    let tail: Vec<_> = phases.iter().rev().take(3).rev().copied().collect();
    assert_eq!(
        tail,
        [
            (Phase::Committing, 4),
            (Phase::Ready, 5),
            (Phase::Paused, 5)
        ]
    );
}

#[test]
fn a_terminal_episode_request_pauses_at_its_boundary() {
    let mut setup = Setup::new(20);
    setup.registry = setup.registry.clone().with_task(
        "counter-v1",
        Arc::new(|_| Box::new(CounterTask::new(Some(7)))),
    );
    let (result, rows) = setup.run(RunHooks::default());
    let outcome = result.unwrap();
    assert_eq!(
        outcome.stop,
        Stop::Paused {
            reason: "terminal:step-limit".into()
        }
    );
    assert_eq!(outcome.steps, 7);
    let last = &rows.last().unwrap().behaviour;
    assert_eq!(last.boundary.get(), 7);
    assert!(last.episode_request.is_some());
    // The final rewards were committed with that boundary.
    assert!(last.agents.iter().all(|a| a.committed_step.get() == 7));
}

#[test]
fn another_master_seed_changes_the_behaviour() {
    let (a, rows_a) = Setup::new(10).run(RunHooks::default());
    let mut plan = crate::synthetic();
    plan.master_seed = flysim_types::U64(43);
    for agent in &mut plan.agents {
        let derived = flysim_types::seed::derive(plan.master_seed, &agent.agent_id).unwrap();
        agent.seed = derived.seed;
        agent.material = Some(derived.material);
        agent.material_digest = Some(derived.material_digest);
    }
    let plan = plan.into_body().seal().unwrap();
    let setup = Setup::new(10);
    let mut rows_b = Vec::new();
    let b = flysim_session::run_plan(
        &plan,
        &setup.options(),
        &setup.registry,
        RunHooks::default(),
        &mut |row| {
            rows_b.push(row.behaviour.clone());
            Ok(())
        },
    )
    .unwrap();
    assert_ne!(a.unwrap().run_digest, b.run_digest);
    // Not only the plan digest: the agents decide differently.
    let decisions = |rows: Vec<&flysim_types::trace::TraceBehaviour>| -> Vec<_> {
        rows.iter()
            .flat_map(|r| r.agents.iter().map(|a| a.decision_digest))
            .collect()
    };
    assert_ne!(
        decisions(rows_a.iter().map(|r| &r.behaviour).collect()),
        decisions(rows_b.iter().collect())
    );
}

/// The session id (the run id) and the epoch are operational: they never reach behaviour.
#[test]
fn the_session_id_never_reaches_behaviour() {
    let plan = crate::synthetic();
    let setup = Setup::new(5);
    let mut digests = Vec::new();
    for session in ["run-a", "another-run-7"] {
        let mut options = setup.options();
        options.session_id = crate::id(session);
        let mut rows = Vec::new();
        let outcome = flysim_session::run_plan(
            &plan,
            &options,
            &setup.registry,
            RunHooks::default(),
            &mut |row| {
                assert_eq!(row.operational.session_id.as_str(), session);
                rows.push(row.behaviour.clone());
                Ok(())
            },
        )
        .unwrap();
        digests.push((outcome.run_digest, rows));
    }
    assert_eq!(digests[0], digests[1]);
}
