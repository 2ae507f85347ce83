//! The determinism mutant suite: deliberately broken agents, each a wrapper around the correct
//! synthetic agent registered in place of it, and for each the determinism property that must
//! fail for the mutant and hold for the unmutated agent (the control).
//!
//! | mutant | property that catches it |
//! | --- | --- |
//! | iterates a `HashMap` (per-instance `RandomState`) into its seed | two runs give one digest |
//! | reads the wall clock into its decision | two runs give one digest |
//! | lets the order its Prepare was dispatched in reach its decision | every dispatch order gives one digest |
//! | seeds its stream from the process id | the golden digest of the session's composition |
//! | accumulates its tick remainder in `f64` | the golden digest (and, for the clock itself, `crates/types/tests/it/mutants.rs`) |
//! | draws its stream again on the Prepare replayed after a restore | a restored session continues exactly as the uninterrupted run |
//! | draws its stream again on a duplicate Prepare | duplicate Prepare: the work counter, and no duplicate reaches a model |
//! | (the shell) forwards a duplicate Prepare to the model | duplicate Prepare: the clean run's digest and work counters |
//!
//! It knows nothing of the worker shell or the coordinator: every agent mutant sits behind the
//! `AgentModel` trait, where a real model's bug would. The one shell mutant is the worker's
//! test-only fault `forward_duplicate_prepares`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flysim_arena::synthetic::SyntheticAgent;
use flysim_component::model::{AgentModel, ModelError, ModelSetup, SensedInput, Sensing};
use flysim_component::schemas::action_decision;
use flysim_session::{Registry, RunHooks};
use flysim_types::plan::ModelKind;
use flysim_types::trace::DispatchOrder;
use flysim_types::workers::{AgentGraph, AgentTelemetry, Method, Reward, Stimulus};
use flysim_types::{RationalNs, TypedValue};
use serde_json::{Value, json};

use crate::{Setup, arena_registry};

/// The run digest of `fixtures/compositions/ok/synthetic-agents.kdl` over [`STEPS`] steps with
/// the correct synthetic agent, pinned: a mutant that is the same in every run of one process
/// (a process-id seed, a floating-point clock) still moves it.
const GOLDEN: &str = "6976f7d29b6ca6f6ebb519c494daa80a9f90f7b293014202832b19b71ef8de06";

/// Steps per run: enough for a perturbed decision to show, few enough for a debug build.
const STEPS: u64 = 40;

/// How a mutant breaks the synthetic agent.
#[derive(Clone)]
enum Breakage {
    /// None: the control.
    Sound,
    /// Its seed folds in the iteration order of a `HashMap` with its own `RandomState`.
    HashOrder,
    /// Each decision flips on the parity of the wall clock's reading.
    WallClock,
    /// Each decision flips on the parity of a ticket shared by every agent of the run, taken in
    /// the order their Prepares arrive: the dispatch order reaches the batch.
    DispatchTicket(Arc<AtomicU64>),
    /// Its seed is the process id.
    ProcessId,
    /// It counts its own ticks by accumulating the step's tick fraction in `f64`.
    FloatRemainder { elapsed_ticks: f64, ticks: u64 },
    /// A Prepare that reaches it before the last one was committed (a duplicate) draws its
    /// stream again; `duplicates` counts how many reached it.
    ResampleOnDuplicate {
        duplicates: Arc<AtomicU64>,
        open: bool,
    },
    /// The first Prepare after a restore (the replay of a step the failed run may have
    /// prepared already) draws its stream once more before deciding.
    RedrawAfterRestore { restored: bool },
}

/// The synthetic agent with one breakage.
struct Mutant {
    inner: SyntheticAgent,
    breakage: Breakage,
}

#[expect(
    clippy::disallowed_types,
    reason = "a deliberate mutant: hash-map iteration order"
)]
fn hash_order() -> i32 {
    let map: std::collections::HashMap<u32, ()> = (0..32).map(|k| (k, ())).collect();
    map.keys().enumerate().fold(0i32, |acc, (i, k)| {
        acc.wrapping_mul(31)
            .wrapping_add((i as i32).wrapping_mul(*k as i32 + 1))
    })
}

#[expect(
    clippy::disallowed_methods,
    reason = "a deliberate mutant: the wall clock in behaviour"
)]
fn wall_clock_parity() -> bool {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        // The parity of the set bits: it moves even on a clock coarser than a nanosecond.
        .map(|d| d.as_nanos().count_ones() & 1 == 1)
        .unwrap_or(false)
}

impl Mutant {
    fn new(setup: &ModelSetup, breakage: Breakage) -> Result<Self, ModelError> {
        let mut setup = setup.clone();
        match breakage {
            Breakage::HashOrder => setup.seed ^= hash_order(),
            Breakage::ProcessId => setup.seed = std::process::id() as i32,
            _ => {}
        }
        Ok(Self {
            inner: SyntheticAgent::new(&setup)?,
            breakage,
        })
    }

    /// Whether this decision is flipped to the other available action.
    fn flip(&self) -> bool {
        match &self.breakage {
            Breakage::WallClock => wall_clock_parity(),
            Breakage::DispatchTicket(ticket) => ticket.fetch_add(1, Ordering::SeqCst) & 1 == 1,
            _ => false,
        }
    }

    /// The ticks this step runs: the session's exact count, or the mutant's own in `f64`.
    fn ticks(&mut self, exact: u64) -> u64 {
        let Breakage::FloatRemainder {
            elapsed_ticks,
            ticks,
        } = &mut self.breakage
        else {
            return exact;
        };
        // 1/60 s of 1 ms ticks, accumulated in floating point.
        *elapsed_ticks += 1e9 / 60.0 / 1e6;
        let total = elapsed_ticks.floor() as u64;
        let now = total - *ticks;
        *ticks = total;
        now
    }
}

fn flipped(decision: TypedValue, context: &TypedValue) -> TypedValue {
    let chosen = decision.value.get("action").and_then(Value::as_str);
    let other = context
        .value
        .get("availableActions")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .find(|a| Some(*a) != chosen)
        });
    match other {
        Some(other) => TypedValue {
            schema: action_decision(),
            value: match json!({ "action": other }) {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
            },
        },
        None => decision,
    }
}

impl AgentModel for Mutant {
    fn tick_duration(&self) -> RationalNs {
        self.inner.tick_duration()
    }

    fn sensing(&self) -> Sensing {
        self.inner.sensing()
    }

    fn quick(&self) -> bool {
        true
    }

    fn warm_up(&mut self, input: &SensedInput, context: &TypedValue) -> Result<u64, ModelError> {
        self.inner.warm_up(input, context)
    }

    fn prepare(
        &mut self,
        ticks: u64,
        stimuli: &[Stimulus],
        context: &TypedValue,
    ) -> Result<TypedValue, ModelError> {
        if let Breakage::ResampleOnDuplicate { duplicates, open } = &mut self.breakage {
            if *open {
                duplicates.fetch_add(1, Ordering::SeqCst);
                self.inner.prepare(ticks, stimuli, context)?;
            }
            *open = true;
        }
        if let Breakage::RedrawAfterRestore { restored } = &mut self.breakage
            && std::mem::take(restored)
        {
            self.inner.prepare(ticks, stimuli, context)?;
        }
        let ticks = self.ticks(ticks);
        let decision = self.inner.prepare(ticks, stimuli, context)?;
        Ok(if self.flip() {
            flipped(decision, context)
        } else {
            decision
        })
    }

    fn commit(
        &mut self,
        input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError> {
        if let Breakage::ResampleOnDuplicate { open, .. } = &mut self.breakage {
            *open = false;
        }
        self.inner.commit(input, stimuli, rewards)
    }

    fn telemetry(&self) -> AgentTelemetry {
        self.inner.telemetry()
    }

    fn graph(&self) -> AgentGraph {
        self.inner.graph()
    }

    fn work(&self) -> u64 {
        self.inner.work()
    }

    fn capture(&self) -> Result<Vec<u8>, ModelError> {
        self.inner.capture()
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), ModelError> {
        self.inner.stage_restore(payload)
    }

    fn activate_restore(&mut self) -> Result<(), ModelError> {
        if let Breakage::RedrawAfterRestore { restored } = &mut self.breakage {
            *restored = true;
        }
        self.inner.activate_restore()
    }
}

/// The counter arena's registry with every synthetic agent built broken by `breakage` (one
/// registry per run, so a shared ticket starts at zero).
fn registry(breakage: &Breakage) -> Registry {
    let breakage = match breakage {
        Breakage::DispatchTicket(_) => Breakage::DispatchTicket(Arc::new(AtomicU64::new(0))),
        b => b.clone(),
    };
    arena_registry().with_agent(
        ModelKind::Synthetic,
        Arc::new(move |setup| Ok(Box::new(Mutant::new(setup, breakage.clone())?))),
    )
}

/// The run digest of the synthetic composition with `breakage`; `None` when the run failed.
fn run(breakage: &Breakage, dispatch: DispatchOrder) -> Option<String> {
    let mut setup = Setup::new(STEPS);
    setup.dispatch = dispatch;
    setup.registry = registry(breakage);
    let (result, _) = setup.run(RunHooks::default());
    result.ok().map(|o| o.run_digest.hex())
}

/// The property of the two-run and mode/order matrix tests: the same digest every time.
fn same_digest_every_run(breakage: &Breakage, orders: &[DispatchOrder]) -> bool {
    let digests: Vec<_> = orders.iter().map(|o| run(breakage, *o)).collect();
    digests.iter().all(|d| d.is_some() && *d == digests[0])
}

/// The property of the golden digest test.
fn keeps_the_golden_digest(breakage: &Breakage) -> bool {
    run(breakage, DispatchOrder::Sequential).as_deref() == Some(GOLDEN)
}

/// The property the duplicate-Prepare test checks through `progressCounter`: every worker did
/// the work of the sound run (for an agent, ticks and draws are those of the exact clock).
fn does_the_work_of_the_exact_clock(breakage: &Breakage) -> bool {
    let work = |b: &Breakage| {
        let mut setup = Setup::new(STEPS);
        setup.registry = registry(b);
        let (result, _) = setup.run(RunHooks::default());
        result.ok().map(|o| {
            o.statuses
                .iter()
                .map(|(w, s)| (w.clone(), s.progress_counter))
                .collect::<Vec<_>>()
        })
    };
    let sound = work(&Breakage::Sound);
    sound.is_some() && work(breakage) == sound
}

const TWICE: [DispatchOrder; 2] = [DispatchOrder::Sequential, DispatchOrder::Sequential];
const ORDERS: [DispatchOrder; 2] = [DispatchOrder::Sequential, DispatchOrder::Reversed];

#[test]
fn the_sound_agent_keeps_every_determinism_property() {
    assert!(same_digest_every_run(&Breakage::Sound, &TWICE));
    assert!(same_digest_every_run(&Breakage::Sound, &ORDERS));
    assert!(keeps_the_golden_digest(&Breakage::Sound));
    assert!(does_the_work_of_the_exact_clock(&Breakage::Sound));
}

#[test]
fn a_hash_map_iteration_order_mutant_is_caught_by_two_runs() {
    assert!(!same_digest_every_run(&Breakage::HashOrder, &TWICE));
}

#[test]
fn a_wall_clock_mutant_is_caught_by_two_runs() {
    assert!(!same_digest_every_run(&Breakage::WallClock, &TWICE));
}

#[test]
fn a_dispatch_order_mutant_is_caught_by_the_dispatch_order_matrix() {
    let ticket = Breakage::DispatchTicket(Arc::new(AtomicU64::new(0)));
    // Deterministic in one order: only the matrix catches it.
    assert!(same_digest_every_run(&ticket, &TWICE));
    assert!(!same_digest_every_run(&ticket, &ORDERS));
}

#[test]
fn a_process_id_seed_mutant_is_caught_by_the_golden_digest() {
    // The same in every run of one process: only a pinned digest catches it.
    assert!(same_digest_every_run(&Breakage::ProcessId, &TWICE));
    assert!(!keeps_the_golden_digest(&Breakage::ProcessId));
}

#[test]
fn a_floating_point_remainder_mutant_is_caught_by_the_golden_digest() {
    let float = Breakage::FloatRemainder {
        elapsed_ticks: 0.0,
        ticks: 0,
    };
    // The same in every run, and its drift (49 ticks at step 3, one short) comes back by the end
    // (666 ticks after 40 steps): neither two runs nor the work counter catch it.
    assert!(same_digest_every_run(&float, &TWICE));
    assert!(does_the_work_of_the_exact_clock(&float));
    assert!(!keeps_the_golden_digest(&float));
}

/// The duplicate-Prepare fault of `failures.rs`: the first Prepare of step 3 stalls past the
/// attempt deadline, so the coordinator sends it again.
fn lost_prepare_reply(breakage: &Breakage) -> Setup {
    let mut setup = Setup::new(8).fault("fly-a", |f| {
        f.stall = Some((
            crate::point(Method::AgentPrepare, 3),
            std::time::Duration::from_millis(350),
        ));
    });
    setup.deadlines.attempt = std::time::Duration::from_millis(100);
    setup.deadlines.budget = std::time::Duration::from_secs(3);
    setup.registry = registry(breakage);
    setup
}

/// The shell answers a duplicate Prepare from its cache and its phase machine refuses a second
/// Prepare before a Commit, so a duplicate never reaches the model: the resampling mutant keeps
/// the clean digest and counts no duplicate. Were one to reach it, the mutant's work counter
/// (what the duplicate-Prepare test compares through `progressCounter`) moves.
#[test]
fn a_resampling_mutant_is_never_reached_by_a_duplicate_prepare_and_would_move_the_counter() {
    let duplicates = Arc::new(AtomicU64::new(0));
    let resample = Breakage::ResampleOnDuplicate {
        duplicates: Arc::clone(&duplicates),
        open: false,
    };
    let mut clean = Setup::new(8);
    clean.registry = registry(&resample);
    let (clean, _) = clean.run(RunHooks::default());
    let clean = clean.unwrap();
    let (faulted, _) = lost_prepare_reply(&resample).run(RunHooks::default());
    let faulted = faulted.unwrap();
    assert_eq!(faulted.run_digest, clean.run_digest);
    assert_eq!(duplicates.load(Ordering::SeqCst), 0);
    for (worker, status) in &faulted.statuses {
        assert_eq!(
            status.progress_counter, clean.statuses[worker].progress_counter,
            "{worker}"
        );
    }

    // The mutant handed a duplicate directly: its work counter moves, the sound agent's would not
    // be asked.
    let plan = crate::synthetic();
    let agent = &plan.agents[0];
    let setup = ModelSetup {
        agent_id: agent.agent_id.clone(),
        profile: plan
            .profiles
            .iter()
            .find(|p| p.id == agent.profile)
            .unwrap()
            .clone(),
        seed: agent.seed,
        worker_threads: 1,
    };
    let mut mutant = Mutant::new(&setup, resample).unwrap();
    let context = TypedValue {
        schema: flysim_component::schemas::action_context(),
        value: match json!({ "availableActions": ["idle", "press"] }) {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        },
    };
    let input = SensedInput {
        boundary: 0,
        views: Vec::new(),
        structured: None,
    };
    mutant.warm_up(&input, &context).unwrap();
    mutant.prepare(16, &[], &context).unwrap();
    let once = mutant.work();
    mutant.prepare(16, &[], &context).unwrap();
    assert!(
        mutant.work() > once,
        "a duplicate reaching the mutant moves its counter"
    );
    assert_eq!(duplicates.load(Ordering::SeqCst), 1);
}

/// A run's digest and every worker's `progressCounter`.
type RunSummary = (String, Vec<(String, u64)>);

/// A run of the sound agent under the lost-reply fault of [`lost_prepare_reply`], its worker
/// shell broken (`forward`: a duplicate Prepare also reaches the model) or real, on the local
/// lane or the bus; and the same run undisturbed. Returns (run digest, progress counters) of each.
fn under_a_duplicate_prepare(forward: bool, local_lane: bool) -> (RunSummary, RunSummary) {
    let summary = |setup: Setup| {
        let (result, _) = setup.run(RunHooks::default());
        let outcome = result.unwrap();
        let counters = outcome
            .statuses
            .iter()
            .map(|(w, s)| (w.to_string(), s.progress_counter.get()))
            .collect();
        (outcome.run_digest.hex(), counters)
    };
    let mut clean = Setup::new(STEPS);
    clean.registry = registry(&Breakage::Sound);
    clean.local_lane = local_lane;
    let mut faulted = lost_prepare_reply(&Breakage::Sound).fault("fly-a", |f| {
        f.forward_duplicate_prepares = forward;
    });
    // Enough steps after the duplicate (at step 3) for a redrawn stream to change a decision.
    faulted.steps = STEPS;
    faulted.local_lane = local_lane;
    (summary(clean), summary(faulted))
}

/// The broken shell (a test-only fault of the worker) forwards the duplicate Prepare of the
/// lost-reply fault to the sound agent, which draws its stream again: the duplicate-Prepare
/// property (the clean run's digest and work counters) fails for it, on the local lane and on
/// the bus, and holds for the real shell, which answers the duplicate from its cache.
#[test]
fn a_shell_that_forwards_a_duplicate_prepare_is_caught_by_the_duplicate_prepare_property() {
    for local_lane in [true, false] {
        let (clean, real) = under_a_duplicate_prepare(false, local_lane);
        assert_eq!(real, clean, "the real shell, local lane {local_lane}");
        let (clean, broken) = under_a_duplicate_prepare(true, local_lane);
        let counter = |run: &RunSummary| run.1.iter().find(|(w, _)| w == "fly-a").map(|(_, c)| *c);
        assert!(
            counter(&broken) > counter(&clean),
            "fly-a did more work: {broken:?} against {clean:?}"
        );
        assert_ne!(
            broken.0, clean.0,
            "the redrawn stream changes a decision, local lane {local_lane}"
        );
    }
}

/// The property of `a_restored_session_continues_exactly_in_every_mode`: restoring the
/// checkpoint at boundary 10 of a 30-step run on fresh workers gives exactly the uninterrupted
/// run's rows after it.
fn a_restore_continues_exactly(breakage: &Breakage) -> bool {
    let run = |from: Option<flysim_session::ResumeFrom>| {
        let setup = Setup {
            registry: registry(breakage),
            ..Setup::new(30)
        };
        let mut options = setup.options();
        options.checkpoint_every = Some(10);
        options.resume = from;
        let mut sink = crate::checkpoint::Collect::default();
        let result = flysim_session::run_plan_into(
            &crate::synthetic(),
            &options,
            &setup.registry,
            RunHooks::default(),
            &mut sink,
        );
        result.ok().map(|_| sink)
    };
    let behaviour = |rows: &[flysim_types::trace::TransitionTrace]| -> Vec<_> {
        rows.iter().map(|r| r.behaviour.clone()).collect()
    };
    let Some(reference) = run(None) else {
        return false;
    };
    let Some((10, _, envelope)) = reference.checkpoints.first().cloned() else {
        return false;
    };
    let from = flysim_session::ResumeFrom {
        envelope,
        prior: behaviour(&reference.rows[..=10]),
    };
    run(Some(from))
        .is_some_and(|resumed| behaviour(&resumed.rows) == behaviour(&reference.rows[11..]))
}

#[test]
fn a_redraw_after_restore_mutant_is_caught_by_the_restore_property() {
    assert!(a_restore_continues_exactly(&Breakage::Sound));
    let redraw = Breakage::RedrawAfterRestore { restored: false };
    // Deterministic without a restore: two runs do not catch it.
    assert!(same_digest_every_run(&redraw, &TWICE));
    assert!(!a_restore_continues_exactly(&redraw));
}
