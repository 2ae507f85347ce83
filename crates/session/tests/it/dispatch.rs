//! Concurrent dispatch puts every agent's call in flight at once: each agent's Prepare waits,
//! inside the model, for the other agent's Prepare of the same step to arrive (thread mode, one
//! thread per worker). Dispatched together, both arrive and neither waits out its bound;
//! dispatched one after another, each waits alone until the bound, the second only arriving
//! after the first has given up (the control, so the test can fail).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use flysim_arena::synthetic::SyntheticAgent;
use flysim_component::model::{AgentModel, ModelError, ModelSetup, SensedInput, Sensing};
use flysim_session::RunHooks;
use flysim_types::plan::{ModelKind, RunMode};
use flysim_types::trace::DispatchOrder;
use flysim_types::workers::{AgentGraph, AgentTelemetry, Reward, Stimulus};
use flysim_types::{RationalNs, TypedValue};

use crate::{Setup, arena_registry};

/// Agents in `synthetic-agents.kdl`.
const AGENTS: usize = 2;
/// How long an arriving Prepare waits for the other one: under concurrent dispatch, long enough
/// for a loaded machine to start the other worker's thread (and within the calls' 2 s attempt
/// deadline); under sequential dispatch, where every wait runs out, short.
const TOGETHER: Duration = Duration::from_millis(1500);
const IN_TURN: Duration = Duration::from_millis(200);
const STEPS: u64 = 4;

/// Where the agents' Prepares meet: how many of the current meeting have arrived, which meeting
/// it is, and how many waits ran out; and how long one waits.
struct Meeting {
    state: Mutex<(usize, u64, u64)>,
    arrived: Condvar,
    bound: Duration,
}

impl Meeting {
    /// Arrives at the meeting; returns when every agent has, or when the bound runs out.
    fn meet(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.0 += 1;
        let meeting = state.1;
        if state.0 == AGENTS {
            *state = (0, meeting + 1, state.2);
            self.arrived.notify_all();
            return;
        }
        let (mut state, waited) = self
            .arrived
            .wait_timeout_while(state, self.bound, |s| s.1 == meeting)
            .unwrap_or_else(PoisonError::into_inner);
        if waited.timed_out() {
            // Alone until the bound: this meeting is over, the late one starts the next.
            *state = (0, meeting + 1, state.2 + 1);
        }
    }

    fn missed(&self) -> u64 {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).2
    }
}

/// The synthetic agent, meeting the other agent in every Prepare (what the run asks of a model
/// is delegated to it).
struct Meeter {
    inner: SyntheticAgent,
    meeting: Arc<Meeting>,
}

impl AgentModel for Meeter {
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
        self.meeting.meet();
        self.inner.prepare(ticks, stimuli, context)
    }

    fn commit(
        &mut self,
        input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError> {
        self.inner.commit(input, stimuli, rewards)
    }

    fn telemetry(&self) -> AgentTelemetry {
        self.inner.telemetry()
    }

    fn graph(&self) -> AgentGraph {
        self.inner.graph()
    }
    // The run takes no checkpoint and reads no work counter: the trait's defaults serve.
}

/// Runs the synthetic composition in thread mode with `dispatch`; the run digest and how many
/// Prepares waited out the bound.
fn run(dispatch: DispatchOrder, bound: Duration) -> (String, u64) {
    let meeting = Arc::new(Meeting {
        state: Mutex::default(),
        arrived: Condvar::new(),
        bound,
    });
    let mut setup = Setup::new(STEPS);
    setup.mode = RunMode::Thread;
    setup.dispatch = dispatch;
    let shared = Arc::clone(&meeting);
    setup.registry = arena_registry().with_agent(
        ModelKind::Synthetic,
        Arc::new(move |setup: &ModelSetup| {
            Ok(Box::new(Meeter {
                inner: SyntheticAgent::new(setup)?,
                meeting: Arc::clone(&shared),
            }))
        }),
    );
    let (result, _) = setup.run(RunHooks::default());
    let outcome = result.unwrap_or_else(|e| panic!("the {dispatch:?} run failed: {e:?}"));
    (outcome.run_digest.hex(), meeting.missed())
}

#[test]
fn concurrent_dispatch_has_every_agents_prepare_in_flight_at_once() {
    let (together, missed_together) = run(DispatchOrder::Concurrent, TOGETHER);
    let (in_turn, missed_in_turn) = run(DispatchOrder::Sequential, IN_TURN);
    assert_eq!(
        missed_together, 0,
        "a Prepare waited alone under concurrent dispatch"
    );
    // One after another, every Prepare of every step waits alone.
    assert_eq!(missed_in_turn, AGENTS as u64 * STEPS);
    // Waiting changes when, never what: both orders give one run.
    assert_eq!(together, in_turn);
}
