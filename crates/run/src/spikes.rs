//! A LIF agent's spikes, step by step, for a regeneration that draws them: the registry's LIF
//! factory is wrapped so that each agent it builds hands the spikes of every Prepare to a sink.
//! The wrapper forwards every call unchanged (recording is read-only), so the re-executed run
//! is the recorded one, which the regeneration checks row by row.
//!
//! It knows nothing of what the sink does with the spikes (draws a raster) and nothing of the
//! brain's dynamics; it reads the agent's `last_spikes`.

use std::sync::Arc;

use flysim_brain::agent::LifAgent;
use flysim_component::model::{AgentModel, ModelError, ModelSetup, SensedInput, Sensing};
use flysim_session::Registry;
use flysim_types::plan::{LaunchPlan, ModelKind};
use flysim_types::workers::{AgentGraph, AgentTelemetry, Reward, Stimulus};
use flysim_types::{Id, RationalNs, TypedValue};

use crate::components::lif_agent;
use crate::content::ContentSource;

/// The spikes one agent fired in one step.
#[derive(Debug, Clone, Copy)]
pub struct SpikeStep<'a> {
    /// The agent.
    pub agent_id: &'a Id,
    /// The boundary the step ends at (its Prepare is the agent's `boundary`-th).
    pub boundary: u64,
    /// `(brain tick, neuron index)` in tick order, ascending within a tick; `None` when the
    /// step's Prepare applied pre-step stimuli, which the agent does not record.
    pub spikes: Option<&'a [(u64, u32)]>,
}

/// Where the spikes of each step go.
pub type SpikeSink = dyn Fn(&SpikeStep<'_>) + Send + Sync;

/// A LIF agent that hands each Prepare's spikes to a sink and is otherwise the agent.
struct SpikeRecorder {
    agent_id: Id,
    agent: LifAgent,
    prepares: u64,
    sink: Arc<SpikeSink>,
}

impl AgentModel for SpikeRecorder {
    fn tick_duration(&self) -> RationalNs {
        self.agent.tick_duration()
    }

    fn sensing(&self) -> Sensing {
        self.agent.sensing()
    }

    fn quick(&self) -> bool {
        self.agent.quick()
    }

    fn warm_up(&mut self, input: &SensedInput, context: &TypedValue) -> Result<u64, ModelError> {
        self.agent.warm_up(input, context)
    }

    fn prepare(
        &mut self,
        ticks: u64,
        stimuli: &[Stimulus],
        context: &TypedValue,
    ) -> Result<TypedValue, ModelError> {
        let decision = self.agent.prepare(ticks, stimuli, context)?;
        self.prepares += 1;
        (self.sink)(&SpikeStep {
            agent_id: &self.agent_id,
            boundary: self.prepares,
            spikes: self.agent.last_spikes(),
        });
        Ok(decision)
    }

    fn commit(
        &mut self,
        input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError> {
        self.agent.commit(input, stimuli, rewards)
    }

    fn telemetry(&self) -> AgentTelemetry {
        self.agent.telemetry()
    }

    fn graph(&self) -> AgentGraph {
        self.agent.graph()
    }

    fn work(&self) -> u64 {
        self.agent.work()
    }

    fn capture(&self) -> Result<Vec<u8>, ModelError> {
        self.agent.capture()
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), ModelError> {
        self.agent.stage_restore(payload)
    }

    fn activate_restore(&mut self) -> Result<(), ModelError> {
        self.agent.activate_restore()
    }
}

/// `registry` with its LIF model replaced by the same agents, each handing its spikes to `sink`.
pub(crate) fn recording(
    registry: Registry,
    plan: &LaunchPlan,
    content: &ContentSource,
    sink: Arc<SpikeSink>,
) -> Registry {
    let (plan, content) = (plan.clone(), content.clone());
    registry.with_agent(
        ModelKind::Lif,
        Arc::new(move |setup: &ModelSetup| {
            Ok(Box::new(SpikeRecorder {
                agent_id: setup.agent_id.clone(),
                agent: lif_agent(&plan, &content, setup)?.recording_spikes(),
                prepares: 0,
                sink: Arc::clone(&sink),
            }))
        }),
    )
}
