//! The environment methods of workers-v1 §3 (contracts §6.4): controller schemas and controls,
//! the environment descriptor, world observations, `Environment.Initialize` and
//! `Environment.Advance`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::applied::{AppliedControls, SharedControls};
use super::common::{AssetRef, AudioDescriptor, AudioRef, ViewDescriptor, ViewRef, view_list};
use super::{Nullable, count_between, nullable, positive};
use crate::error::ContractError;
use crate::limits::{
    MAX_AUDIO_STREAMS, MAX_AXES, MAX_BUTTONS, MAX_ENGINE_FRAME_LENGTH, MAX_PORTS, MAX_VIEWS,
};
use crate::payload::{Payload, check};
use crate::rational::RationalNs;
use crate::scalar::{Digest, Id, SchemaRef, TypedValue, U64};

/// The range of a controller axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AxisRange {
    /// `[-1, 1]`, inclusive.
    Bipolar,
    /// `[0, 1]`, inclusive.
    Unit,
}

impl AxisRange {
    /// The inclusive bounds of the range.
    #[must_use]
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Self::Bipolar => (-1.0, 1.0),
            Self::Unit => (0.0, 1.0),
        }
    }

    /// Whether `v` is finite and inside the range.
    #[must_use]
    pub fn contains(self, v: f64) -> bool {
        let (low, high) = self.bounds();
        v.is_finite() && low <= v && v <= high
    }

    fn name(self) -> &'static str {
        match self {
            Self::Bipolar => "bipolar [-1, 1]",
            Self::Unit => "unit [0, 1]",
        }
    }
}

/// One declared controller axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AxisDecl {
    /// The axis id, unique within its schema.
    pub id: Id,
    /// Its range.
    pub range: AxisRange,
    /// Its rest value; inside the range.
    pub neutral: f64,
}

/// The controls one port accepts, in a fixed order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerSchema {
    /// The registered schema of the controller.
    pub schema: SchemaRef,
    /// Button ids: at most 32, unique, in fixed order.
    #[schemars(length(max = MAX_BUTTONS))]
    pub buttons: Vec<Id>,
    /// Axes: at most 16, unique ids, in fixed order.
    #[schemars(length(max = MAX_AXES))]
    pub axes: Vec<AxisDecl>,
}

impl Payload for ControllerSchema {
    fn validate(&self) -> Result<(), ContractError> {
        self.schema.validate().map_err(|e| e.under("schema"))?;
        check::at_most(&self.buttons, MAX_BUTTONS, "buttons", "buttons")?;
        check::unique_by(&self.buttons, |b| b, "buttons", "button")?;
        check::at_most(&self.axes, MAX_AXES, "axes", "axes")?;
        check::unique_by(&self.axes, |a| &a.id, "axes", "axis")?;
        check::each(&self.axes, "axes", |axis| {
            check::finite(axis.neutral, "neutral")?;
            if !axis.range.contains(axis.neutral) {
                return Err(ContractError::rule(
                    "neutral",
                    format!(
                        "an axis neutral must lie in its {} range, found {}",
                        axis.range.name(),
                        axis.neutral
                    ),
                ));
            }
            Ok(())
        })
    }
}

/// The state of one button in a control.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ButtonState {
    /// The declared button.
    pub id: Id,
    /// Whether it is held.
    pub down: bool,
}

serialize_in_key_order!(ButtonState { "down" => down, "id" => id });

/// The value of one axis in a control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AxisValue {
    /// The declared axis.
    pub id: Id,
    /// Its value: finite and inside the declared range, never clamped.
    pub value: f64,
}

/// The complete controller state requested for one port for one step.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PortControl {
    /// The port.
    pub port_id: Id,
    /// Every declared button, in schema order.
    #[schemars(length(max = MAX_BUTTONS))]
    pub buttons: Vec<ButtonState>,
    /// Every declared axis, in schema order.
    #[schemars(length(max = MAX_AXES))]
    pub axes: Vec<AxisValue>,
}

serialize_in_key_order!(PortControl {
    "axes" => axes,
    "buttons" => buttons,
    "portId" => port_id,
});

impl Payload for PortControl {
    fn validate(&self) -> Result<(), ContractError> {
        check::at_most(&self.buttons, MAX_BUTTONS, "buttons", "buttons")?;
        check::unique_by(&self.buttons, |b| &b.id, "buttons", "button")?;
        check::at_most(&self.axes, MAX_AXES, "axes", "axes")?;
        check::unique_by(&self.axes, |a| &a.id, "axes", "axis")?;
        check::each(&self.axes, "axes", |a| check::finite(a.value, "value"))
    }
}

impl PortControl {
    /// Checks this control against its port's controller schema: every declared button and
    /// axis exactly once, in schema order, no extras, and every axis value inside its range.
    /// An out-of-range value is refused, never clamped.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field of this control (e.g. `axes[1].value`).
    pub fn validate_against(&self, schema: &ControllerSchema) -> Result<(), ContractError> {
        self.validate()?;
        self.matches_schema(schema)
    }

    /// The checks of [`validate_against`](Self::validate_against) that need the schema, for a
    /// control already [validated](Payload::validate).
    fn matches_schema(&self, schema: &ControllerSchema) -> Result<(), ContractError> {
        same_order(
            self.buttons.iter().map(|b| &b.id),
            &schema.buttons,
            "buttons",
            "button",
        )?;
        same_order(
            self.axes.iter().map(|a| &a.id),
            schema.axes.iter().map(|a| &a.id),
            "axes",
            "axis",
        )?;
        for (i, (value, decl)) in self.axes.iter().zip(&schema.axes).enumerate() {
            if !decl.range.contains(value.value) {
                return Err(ContractError::rule(
                    format!("axes[{i}].value"),
                    format!(
                        "axis `{}` must lie in its {} range and is never clamped, found {}",
                        decl.id,
                        decl.range.name(),
                        value.value
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Refuses ids that are not exactly `declared`, in order, naming the first difference at
/// `path[i].id` (or `path` for an omission).
fn same_order<'a>(
    found: impl IntoIterator<Item = &'a Id>,
    declared: impl IntoIterator<Item = &'a Id>,
    path: &str,
    what: &str,
) -> Result<(), ContractError> {
    let mut found = found.into_iter();
    let mut declared = declared.into_iter();
    let mut i = 0;
    loop {
        match (found.next(), declared.next()) {
            (None, None) => return Ok(()),
            (Some(f), Some(d)) if f == d => {}
            (Some(f), Some(d)) => {
                return Err(ContractError::rule(
                    format!("{path}[{i}].id"),
                    format!(
                        "every declared {what} must appear once, in declared order: expected `{d}`, found `{f}`"
                    ),
                ));
            }
            (None, Some(d)) => {
                return Err(ContractError::rule(
                    path,
                    format!(
                        "every declared {what} must appear once, in declared order: `{d}` is missing"
                    ),
                ));
            }
            (Some(f), None) => {
                return Err(ContractError::rule(
                    format!("{path}[{i}].id"),
                    format!("only declared {what}s may appear: `{f}` is not declared"),
                ));
            }
        }
        i += 1;
    }
}

/// One controller port of an environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PortDescriptor {
    /// The port, unique within its descriptor.
    pub port_id: Id,
    /// The controls it accepts.
    pub controls: ControllerSchema,
}

/// How an environment recovers from failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// It captures and restores exact checkpoints.
    ExactCheckpoint,
    /// It can only restart the episode.
    EpisodeRestart,
}

/// What an environment asserts about repeatability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Determinism {
    /// Tested repeatability under the pinned build and configuration.
    FixedBuild,
    /// No repeatability claim; cannot back an exact-replay production composition.
    Unverified,
}

/// The fixed identity and shape of an initialised environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvironmentDescriptor {
    /// The backend build.
    pub backend_digest: Digest,
    /// The game content.
    pub content_digest: Digest,
    /// The effective configuration.
    pub configuration_digest: Digest,
    /// One framework step of world time; fixed and positive.
    pub step_duration: RationalNs,
    /// Controller ports: 1..=4, unique.
    #[schemars(length(min = 1, max = MAX_PORTS))]
    pub ports: Vec<PortDescriptor>,
    /// The schema of every observation's inspection value.
    pub inspection_schema: SchemaRef,
    /// Native views: at most 8, unique.
    #[schemars(length(max = MAX_VIEWS))]
    pub views: Vec<ViewDescriptor>,
    /// Native audio streams: at most 8, unique.
    #[schemars(length(max = MAX_AUDIO_STREAMS))]
    pub audio: Vec<AudioDescriptor>,
    /// The recovery capability.
    pub recovery: Recovery,
    /// The determinism claim.
    pub determinism: Determinism,
}

impl EnvironmentDescriptor {
    /// The port with id `port_id`.
    #[must_use]
    pub fn port(&self, port_id: &Id) -> Option<&PortDescriptor> {
        self.ports.iter().find(|p| p.port_id == *port_id)
    }
}

impl Payload for EnvironmentDescriptor {
    fn validate(&self) -> Result<(), ContractError> {
        positive(self.step_duration, "stepDuration")?;
        count_between(&self.ports, 1, MAX_PORTS, "ports", "ports")?;
        check::unique_by(&self.ports, |p| &p.port_id, "ports", "port")?;
        check::each(&self.ports, "ports", |p| {
            p.controls.validate().map_err(|e| e.under("controls"))
        })?;
        self.inspection_schema
            .validate()
            .map_err(|e| e.under("inspectionSchema"))?;
        check::at_most(&self.views, MAX_VIEWS, "views", "views")?;
        check::unique_by(&self.views, |v| &v.view_id, "views", "viewId")?;
        check::each(&self.views, "views", ViewDescriptor::validate)?;
        check::at_most(&self.audio, MAX_AUDIO_STREAMS, "audio", "audio streams")?;
        check::unique_by(&self.audio, |a| &a.stream_id, "audio", "streamId")?;
        check::each(&self.audio, "audio", AudioDescriptor::validate)
    }
}

/// The world at one committed boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorldObservation {
    /// The boundary.
    pub boundary: U64,
    /// Logical time since episode start.
    pub world_time: RationalNs,
    /// The backend's own frame counter (at most 64 characters), or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<String>")]
    pub engine_frame: Option<String>,
    /// Views agents may sense: at most 8, unique.
    #[schemars(length(max = MAX_VIEWS))]
    pub sensory_views: Vec<ViewRef>,
    /// Task-inspection data in the descriptor's inspection schema.
    pub inspection: TypedValue,
    /// Views for presentation only: at most 8, unique.
    #[schemars(length(max = MAX_VIEWS))]
    pub broadcast_views: Vec<ViewRef>,
    /// Audio chunks: at most 8, unique by stream.
    #[schemars(length(max = MAX_AUDIO_STREAMS))]
    pub audio: Vec<AudioRef>,
}

impl Payload for WorldObservation {
    fn validate(&self) -> Result<(), ContractError> {
        if let Some(frame) = &self.engine_frame {
            let len = frame.chars().count();
            if len > MAX_ENGINE_FRAME_LENGTH {
                return Err(ContractError::rule(
                    "engineFrame",
                    format!(
                        "engineFrame must be at most {MAX_ENGINE_FRAME_LENGTH} characters, found {len}"
                    ),
                ));
            }
        }
        view_list(&self.sensory_views, self.boundary, "sensoryViews")?;
        self.inspection
            .validate()
            .map_err(|e| e.under("inspection"))?;
        view_list(&self.broadcast_views, self.boundary, "broadcastViews")?;
        check::at_most(&self.audio, MAX_AUDIO_STREAMS, "audio", "audio chunks")?;
        check::unique_by(&self.audio, |a| &a.stream_id, "audio", "streamId")?;
        check::each(&self.audio, "audio", AudioRef::validate)
    }
}

impl WorldObservation {
    /// Checks this observation against its environment's descriptor: the inspection value uses
    /// the descriptor's inspection schema, every view and audio stream is declared and has the
    /// declared byte shape, and every sensory view was produced at exactly
    /// `max(0, boundary - observationDelaySteps)`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field of this observation.
    pub fn validate_against(
        &self,
        descriptor: &EnvironmentDescriptor,
    ) -> Result<(), ContractError> {
        if self.inspection.schema != descriptor.inspection_schema {
            return Err(ContractError::rule(
                "inspection.schema",
                format!(
                    "inspection must use the descriptor's inspectionSchema `{}`",
                    descriptor.inspection_schema.id
                ),
            ));
        }
        let boundary = self.boundary.get();
        let declared = |view: &ViewRef| {
            descriptor
                .views
                .iter()
                .find(|d| d.view_id == view.view_id)
                .ok_or_else(|| {
                    ContractError::rule(
                        "viewId",
                        format!("view `{}` is not declared by the descriptor", view.view_id),
                    )
                })
        };
        check::each(&self.sensory_views, "sensoryViews", |v| {
            v.validate_against(declared(v)?, Some(boundary))
        })?;
        check::each(&self.broadcast_views, "broadcastViews", |v| {
            v.validate_against(declared(v)?, None)
        })?;
        check::each(&self.audio, "audio", |chunk| {
            let stream = descriptor
                .audio
                .iter()
                .find(|d| d.stream_id == chunk.stream_id)
                .ok_or_else(|| {
                    ContractError::rule(
                        "streamId",
                        format!(
                            "audio stream `{}` is not declared by the descriptor",
                            chunk.stream_id
                        ),
                    )
                })?;
            chunk.validate_against(stream)
        })
    }
}

/// The agent bound to one port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PortBinding {
    /// The port.
    pub port_id: Id,
    /// The agent whose controls it receives.
    pub agent_id: Id,
}

/// `Environment.Initialize` params: set up the episode and stop at boundary 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvironmentInitializeParams {
    /// The backend configuration: content, patches, timing, parser and controller conversion.
    pub backend_config: AssetRef,
    /// The declared setup configuration of the task.
    pub task_config: AssetRef,
    /// The episode.
    pub episode_id: Id,
    /// Port bindings: 1..=4, unique by port and by agent.
    #[schemars(length(min = 1, max = MAX_PORTS))]
    pub port_bindings: Vec<PortBinding>,
}

impl Payload for EnvironmentInitializeParams {
    fn validate(&self) -> Result<(), ContractError> {
        self.backend_config
            .validate()
            .map_err(|e| e.under("backendConfig"))?;
        self.task_config
            .validate()
            .map_err(|e| e.under("taskConfig"))?;
        count_between(
            &self.port_bindings,
            1,
            MAX_PORTS,
            "portBindings",
            "port bindings",
        )?;
        check::unique_by(
            &self.port_bindings,
            |b| &b.port_id,
            "portBindings",
            "bound port",
        )?;
        check::unique_by(
            &self.port_bindings,
            |b| &b.agent_id,
            "portBindings",
            "bound agent",
        )
    }
}

/// `Environment.Initialize` result: the descriptor and the observation at boundary 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvironmentInitializeResult {
    /// The environment's fixed identity and shape.
    pub descriptor: EnvironmentDescriptor,
    /// `O[0]`: boundary `"0"`, world time `0/1`.
    pub observation: WorldObservation,
}

impl Payload for EnvironmentInitializeResult {
    fn validate(&self) -> Result<(), ContractError> {
        self.descriptor
            .validate()
            .map_err(|e| e.under("descriptor"))?;
        self.observation
            .validate()
            .map_err(|e| e.under("observation"))?;
        if self.observation.boundary.get() != 0 {
            return Err(ContractError::rule(
                "observation.boundary",
                "the initial observation must be boundary \"0\"",
            ));
        }
        if !self.observation.world_time.is_zero() {
            return Err(ContractError::rule(
                "observation.worldTime",
                "the initial worldTime must be 0/1",
            ));
        }
        self.observation
            .validate_against(&self.descriptor)
            .map_err(|e| e.under("observation"))
    }
}

/// `Environment.Advance` params: one complete batch of controls for one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdvanceParams {
    /// The batch, unique within the epoch.
    pub batch_id: Id,
    /// One control per port: 1..=4, unique by port.
    // Shared and hashed (the wire form is the value's): the coordinator's batch, the request
    // and, on the in-memory lane, the environment's answer hold one value, whose digest is the
    // batch's `controlDigest` and the `appliedControlsDigest`, computed once for all.
    #[schemars(length(min = 1, max = MAX_PORTS))]
    pub controls: SharedControls,
}

impl Payload for AdvanceParams {
    fn validate(&self) -> Result<(), ContractError> {
        count_between(&self.controls, 1, MAX_PORTS, "controls", "controls")?;
        check::unique_by(&self.controls, |c| &c.port_id, "controls", "port")?;
        check::each(&self.controls, "controls", PortControl::validate)
    }
}

impl AdvanceParams {
    /// Checks the batch against the environment's descriptor: exactly one control per declared
    /// port, in descriptor order, each complete and in range for its port's controller schema.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field (e.g. `controls[0].axes[1].value`).
    pub fn validate_against(
        &self,
        descriptor: &EnvironmentDescriptor,
    ) -> Result<(), ContractError> {
        self.validate()?;
        self.matches_descriptor(descriptor)
    }

    /// The checks of [`validate_against`](Self::validate_against) that need the descriptor, for
    /// params already [validated](Payload::validate) (a worker validates every request's params
    /// as it decodes them).
    ///
    /// # Errors
    ///
    /// As [`validate_against`](Self::validate_against).
    pub fn matches_descriptor(
        &self,
        descriptor: &EnvironmentDescriptor,
    ) -> Result<(), ContractError> {
        for (i, port) in descriptor.ports.iter().enumerate() {
            match self.controls.get(i) {
                Some(control) if control.port_id == port.port_id => {}
                Some(control) => {
                    return Err(ContractError::rule(
                        format!("controls[{i}].portId"),
                        format!(
                            "a batch must hold one control per declared port, in descriptor order: expected `{}`, found `{}`",
                            port.port_id, control.port_id
                        ),
                    ));
                }
                None => {
                    return Err(ContractError::rule(
                        "controls",
                        format!(
                            "a batch must hold one control per declared port: `{}` is missing",
                            port.port_id
                        ),
                    ));
                }
            }
        }
        if let Some(extra) = self.controls.get(descriptor.ports.len()) {
            return Err(ContractError::rule(
                format!("controls[{}].portId", descriptor.ports.len()),
                format!(
                    "a batch may hold only declared ports: `{}` is not declared",
                    extra.port_id
                ),
            ));
        }
        for (i, (control, port)) in self.controls.iter().zip(&descriptor.ports).enumerate() {
            control
                .matches_schema(&port.controls)
                .map_err(|e| e.under(&format!("controls[{i}]")))?;
        }
        Ok(())
    }
}

/// `Environment.Advance` result: exactly one framework step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepResult {
    /// The batch that was applied.
    pub batch_id: Id,
    /// The boundary the step departed from, `k`.
    pub applied_from_step: U64,
    /// The boundary reached, `k+1`.
    pub next_step: U64,
    /// The digest of the validated canonical requested controls.
    pub applied_controls_digest: AppliedControls,
    // Shared, so a typed reply taken back on the local lane, the reply cache and the
    // coordinator's committed boundary hold one copy; the JSON (and the schema, whose
    // description is the doc line below) is the observation's.
    /// The observation at `k+1`.
    pub observation: std::sync::Arc<WorldObservation>,
}

impl Payload for StepResult {
    fn validate(&self) -> Result<(), ContractError> {
        if self.applied_from_step.get().checked_add(1) != Some(self.next_step.get()) {
            return Err(ContractError::rule(
                "nextStep",
                format!(
                    "nextStep must be appliedFromStep + 1; one result is one step, found {} after {}",
                    self.next_step, self.applied_from_step
                ),
            ));
        }
        self.observation
            .validate()
            .map_err(|e| e.under("observation"))?;
        if self.observation.boundary != self.next_step {
            return Err(ContractError::rule(
                "observation.boundary",
                format!(
                    "the observation must be at nextStep ({}), found {}",
                    self.next_step, self.observation.boundary
                ),
            ));
        }
        Ok(())
    }
}

impl StepResult {
    /// Checks the result against the environment's descriptor and the previous observation:
    /// the observation is valid for the descriptor, follows `previous` by one boundary, and its
    /// world time advanced by exactly one `stepDuration`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field, or [`ContractError::RationalOverflow`].
    pub fn validate_against(
        &self,
        descriptor: &EnvironmentDescriptor,
        previous: &WorldObservation,
    ) -> Result<(), ContractError> {
        self.validate()?;
        if self.applied_from_step != previous.boundary {
            return Err(ContractError::rule(
                "appliedFromStep",
                format!(
                    "appliedFromStep must be the previous boundary {}",
                    previous.boundary
                ),
            ));
        }
        self.observation
            .validate_against(descriptor)
            .map_err(|e| e.under("observation"))?;
        let expected = previous.world_time.checked_add(descriptor.step_duration)?;
        if self.observation.world_time != expected {
            return Err(ContractError::rule(
                "observation.worldTime",
                format!(
                    "worldTime must advance by exactly one stepDuration to {expected}, found {}",
                    self.observation.world_time
                ),
            ));
        }
        Ok(())
    }
}
