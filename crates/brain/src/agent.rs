//! The LIF brain as a session agent: [`LifAgent`] implements the worker's [`AgentModel`] over
//! [`Brain`].
//!
//! - the profile document and its connectome arrive as bytes (the profile's two assets, whose
//!   digests the plan pins); [`LifAgent::from_assets`] builds the brain from them;
//! - warm-up installs the first frame, warms up with learning off and calibrates the readout;
//! - Prepare runs the ticks the shell's rational clock grants and decodes the readout's button
//!   mask into one semantic action (`action-decision-v1`): the first of `up`, `down`, `left`,
//!   `right`, `a`, `b`, `start`, `select` that is both pressed and offered by the decision
//!   context, else `idle`. The context only masks; it never changes the readout;
//! - Commit installs the next frame (the first view's pixels), applies the task's stimuli in
//!   order and reinforces once with the rewards' sum. It runs no tick;
//! - capture/restore are the brain's exact snapshots.

use std::sync::Arc;

use flysim_types::workers::{AgentGraph, AgentTelemetry, Reward, Stimulus};
use flysim_types::{RationalNs, TypedValue};
use flysim_worker::model::{AgentModel, ModelError, SensedInput, Sensing};
use flysim_worker::schemas::{IDLE, action_decision};
use serde_json::{Value, json};

use crate::format::decode;
use crate::model::Brain;
use crate::profile::Profile;
use crate::retina::Frame;

/// The actions a decoded button may stand for, in the readout's preference order.
const ACTIONS: [&str; 8] = ["up", "down", "left", "right", "a", "b", "start", "select"];

/// A LIF brain behind the agent-model interface.
#[derive(Debug)]
pub struct LifAgent {
    brain: Brain,
    width: u32,
    height: u32,
    staged: Option<Vec<u8>>,
}

fn invalid(e: impl std::fmt::Display) -> ModelError {
    ModelError::Invalid(e.to_string())
}

impl LifAgent {
    /// Builds the agent from its profile document and connectome file.
    ///
    /// # Errors
    ///
    /// [`ModelError::Invalid`] when either is refused or they do not belong together.
    pub fn from_assets(
        profile: &[u8],
        connectome: &[u8],
        seed: i32,
        worker_threads: u32,
    ) -> Result<Self, ModelError> {
        let profile = Profile::parse(profile).map_err(invalid)?;
        let connectome = Arc::new(decode(connectome).map_err(invalid)?);
        let (width, height) = (profile.retina.width, profile.retina.height);
        let brain = Brain::new(profile, connectome, seed, worker_threads).map_err(invalid)?;
        Ok(Self {
            brain,
            width,
            height,
            staged: None,
        })
    }

    /// The brain, for tests and diagnostics.
    #[must_use]
    pub fn brain(&self) -> &Brain {
        &self.brain
    }

    fn frame<'a>(&self, input: &'a SensedInput) -> Result<Option<Frame<'a>>, ModelError> {
        let Some(view) = input.views.first() else {
            return Ok(None);
        };
        let pixels = view
            .pixels
            .as_deref()
            .ok_or_else(|| invalid("the LIF agent senses pixels; the view carried none"))?;
        Ok(Some(Frame {
            width: self.width,
            height: self.height,
            rgba: pixels,
        }))
    }
}

/// The actions a decision context offers (all of them when it names none).
fn offered(context: &TypedValue) -> Vec<String> {
    context
        .value
        .get("availableActions")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| ACTIONS.iter().map(|a| (*a).to_owned()).collect())
}

impl AgentModel for LifAgent {
    fn tick_duration(&self) -> RationalNs {
        Brain::tick_duration()
    }

    fn sensing(&self) -> Sensing {
        Sensing::Pixels
    }

    fn warm_up(&mut self, input: &SensedInput, _context: &TypedValue) -> Result<u64, ModelError> {
        let frame = self.frame(input)?;
        self.brain
            .commit(frame.as_ref(), &[], &[])
            .map_err(invalid)?;
        Ok(self.brain.warm_up_and_calibrate())
    }

    fn prepare(
        &mut self,
        ticks: u64,
        stimuli: &[Stimulus],
        context: &TypedValue,
    ) -> Result<TypedValue, ModelError> {
        let decision = self
            .brain
            .prepare(ticks, stimuli)
            .map_err(|e| ModelError::Fault(e.to_string()))?;
        let offered = offered(context);
        let pressed: Vec<&str> = decision.pressed().into_iter().map(|b| b.name()).collect();
        let action = ACTIONS
            .iter()
            .find(|a| pressed.contains(a) && offered.iter().any(|o| o == *a))
            .copied()
            .unwrap_or(IDLE);
        Ok(TypedValue {
            schema: action_decision(),
            value: json!({"action": action})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        })
    }

    fn commit(
        &mut self,
        input: &SensedInput,
        stimuli: &[Stimulus],
        rewards: &[Reward],
    ) -> Result<(), ModelError> {
        let frame = self.frame(input)?;
        self.brain
            .commit(frame.as_ref(), stimuli, rewards)
            .map_err(invalid)
    }

    fn telemetry(&self) -> AgentTelemetry {
        self.brain.telemetry()
    }

    fn graph(&self) -> AgentGraph {
        self.brain.graph()
    }

    fn work(&self) -> u64 {
        self.brain.mutations()
    }

    fn capture(&self) -> Result<Vec<u8>, ModelError> {
        Ok(self.brain.capture())
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), ModelError> {
        // `Brain::restore` checks a snapshot completely before it changes anything, so staging
        // keeps the bytes and activation installs them or refuses with the brain untouched.
        if payload.is_empty() {
            return Err(ModelError::Incompatible("an empty brain snapshot".into()));
        }
        self.staged = Some(payload.to_vec());
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), ModelError> {
        let payload = self
            .staged
            .take()
            .ok_or_else(|| invalid("no staged state to activate"))?;
        self.brain
            .restore(&payload)
            .map_err(|e| ModelError::Incompatible(e.to_string()))
    }
}
