//! The shared data model of workers-v1 §1 (contracts §6.2), the media references of
//! state-media-v1 (contracts §7) and the flybus `ArtifactRef` they point through (contracts §3.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Nullable, int_between, non_negative, nullable};
use crate::error::ContractError;
use crate::limits::{
    MAX_AUDIO_CHANNELS, MAX_AUDIO_SAMPLE_RATE, MAX_CONTENT_TYPE_BYTES, MAX_OBSERVATION_DELAY_STEPS,
    MAX_PIXEL_ASPECT_PART, MAX_RATE_ROLES, MAX_REWARDS_PER_OPERATION, MAX_SAMPLE_FRAMES,
    MAX_STIMULI_PER_OPERATION, MAX_SUPPORTED_STIMULI, MAX_VIEW_DIMENSION, MAX_VIEWS,
    MIN_AUDIO_SAMPLE_RATE,
};
use crate::payload::{Payload, check};
use crate::scalar::{Digest, Id, TypedValue, U64};

/// Bytes per RGBA8 pixel: a view row is exactly `4 * width` bytes, with no padding in v1.
const RGBA8_BYTES_PER_PIXEL: u64 = 4;
/// Bytes per `f32le` sample.
const F32_BYTES: u64 = 4;
/// The only artifact generation of flybus v1.
const ARTIFACT_GENERATION_V1: u64 = 1;

/// Persistent, preinstalled and verified content in the local registry, named by id and digest.
///
/// Never a path or URL for a worker to fetch, and never resolved to a "latest" version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssetRef {
    /// The asset's registry id.
    pub id: Id,
    /// SHA-256 of its bytes.
    pub digest: Digest,
    /// Its length in bytes; positive.
    pub byte_length: U64,
    /// Its format id.
    pub format: Id,
}

impl Payload for AssetRef {
    fn validate(&self) -> Result<(), ContractError> {
        if self.byte_length.get() == 0 {
            return Err(ContractError::rule(
                "byteLength",
                "an asset byteLength must be positive",
            ));
        }
        Ok(())
    }
}

/// A transient flybus artifact: identity `(storeId, artifactId, generation)` plus its shape.
///
/// It resolves only through an owned handle listed in the envelope's attachments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArtifactRef {
    /// The store incarnation that holds the artifact.
    pub store_id: Id,
    /// The artifact within that store.
    pub artifact_id: Id,
    /// Its generation; always `"1"` in v1.
    pub generation: U64,
    /// Its length in bytes.
    pub byte_length: U64,
    /// Its content type: 1 to 127 printable ASCII characters.
    #[schemars(length(min = 1, max = MAX_CONTENT_TYPE_BYTES))]
    pub content_type: std::sync::Arc<str>,
    /// SHA-256 of its bytes, or null (optional on live frames, mandatory on checkpoints).
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Digest>")]
    pub digest: Option<Digest>,
}

impl Payload for ArtifactRef {
    fn validate(&self) -> Result<(), ContractError> {
        if self.generation.get() != ARTIFACT_GENERATION_V1 {
            return Err(ContractError::rule(
                "generation",
                "an artifact generation must be \"1\" in flybus v1",
            ));
        }
        let len = self.content_type.len();
        if len == 0
            || len > MAX_CONTENT_TYPE_BYTES
            || !self
                .content_type
                .bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(ContractError::rule(
                "contentType",
                format!(
                    "a contentType must be 1 to {MAX_CONTENT_TYPE_BYTES} printable ASCII characters"
                ),
            ));
        }
        Ok(())
    }
}

/// The pixel format of a view; only `rgba8` in v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ViewFormat {
    /// Four bytes per pixel, R G B A, rows top to bottom, pixels left to right.
    #[serde(rename = "rgba8")]
    Rgba8,
}

/// A pixel aspect ratio as two positive integers, each at most 65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PixelAspect {
    /// Width part.
    #[schemars(range(min = 1, max = MAX_PIXEL_ASPECT_PART))]
    pub numerator: u64,
    /// Height part.
    #[schemars(range(min = 1, max = MAX_PIXEL_ASPECT_PART))]
    pub denominator: u64,
}

/// The fixed shape of one native view an environment produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ViewDescriptor {
    /// The view's id, unique within its descriptor.
    pub view_id: Id,
    /// Width in pixels, 1..=4096.
    #[schemars(range(min = 1, max = MAX_VIEW_DIMENSION))]
    pub width: u32,
    /// Height in pixels, 1..=4096.
    #[schemars(range(min = 1, max = MAX_VIEW_DIMENSION))]
    pub height: u32,
    /// The pixel format.
    pub format: ViewFormat,
    /// Bytes per row: exactly `4 * width`.
    pub row_stride: u32,
    /// The shape of one pixel.
    pub pixel_aspect: PixelAspect,
    /// How many steps a frame lags its boundary, 0..=8.
    #[schemars(range(max = MAX_OBSERVATION_DELAY_STEPS))]
    pub observation_delay_steps: u64,
}

impl ViewDescriptor {
    /// The exact byte length of one frame: `rowStride * height`.
    #[must_use]
    pub fn frame_bytes(&self) -> u64 {
        u64::from(self.row_stride) * u64::from(self.height)
    }

    /// The boundary a required sensory view observed at `boundary` was produced at:
    /// `max(0, boundary - observationDelaySteps)`.
    #[must_use]
    pub fn required_produced_step(&self, boundary: u64) -> u64 {
        boundary.saturating_sub(self.observation_delay_steps)
    }
}

impl Payload for ViewDescriptor {
    fn validate(&self) -> Result<(), ContractError> {
        int_between(self.width, 1, MAX_VIEW_DIMENSION, "width", "a view width")?;
        int_between(
            self.height,
            1,
            MAX_VIEW_DIMENSION,
            "height",
            "a view height",
        )?;
        let stride = u64::from(self.width) * RGBA8_BYTES_PER_PIXEL;
        if u64::from(self.row_stride) != stride {
            return Err(ContractError::rule(
                "rowStride",
                format!(
                    "rowStride must be exactly 4 x width ({stride}), found {}",
                    self.row_stride
                ),
            ));
        }
        let aspect = &self.pixel_aspect;
        int_between(
            aspect.numerator,
            1,
            MAX_PIXEL_ASPECT_PART,
            "pixelAspect.numerator",
            "a pixel aspect part",
        )?;
        int_between(
            aspect.denominator,
            1,
            MAX_PIXEL_ASPECT_PART,
            "pixelAspect.denominator",
            "a pixel aspect part",
        )?;
        int_between(
            self.observation_delay_steps,
            0,
            MAX_OBSERVATION_DELAY_STEPS,
            "observationDelaySteps",
            "observationDelaySteps",
        )
    }
}

/// One produced frame of one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ViewRef {
    /// The declared view this frame belongs to.
    pub view_id: Id,
    /// The environment boundary that produced the frame.
    pub produced_step: U64,
    /// The pixels: `rowStride * height` bytes of RGBA8.
    pub pixels: ArtifactRef,
}

impl ViewRef {
    /// Checks this frame against the descriptor that declared its view: the same view id, a
    /// pixel artifact of exactly `rowStride * height` bytes and, when `boundary` is given (a
    /// required sensory view), `producedStep == max(0, boundary - observationDelaySteps)`.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field of this view ref.
    pub fn validate_against(
        &self,
        descriptor: &ViewDescriptor,
        boundary: Option<u64>,
    ) -> Result<(), ContractError> {
        self.validate()?;
        if self.view_id != descriptor.view_id {
            return Err(ContractError::rule(
                "viewId",
                format!(
                    "the view ref must name its descriptor's view `{}`, found `{}`",
                    descriptor.view_id, self.view_id
                ),
            ));
        }
        let expected = descriptor.frame_bytes();
        if self.pixels.byte_length.get() != expected {
            return Err(ContractError::rule(
                "pixels.byteLength",
                format!(
                    "pixels must be exactly rowStride x height = {expected} bytes, found {}",
                    self.pixels.byte_length
                ),
            ));
        }
        if let Some(boundary) = boundary {
            let produced = descriptor.required_produced_step(boundary);
            if self.produced_step.get() != produced {
                return Err(ContractError::rule(
                    "producedStep",
                    format!(
                        "a required view observed at boundary {boundary} must be produced at max(0, {boundary} - {}) = {produced}, found {}",
                        descriptor.observation_delay_steps, self.produced_step
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Payload for ViewRef {
    fn validate(&self) -> Result<(), ContractError> {
        self.pixels.validate().map_err(|e| e.under("pixels"))?;
        if self.pixels.byte_length.get() == 0 {
            return Err(ContractError::rule(
                "pixels.byteLength",
                "a view's pixels must have a positive byteLength",
            ));
        }
        Ok(())
    }
}

/// The sample format of an audio stream; only `f32le-interleaved` in v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AudioFormat {
    /// Little-endian 32-bit float samples, channels interleaved per frame.
    #[serde(rename = "f32le-interleaved")]
    F32leInterleaved,
}

/// The fixed shape of one native audio stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AudioDescriptor {
    /// The stream's id, unique within its descriptor.
    pub stream_id: Id,
    /// Frames per second, 8000..=192000.
    #[schemars(range(min = MIN_AUDIO_SAMPLE_RATE, max = MAX_AUDIO_SAMPLE_RATE))]
    pub sample_rate: u32,
    /// Channels per frame, 1..=8.
    #[schemars(range(min = 1, max = MAX_AUDIO_CHANNELS))]
    pub channels: u32,
    /// The sample format.
    pub format: AudioFormat,
}

impl Payload for AudioDescriptor {
    fn validate(&self) -> Result<(), ContractError> {
        int_between(
            self.sample_rate,
            MIN_AUDIO_SAMPLE_RATE,
            MAX_AUDIO_SAMPLE_RATE,
            "sampleRate",
            "an audio sampleRate",
        )?;
        int_between(
            self.channels,
            1,
            MAX_AUDIO_CHANNELS,
            "channels",
            "an audio channel count",
        )
    }
}

/// One produced chunk of one audio stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AudioRef {
    /// The declared stream this chunk belongs to.
    pub stream_id: Id,
    /// The stream position of the chunk's first frame (PTS = firstSample / sampleRate).
    pub first_sample: U64,
    /// Frames in the chunk, 0..=192000.
    #[schemars(range(max = MAX_SAMPLE_FRAMES))]
    pub sample_frames: u64,
    /// The samples: `sampleFrames * channels * 4` bytes of finite f32.
    pub samples: ArtifactRef,
    /// Whether the stream really skipped before this chunk.
    pub discontinuity: bool,
}

impl AudioRef {
    /// Checks this chunk against the descriptor that declared its stream: the same stream id and
    /// a sample artifact of exactly `sampleFrames * channels * 4` bytes.
    ///
    /// # Errors
    ///
    /// [`ContractError::Rule`] at the offending field of this audio ref.
    pub fn validate_against(&self, descriptor: &AudioDescriptor) -> Result<(), ContractError> {
        self.validate()?;
        if self.stream_id != descriptor.stream_id {
            return Err(ContractError::rule(
                "streamId",
                format!(
                    "the audio ref must name its descriptor's stream `{}`, found `{}`",
                    descriptor.stream_id, self.stream_id
                ),
            ));
        }
        let expected = self.sample_frames * u64::from(descriptor.channels) * F32_BYTES;
        if self.samples.byte_length.get() != expected {
            return Err(ContractError::rule(
                "samples.byteLength",
                format!(
                    "samples must be exactly sampleFrames x channels x 4 = {expected} bytes, found {}",
                    self.samples.byte_length
                ),
            ));
        }
        Ok(())
    }
}

impl Payload for AudioRef {
    fn validate(&self) -> Result<(), ContractError> {
        int_between(
            self.sample_frames,
            0,
            MAX_SAMPLE_FRAMES,
            "sampleFrames",
            "sampleFrames",
        )?;
        if self
            .first_sample
            .get()
            .checked_add(self.sample_frames)
            .is_none()
        {
            return Err(ContractError::rule(
                "firstSample",
                "firstSample + sampleFrames must fit a U64",
            ));
        }
        self.samples.validate().map_err(|e| e.under("samples"))
    }
}

/// What one agent observes at one environment boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SensoryInput {
    /// The environment boundary being observed.
    pub boundary: U64,
    /// The views this agent may consume: at most 8, unique by view id.
    #[schemars(length(max = MAX_VIEWS))]
    pub views: Vec<ViewRef>,
    /// Structured sensing, or null (a pixel-only profile refuses non-null).
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<TypedValue>")]
    pub structured: Option<TypedValue>,
}

impl Payload for SensoryInput {
    fn validate(&self) -> Result<(), ContractError> {
        view_list(&self.views, self.boundary, "views")?;
        if let Some(structured) = &self.structured {
            structured.validate().map_err(|e| e.under("structured"))?;
        }
        Ok(())
    }
}

/// Checks a list of view refs: at most 8, unique by view id, each valid and produced no later
/// than `boundary`.
pub(super) fn view_list(views: &[ViewRef], boundary: U64, path: &str) -> Result<(), ContractError> {
    check::at_most(views, MAX_VIEWS, path, "views")?;
    check::unique_by(views, |v| &v.view_id, path, "viewId")?;
    check::each(views, path, |view| {
        view.validate()?;
        if view.produced_step > boundary {
            return Err(ContractError::rule(
                "producedStep",
                format!(
                    "a view must be produced at or before the observed boundary {boundary}, found {}",
                    view.produced_step
                ),
            ));
        }
        Ok(())
    })
}

/// A stimulation request resolved through a profile-declared capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Stimulus {
    /// Unique within its operation.
    pub id: Id,
    /// The declared stimulus kind.
    pub kind_id: Id,
    /// Duration in milliseconds; finite and > 0.
    pub duration_ms: f64,
}

impl Payload for Stimulus {
    fn validate(&self) -> Result<(), ContractError> {
        check::finite(self.duration_ms, "durationMs")?;
        if self.duration_ms <= 0.0 {
            return Err(ContractError::rule(
                "durationMs",
                format!("durationMs must be > 0, found {}", self.duration_ms),
            ));
        }
        Ok(())
    }
}

/// Checks a list of stimuli: at most 64, unique by id, each valid.
pub(super) fn stimulus_list(stimuli: &[Stimulus], path: &str) -> Result<(), ContractError> {
    check::at_most(stimuli, MAX_STIMULI_PER_OPERATION, path, "stimuli")?;
    check::unique_by(stimuli, |s| &s.id, path, "stimulus id")?;
    check::each(stimuli, path, Stimulus::validate)
}

/// A reinforcement outcome for one task event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reward {
    /// The task event this reward answers; unique within its operation.
    pub event_id: Id,
    /// The task rule that produced it.
    pub rule_id: Id,
    /// The reward value; finite.
    pub value: f64,
}

impl Payload for Reward {
    fn validate(&self) -> Result<(), ContractError> {
        check::finite(self.value, "value")
    }
}

/// Checks a list of rewards: at most 64, unique by event id, each valid.
pub(super) fn reward_list(rewards: &[Reward], path: &str) -> Result<(), ContractError> {
    check::at_most(rewards, MAX_REWARDS_PER_OPERATION, path, "rewards")?;
    check::unique_by(rewards, |r| &r.event_id, path, "reward eventId")?;
    check::each(rewards, path, Reward::validate)
}

/// The firing rate of one declared rate role.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RoleRate {
    /// The role, as declared in the agent graph.
    pub role_id: Id,
    /// Its rate in Hz; finite and >= 0.
    pub hz: f64,
}

serialize_in_key_order!(RoleRate {
    "hz" => hz,
    "roleId" => role_id,
});

/// The learning counters of one agent.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LearningTelemetry {
    /// Whether learning is enabled (a declared profile/run state).
    pub enabled: bool,
    /// Updates applied.
    pub updates: U64,
    /// Updates that changed a weight; at most `updates`.
    pub changed: U64,
    /// The learning signal; finite.
    pub signal: f64,
}

serialize_in_key_order!(LearningTelemetry {
    "changed" => changed,
    "enabled" => enabled,
    "signal" => signal,
    "updates" => updates,
});

/// What an agent reports after each operation.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentTelemetry {
    /// Brain ticks executed since initialisation.
    pub brain_ticks: U64,
    /// Whole-population rate in Hz; finite and >= 0.
    pub population_rate_hz: f64,
    /// Per-role rates: at most 64, unique, in profile order.
    #[schemars(length(max = MAX_RATE_ROLES))]
    pub rates: Vec<RoleRate>,
    /// Learning counters.
    pub learning: LearningTelemetry,
    /// Milliseconds of stimulation still running after the operation, or null for an agent that
    /// reports none; required, and >= 0 when present.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<f64>")]
    pub stimulus_remaining_ms: Option<f64>,
}

serialize_in_key_order!(AgentTelemetry {
    "brainTicks" => brain_ticks,
    "learning" => learning,
    "populationRateHz" => population_rate_hz,
    "rates" => rates,
    "stimulusRemainingMs" => stimulus_remaining_ms,
});

impl Payload for AgentTelemetry {
    fn validate(&self) -> Result<(), ContractError> {
        non_negative(
            self.population_rate_hz,
            "populationRateHz",
            "populationRateHz",
        )?;
        check::at_most(&self.rates, MAX_RATE_ROLES, "rates", "rates")?;
        check::unique_by(&self.rates, |r| &r.role_id, "rates", "rate roleId")?;
        check::each(&self.rates, "rates", |r| non_negative(r.hz, "hz", "a rate"))?;
        if self.learning.changed > self.learning.updates {
            return Err(ContractError::rule(
                "learning.changed",
                format!(
                    "learning.changed must be at most learning.updates ({})",
                    self.learning.updates
                ),
            ));
        }
        check::finite(self.learning.signal, "learning.signal")?;
        if let Some(ms) = self.stimulus_remaining_ms {
            non_negative(ms, "stimulusRemainingMs", "stimulusRemainingMs")?;
        }
        Ok(())
    }
}

/// The identity and declared roles of an agent's brain graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentGraph {
    /// The connectome dataset's digest.
    pub dataset_digest: Digest,
    /// The neuron index's digest.
    pub index_digest: Digest,
    /// Neurons in the graph.
    pub neuron_count: U64,
    /// Rate roles in telemetry order: at most 64, unique.
    #[schemars(length(max = MAX_RATE_ROLES))]
    pub rate_roles: Vec<Id>,
    /// Stimulus kinds the profile supports: at most 64, unique.
    #[schemars(length(max = MAX_SUPPORTED_STIMULI))]
    pub supported_stimuli: Vec<Id>,
}

impl Payload for AgentGraph {
    fn validate(&self) -> Result<(), ContractError> {
        check::at_most(&self.rate_roles, MAX_RATE_ROLES, "rateRoles", "rate roles")?;
        check::unique_by(&self.rate_roles, Id::clone, "rateRoles", "rate role")?;
        check::at_most(
            &self.supported_stimuli,
            MAX_SUPPORTED_STIMULI,
            "supportedStimuli",
            "supported stimuli",
        )?;
        check::unique_by(
            &self.supported_stimuli,
            Id::clone,
            "supportedStimuli",
            "supported stimulus",
        )
    }
}
