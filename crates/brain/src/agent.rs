//! The LIF brain as a session agent: [`LifAgent`] implements the worker's [`AgentModel`] over
//! [`Brain`].
//!
//! - the profile document and its connectome arrive as bytes (the profile's two assets, whose
//!   digests the plan pins); [`LifAgent::from_assets`] builds the brain from them;
//! - warm-up installs the first frame, warms up with learning off and calibrates the readout;
//! - Prepare runs the ticks the shell's rational clock grants and decodes the readout's button
//!   mask into one semantic action (`action-decision-v1`). Each readout binding names the
//!   action its button stands for (`action`, by default the button's own name, so `up` means
//!   `up` on a Game Boy); the decision is the action of the first pressed button, in button
//!   order (`up`, `down`, `left`, `right`, `a`, `b`, `start`, `select`), that the decision
//!   context offers, else `idle`. A context without `availableActions` offers every bound
//!   action. The context only masks; it never changes the readout;
//! - the frame is the first view's pixels: all of them (retina layout `frame`), or, with
//!   `port-bands`, the band of `height` rows that belongs to the agent's port (band `i` of the
//!   view for the `i`-th port of the environment, [`LifAgent::with_port`]);
//! - a recording agent ([`LifAgent::recording_spikes`], for a spike raster) keeps the spikes
//!   its Prepare's ticks fired ([`LifAgent::last_spikes`]); recording them changes nothing the
//!   brain computes, and an agent that does not record does no work for it;
//! - Commit installs the next frame, applies the task's stimuli in order and reinforces once
//!   with the rewards' sum. It runs no tick;
//! - capture/restore are the brain's exact snapshots: staging reads and checks a snapshot
//!   completely ([`Brain::check_snapshot`]), so a bad one is refused there, with its code;
//!   activation installs what staging checked;
//! - [`SPEC`] declares what a composition may set on a `lif` profile: no `parameter` (every
//!   number of the brain is in its `brain-profile` document), and the document that declares
//!   its retina.

use std::sync::Arc;

use flysim_component::model::{AgentModel, ModelError, SensedInput, Sensing};
use flysim_component::schemas::{IDLE, action_decision};
use flysim_types::plan::ModelKind;
use flysim_types::spec::ModelSpec;
use flysim_types::workers::{AgentGraph, AgentTelemetry, Reward, Stimulus};
use flysim_types::{RationalNs, TypedValue};
use serde_json::{Value, json};

use crate::error::BrainError;
use crate::format::decode;
use crate::model::Brain;
use crate::profile::{Button, Profile, RetinaLayout};
use crate::retina::Frame;
use crate::snapshot::CheckedSnapshot;

/// The asset format of a LIF profile's brain-profile document: its kernel, roles, retina,
/// readout and learning (`docs/brain.md`).
pub const PROFILE_FORMAT: &str = "brain-profile";
/// The asset format of a LIF profile's connectome file.
pub const CONNECTOME_FORMAT: &str = "flycsr";

/// What the LIF model declares about the profiles that run it: it reads no composition-level
/// `parameter` ([`LifAgent::from_assets`] is built from the profile's two assets, its seed and
/// its threads only), so a composition's resolver refuses every one; its retina is declared in
/// the `brain-profile` document.
pub const SPEC: ModelSpec = ModelSpec {
    kind: ModelKind::Lif,
    parameters: Some(&[]),
    retina: Some(PROFILE_FORMAT),
};

/// A LIF brain behind the agent-model interface.
#[derive(Debug)]
pub struct LifAgent {
    brain: Brain,
    width: u32,
    height: u32,
    layout: RetinaLayout,
    /// The agent's port, as an index into the environment's ports (for `port-bands`).
    port: Option<u32>,
    /// The action each button stands for, by button index; `None` for an unbound button.
    actions: [Option<String>; 8],
    /// A snapshot staging checked, for activation to install.
    staged: Option<CheckedSnapshot>,
    /// Whether Prepare records the spikes it fires.
    recording: bool,
    /// The spikes of the last Prepare as `(brain tick, neuron)`, when it recorded them.
    last_spikes: Option<Vec<(u64, u32)>>,
}

fn invalid(e: impl std::fmt::Display) -> ModelError {
    ModelError::Invalid(e.to_string())
}

/// A refused restore, its message ending with its code: `... (FS0730)`.
fn incompatible(e: &BrainError) -> ModelError {
    ModelError::Incompatible(format!("{e} ({})", e.code_str()))
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
        let layout = profile.retina.layout;
        let mut actions: [Option<String>; 8] = Default::default();
        for b in &profile.readout.bindings {
            actions[b.button as usize] = Some(b.action().to_owned());
        }
        let brain = Brain::new(profile, connectome, seed, worker_threads).map_err(invalid)?;
        Ok(Self {
            brain,
            width,
            height,
            layout,
            port: None,
            actions,
            staged: None,
            recording: false,
            last_spikes: None,
        })
    }

    /// Tells the agent its port: the index of its port among the environment's ports, which is
    /// the band a `port-bands` retina reads (a `frame` retina ignores it).
    #[must_use]
    pub fn with_port(mut self, index: u32) -> Self {
        self.port = Some(index);
        self
    }

    /// The brain, for tests and diagnostics.
    #[must_use]
    pub fn brain(&self) -> &Brain {
        &self.brain
    }

    /// The agent, recording the spikes of each Prepare ([`LifAgent::last_spikes`]).
    #[must_use]
    pub fn recording_spikes(mut self) -> Self {
        self.recording = true;
        self
    }

    /// The spikes the ticks of the last Prepare fired, as `(brain tick, neuron index)` in tick
    /// order and, within a tick, ascending: `None` for an agent that does not record, before the
    /// first Prepare, and after one that applied pre-step stimuli (those are applied before its
    /// ticks, which this recording cannot separate from them, so such a Prepare runs
    /// unrecorded).
    #[must_use]
    pub fn last_spikes(&self) -> Option<&[(u64, u32)]> {
        self.last_spikes.as_deref()
    }

    fn frame<'a>(&self, input: &'a SensedInput) -> Result<Option<Frame<'a>>, ModelError> {
        let Some(view) = input.views.first() else {
            return Ok(None);
        };
        let pixels = view
            .pixels
            .as_deref()
            .ok_or_else(|| invalid("the LIF agent senses pixels; the view carried none"))?;
        let rgba = match self.layout {
            RetinaLayout::Frame => pixels,
            RetinaLayout::PortBands => {
                let port = self.port.ok_or_else(|| {
                    invalid("the profile's retina reads its port's band of the view (`port-bands`), and the agent was not told its port")
                })?;
                let band = self.width as usize * self.height as usize * 4;
                let start = port as usize * band;
                pixels
                    .get(start..start + band)
                    .filter(|_| pixels.len() % band == 0)
                    .ok_or_else(|| {
                        invalid(format!(
                            "the view holds {} bytes, not whole bands of {}x{} RGBA8 pixels with one for port index {port}",
                            pixels.len(),
                            self.width,
                            self.height
                        ))
                    })?
            }
        };
        Ok(Some(Frame {
            width: self.width,
            height: self.height,
            rgba,
        }))
    }

    /// The decision for a readout's pressed buttons: the action of the first pressed button (in
    /// button order) that `context` offers, else `idle`.
    fn decide(&self, pressed: &[Button], context: &TypedValue) -> &str {
        let offered: Option<Vec<&str>> = context
            .value
            .get("availableActions")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect());
        pressed
            .iter()
            .filter_map(|b| self.actions[*b as usize].as_deref())
            .find(|a| offered.as_ref().is_none_or(|o| o.contains(a)))
            .unwrap_or(IDLE)
    }
}

impl AgentModel for LifAgent {
    fn tick_duration(&self) -> RationalNs {
        self.brain.tick_duration()
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
        let decision = if self.recording && stimuli.is_empty() {
            // Exactly `prepare(ticks, [])`: no stimulus to apply, the ticks (recorded), a decode.
            let mut spikes = self.last_spikes.take().unwrap_or_default();
            spikes.clear();
            let mut tick = self.brain.counters().ticks;
            self.brain.run_recording(ticks, &mut |fired| {
                spikes.extend(fired.iter().map(|&n| (tick, n)));
                tick += 1;
            });
            self.last_spikes = Some(spikes);
            self.brain.prepare(0, &[])
        } else {
            self.last_spikes = None;
            self.brain.prepare(ticks, stimuli)
        }
        .map_err(|e| ModelError::Fault(e.to_string()))?;
        let action = self.decide(&decision.pressed(), context);
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
        // Everything is read and checked here; a refusal leaves the brain and what was staged
        // before as they were.
        let checked = self
            .brain
            .check_snapshot(payload)
            .map_err(|e| incompatible(&e))?;
        self.staged = Some(checked);
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), ModelError> {
        let checked = self
            .staged
            .take()
            .ok_or_else(|| invalid("no staged state to activate"))?;
        self.brain
            .install_snapshot(checked)
            .map_err(|e| incompatible(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flysim_component::model::SensedView;
    use flysim_types::{Id, U64};

    fn fixture(name: &str) -> Vec<u8> {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/profiles/arena-toy-v1/"
        );
        std::fs::read(format!("{dir}{name}")).expect("the arena-toy fixture")
    }

    #[test]
    fn prepare_records_the_spikes_it_fired_and_computes_what_the_brain_alone_does() {
        let (profile, connectome) = (fixture("arena-toy-v1.json"), fixture("arena-toy-v1.flycsr"));
        let mut agent = LifAgent::from_assets(&profile, &connectome, 7, 1)
            .expect("the agent")
            .recording_spikes();
        let (w, h) = (agent.width as usize, agent.height as usize);
        let pixels: Vec<u8> = (0..w * h * 4).map(|i| (i * 37 % 251) as u8).collect();
        let input = SensedInput {
            boundary: 0,
            views: vec![SensedView {
                view_id: Id::parse("screen").expect("an id"),
                produced_step: U64(0),
                pixels: Some(pixels.clone()),
            }],
            structured: None,
        };
        let context = TypedValue {
            schema: flysim_component::schemas::action_context(),
            value: serde_json::Map::new(),
        };
        assert!(agent.last_spikes().is_none());
        agent.warm_up(&input, &context).expect("warm-up");
        let (before, first_tick) = (
            agent.brain().activity().spikes,
            agent.brain().counters().ticks,
        );
        agent.prepare(400, &[], &context).expect("prepare");
        let spikes = agent.last_spikes().expect("recorded").to_vec();
        assert_eq!(
            spikes.len() as u64,
            agent.brain().activity().spikes - before,
            "every spike of the Prepare, once"
        );
        assert!(!spikes.is_empty());
        assert!(
            spikes.windows(2).all(|p| p[0] < p[1]),
            "tick order, ascending"
        );
        assert!(
            spikes
                .iter()
                .all(|&(t, n)| (first_tick..first_tick + 400).contains(&t)
                    && n < agent.brain().connectome().neurons())
        );
        // The brain alone, prepared the usual way, ends in the same state.
        let mut brain = Brain::new(
            Profile::parse(&profile).expect("profile"),
            Arc::new(decode(&connectome).expect("connectome")),
            7,
            1,
        )
        .expect("the brain");
        let frame = Frame {
            width: w as u32,
            height: h as u32,
            rgba: &pixels,
        };
        brain.commit(Some(&frame), &[], &[]).expect("commit");
        brain.warm_up_and_calibrate();
        brain.prepare(400, &[]).expect("prepare");
        assert_eq!(brain.capture(), agent.capture().expect("capture"));
        // An agent that does not record keeps nothing and ends in the same state.
        let mut plain = LifAgent::from_assets(&profile, &connectome, 7, 1).expect("the agent");
        plain.warm_up(&input, &context).expect("warm-up");
        plain.prepare(400, &[], &context).expect("prepare");
        assert!(plain.last_spikes().is_none());
        assert_eq!(
            plain.capture().expect("capture"),
            agent.capture().expect("capture")
        );
    }
}
