//! The brain profile (`flysim-brain-profile-v1`): every number, role, sensory layout, readout and
//! learning rule of an agent, as one canonical JSON document that pins its connectome by digest.
//!
//! A profile is read like a contract payload ([`Profile::parse`]: strict JSON, unknown fields
//! refused, `FS01xx` codes with field paths), then checked against its connectome
//! ([`Profile::check_against`], `FS0720`). Its identity is the SHA-256 of its RFC 8785 form
//! ([`Profile::digest`]). Nothing has a hidden default: every parameter is written out.
//! The JSON Schema is [`schema`]; `crates/brain/schemas/brain-profile-v1.schema.json` is its
//! committed copy, checked by a test.

use flysim_types::payload::{Nullable, Payload, check, required_nullable};
use flysim_types::{ContractError, Digest, Id};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::connectome::Connectome;
use crate::error::BrainError;

mod kernels;

pub use kernels::{
    ExpDelayParams, Kernel, LIF_1MS, LIF_EXP_DELAY, Lif1msParams, MAX_DELAY_TICKS,
    MAX_NEURON_CLASSES, NeuronOverride, NeuronParams, PoissonDrive,
};
use kernels::{exact, non_negative, positive};

/// The format string every profile carries.
pub const FORMAT: &str = "flysim-brain-profile-v1";
/// The id of the kernel `lif-1ms-v1` (the first kernel this crate implements; see [`Kernel`]).
pub const KERNEL: &str = LIF_1MS;
/// The plasticity rule id this crate implements.
pub const PLASTICITY: &str = "rstdp-v1";
/// The readout id this crate implements.
pub const READOUT: &str = "dpad-readout-v1";

/// A brain profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Profile {
    /// Always `flysim-brain-profile-v1`.
    pub format: String,
    /// The profile's name, e.g. `arena-toy-v1`.
    pub id: Id,
    /// One sentence for people.
    pub description: String,
    /// The connectome this profile runs on.
    pub connectome: ConnectomeRef,
    /// The kernel and its parameters.
    pub kernel: Kernel,
    /// Named neuron groups; each list strictly ascending.
    pub roles: Vec<Role>,
    /// Roles whose rates are tracked, in telemetry order: at most 64.
    pub rate_roles: Vec<Id>,
    /// How a frame becomes input drive.
    pub retina: Retina,
    /// How rates become a controller intent.
    pub readout: Readout,
    /// Stimulus kinds the agent supports.
    pub stimuli: Vec<StimulusKind>,
    /// The plastic edge set and its rule, or null for a profile that does not learn.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Plasticity>")]
    pub plasticity: Option<Plasticity>,
}

/// The connectome a profile names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConnectomeRef {
    /// The file name, resolved next to the profile.
    pub file: String,
    /// SHA-256 of the file (the connectome's digest).
    pub digest: Digest,
    /// Neurons.
    pub neurons: u32,
    /// Edges.
    pub edges: u32,
}

/// A named neuron group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Role {
    /// The role's id.
    pub id: Id,
    /// Its neurons, strictly ascending.
    pub neurons: Vec<u32>,
}

/// How a retina channel's columns respond to the luminance `L` of their pixel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Response {
    /// Drive = gain × L.
    On,
    /// Drive = gain × (1 − L).
    Off,
    /// Drive = gain when `low <= L <= high`, else 0.
    Band {
        /// Lowest luminance that drives.
        low: f64,
        /// Highest luminance that drives.
        high: f64,
    },
}

/// One retina channel: a response and its columns, one pixel each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RetinaChannel {
    /// The channel's name.
    pub id: Id,
    /// How the columns respond.
    pub response: Response,
    /// Drive scale (`lif-1ms-v1`: membrane per tick; `lif-exp-delay-v1`: Poisson rate in Hz).
    pub gain: f64,
    /// Columns as `[neuron, x, y]`: the neuron the pixel at `(x, y)` drives.
    pub columns: Vec<[u32; 3]>,
}

/// Which part of its agent's view a retina reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetinaLayout {
    /// The whole view, exactly `width × height` (the default, and how it is written: absent).
    #[default]
    Frame,
    /// The view stacks one band of `height` rows per port, in the environment's port order
    /// (`width` pixels wide); the retina reads the band of its agent's own port.
    PortBands,
}

impl RetinaLayout {
    /// Whether this is the default layout (left out of the canonical form).
    #[must_use]
    pub fn is_frame(&self) -> bool {
        *self == RetinaLayout::Frame
    }
}

/// The retina: channels of one-pixel columns over frames of one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Retina {
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels (with `port-bands`: the height of one port's band).
    pub height: u32,
    /// Which part of the view is the frame: `frame` (absent) or `port-bands`.
    #[serde(default, skip_serializing_if = "RetinaLayout::is_frame")]
    pub layout: RetinaLayout,
    /// The channels, applied in order.
    pub channels: Vec<RetinaChannel>,
}

impl Retina {
    /// Every column, channel by channel, with its channel.
    pub fn columns(&self) -> impl Iterator<Item = (&RetinaChannel, &[u32; 3])> {
        self.channels
            .iter()
            .flat_map(|ch| ch.columns.iter().map(move |c| (ch, c)))
    }

    /// Columns in all channels.
    #[must_use]
    pub fn column_count(&self) -> usize {
        self.channels.iter().map(|c| c.columns.len()).sum()
    }
}

/// A controller button of the 8-button pad.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Button {
    /// D-pad up.
    Up,
    /// D-pad down.
    Down,
    /// D-pad left.
    Left,
    /// D-pad right.
    Right,
    /// A.
    A,
    /// B.
    B,
    /// Start.
    Start,
    /// Select.
    Select,
}

impl Button {
    /// Every button, in bit order (the contract's Game Boy button order).
    pub const ALL: [Button; 8] = [
        Button::Up,
        Button::Down,
        Button::Left,
        Button::Right,
        Button::A,
        Button::B,
        Button::Start,
        Button::Select,
    ];

    /// The bit of this button in a decision mask.
    #[must_use]
    pub fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The button's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        ["up", "down", "left", "right", "a", "b", "start", "select"][self as usize]
    }

    /// Whether it is a D-pad direction.
    #[must_use]
    pub fn is_direction(self) -> bool {
        (self as u8) < 4
    }
}

/// One button bound to a rate role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Binding {
    /// The button.
    pub button: Button,
    /// A rate role.
    pub role: Id,
    /// The semantic action the button stands for in a decision (`action-decision-v1`);
    /// absent: the button's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Id>,
}

impl Binding {
    /// The action this binding's button stands for: `action`, else the button's name.
    #[must_use]
    pub fn action(&self) -> &str {
        self.action.as_ref().map_or(self.button.name(), Id::as_str)
    }
}

/// The readout `dpad-readout-v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Readout {
    /// Always `dpad-readout-v1`.
    pub id: String,
    /// Ticks of warm-up (learning off) before the baseline rates are recorded.
    pub warmup_ticks: u32,
    /// Buttons and their roles; each button at most once.
    pub bindings: Vec<Binding>,
    /// Ticks between two direction decisions; the winner is held in between.
    pub decide_every_ticks: u32,
    /// A challenger replaces the held direction only with a score above `hysteresis ×` its own.
    pub hysteresis: f64,
    /// A direction is pressed only with a score at or above this.
    pub direction_threshold: f64,
    /// A pulse button fires at or above this score.
    pub pulse_threshold: f64,
    /// Ticks a pulse button stays down.
    pub pulse_hold_ticks: u32,
    /// Ticks after a pulse starts before the same button may fire again.
    pub pulse_cooldown_ticks: u32,
}

/// A stimulus kind: while active, every neuron of `role` gets `drive` per tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StimulusKind {
    /// The kind id requests use.
    pub kind: Id,
    /// The stimulated role.
    pub role: Id,
    /// Per tick to each member: membrane added (`lif-1ms-v1`), or the rate in Hz of a Poisson
    /// input (`lif-exp-delay-v1`, at least 0).
    pub drive: f64,
}

/// The plastic edge set and `rstdp-v1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Plasticity {
    /// Always `rstdp-v1`.
    pub rule: String,
    /// Source role of plastic edges.
    pub pre_role: Id,
    /// Target role of plastic edges.
    pub post_role: Id,
    /// At most this many edges, the heaviest first.
    pub max_edges: u32,
    /// Lowest gain.
    pub gain_min: f64,
    /// Highest gain.
    pub gain_max: f64,
    /// Gain change per unit of `tanh(reward) × trace`.
    pub learning_rate: f64,
    /// Pull of the gain towards 1 per reinforcement.
    pub gain_decay: f64,
    /// Eligibility-trace time constant in ms.
    pub trace_tau_ms: f64,
    /// Pair-term time constant in ms.
    pub pair_tau_ms: f64,
    /// Largest spike-time difference that forms a pair, in ticks.
    pub window_ticks: u32,
    /// Pair term for pre before post.
    pub causal: f64,
    /// Pair term for post before pre (usually negative).
    pub anti_causal: f64,
}

impl Payload for Profile {
    fn validate(&self) -> Result<(), ContractError> {
        exact(&self.format, FORMAT, "format")?;
        let known = |id: &Id, path: &str| self.known_role(id, path);
        self.kernel.validate(&known)?;
        self.validate_roles()?;
        self.validate_retina()?;
        self.validate_readout()?;
        self.validate_stimuli()?;
        self.validate_plasticity()
    }
}

impl Profile {
    /// Refuses a role id that `roles` does not declare.
    fn known_role(&self, id: &Id, path: &str) -> Result<(), ContractError> {
        if self.roles.iter().any(|r| r.id == *id) {
            Ok(())
        } else {
            Err(ContractError::rule(
                path,
                format!("role `{id}` is not declared in `roles`"),
            ))
        }
    }

    /// Roles (unique, non-empty, strictly ascending) and rate roles (at most 64, declared).
    fn validate_roles(&self) -> Result<(), ContractError> {
        check::unique_by(&self.roles, |r| r.id.clone(), "roles", "role id")?;
        check::each(&self.roles, "roles", |r| {
            if r.neurons.windows(2).any(|w| w[0] >= w[1]) {
                return Err(ContractError::rule("neurons", "must be strictly ascending"));
            }
            if r.neurons.is_empty() {
                return Err(ContractError::rule(
                    "neurons",
                    "a role has at least one neuron",
                ));
            }
            Ok(())
        })?;
        check::at_most(
            &self.rate_roles,
            flysim_types::limits::MAX_RATE_ROLES,
            "rateRoles",
            "rate roles",
        )?;
        check::unique_by(&self.rate_roles, Id::clone, "rateRoles", "rate role")?;
        for (i, r) in self.rate_roles.iter().enumerate() {
            self.known_role(r, &format!("rateRoles[{i}]"))?;
        }
        Ok(())
    }

    /// The retina: its size, unique channels, bands and pixels inside the frame.
    fn validate_retina(&self) -> Result<(), ContractError> {
        let rt = &self.retina;
        if rt.width == 0 || rt.height == 0 || rt.width > 4096 || rt.height > 4096 {
            return Err(ContractError::rule(
                "retina",
                "width and height are 1..=4096",
            ));
        }
        check::unique_by(
            &rt.channels,
            |c| c.id.clone(),
            "retina.channels",
            "channel id",
        )?;
        check::each(&rt.channels, "retina.channels", |ch| {
            non_negative(ch.gain, "gain")?;
            if let Response::Band { low, high } = ch.response {
                check::finite(low, "response.low")?;
                check::finite(high, "response.high")?;
                if !(0.0 <= low && low <= high && high <= 1.0) {
                    return Err(ContractError::rule(
                        "response",
                        "a band needs 0 <= low <= high <= 1",
                    ));
                }
            }
            for (i, [_, x, y]) in ch.columns.iter().enumerate() {
                if *x >= rt.width || *y >= rt.height {
                    return Err(ContractError::rule(
                        format!("columns[{i}]"),
                        format!(
                            "pixel ({x}, {y}) is outside the {}x{} frame",
                            rt.width, rt.height
                        ),
                    ));
                }
            }
            Ok(())
        })
    }

    /// The readout: its id, one binding per button, each to a rate role, and its numbers.
    fn validate_readout(&self) -> Result<(), ContractError> {
        let ro = &self.readout;
        exact(&ro.id, READOUT, "readout.id")?;
        check::unique_by(
            &ro.bindings,
            |b| b.button.name(),
            "readout.bindings",
            "button",
        )?;
        for (i, b) in ro.bindings.iter().enumerate() {
            let path = format!("readout.bindings[{i}].role");
            if !self.rate_roles.contains(&b.role) {
                return Err(ContractError::rule(
                    path,
                    format!("role `{}` must be a rate role", b.role),
                ));
            }
        }
        if ro.decide_every_ticks == 0 {
            return Err(ContractError::rule(
                "readout.decideEveryTicks",
                "must be >= 1",
            ));
        }
        positive(ro.hysteresis, "readout.hysteresis")?;
        non_negative(ro.direction_threshold, "readout.directionThreshold")?;
        non_negative(ro.pulse_threshold, "readout.pulseThreshold")
    }

    /// Stimulus kinds: at most the contract's limit, unique, on declared roles, finite drives.
    fn validate_stimuli(&self) -> Result<(), ContractError> {
        check::at_most(
            &self.stimuli,
            flysim_types::limits::MAX_SUPPORTED_STIMULI,
            "stimuli",
            "stimulus kinds",
        )?;
        check::unique_by(
            &self.stimuli,
            |s| s.kind.clone(),
            "stimuli",
            "stimulus kind",
        )?;
        for (i, s) in self.stimuli.iter().enumerate() {
            self.known_role(&s.role, &format!("stimuli[{i}].role"))?;
            check::finite(s.drive, &format!("stimuli[{i}].drive"))?;
            if self.kernel.exp_delay().is_some() {
                non_negative(s.drive, &format!("stimuli[{i}].drive"))?;
            }
        }
        Ok(())
    }

    /// The plasticity rule (only on `lif-1ms-v1`, whose ticks are the rule's milliseconds).
    fn validate_plasticity(&self) -> Result<(), ContractError> {
        let Some(p) = &self.plasticity else {
            return Ok(());
        };
        if self.kernel.exp_delay().is_some() {
            return Err(ContractError::rule(
                "plasticity",
                format!("`{LIF_EXP_DELAY}` does not learn: must be null"),
            ));
        }
        exact(&p.rule, PLASTICITY, "plasticity.rule")?;
        self.known_role(&p.pre_role, "plasticity.preRole")?;
        self.known_role(&p.post_role, "plasticity.postRole")?;
        positive(p.gain_min, "plasticity.gainMin")?;
        check::finite(p.gain_max, "plasticity.gainMax")?;
        if !(p.gain_min <= 1.0 && 1.0 <= p.gain_max) {
            return Err(ContractError::rule(
                "plasticity",
                "gainMin <= 1 <= gainMax must hold (gains start at 1)",
            ));
        }
        non_negative(p.learning_rate, "plasticity.learningRate")?;
        non_negative(p.gain_decay, "plasticity.gainDecay")?;
        positive(p.trace_tau_ms, "plasticity.traceTauMs")?;
        positive(p.pair_tau_ms, "plasticity.pairTauMs")?;
        check::finite(p.causal, "plasticity.causal")?;
        check::finite(p.anti_causal, "plasticity.antiCausal")
    }
}

impl Profile {
    /// Reads a profile document (strict JSON, then the profile rules).
    ///
    /// # Errors
    ///
    /// The contract refusal (`FS01xx`) with its field path.
    pub fn parse(bytes: &[u8]) -> Result<Self, BrainError> {
        Ok(flysim_types::parse_payload(bytes)?)
    }

    /// The RFC 8785 canonical form, with a final newline (how profile files are committed).
    #[must_use]
    pub fn to_canonical(&self) -> String {
        // Every number in a validated profile is finite, so canonicalisation cannot fail.
        let mut text = flysim_types::payload::to_canonical(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// SHA-256 of the canonical form (without the final newline).
    #[must_use]
    pub fn digest(&self) -> Digest {
        let text = self.to_canonical();
        flysim_types::digest::sha256(text.trim_end_matches('\n').as_bytes())
    }

    /// The role with this id.
    #[must_use]
    pub fn role(&self, id: &Id) -> Option<&Role> {
        self.roles.iter().find(|r| r.id == *id)
    }

    /// Checks the profile against the connectome it will run on.
    ///
    /// # Errors
    ///
    /// [`BrainError::ProfileMismatch`] naming the first contradiction.
    pub fn check_against(&self, c: &Connectome) -> Result<(), BrainError> {
        if self.connectome.digest != c.digest() {
            return Err(BrainError::mismatch(
                "connectome.digest",
                format!(
                    "the profile names {}, the connectome is {}",
                    self.connectome.digest,
                    c.digest()
                ),
            ));
        }
        let n = c.neurons();
        if self.connectome.neurons != n || u64::from(self.connectome.edges) != c.edges() {
            return Err(BrainError::mismatch(
                "connectome",
                format!(
                    "the profile says {} neurons and {} edges, the connectome has {n} and {}",
                    self.connectome.neurons,
                    self.connectome.edges,
                    c.edges()
                ),
            ));
        }
        for (i, r) in self.roles.iter().enumerate() {
            if let Some(&bad) = r.neurons.last().filter(|&&v| v >= n) {
                return Err(BrainError::mismatch(
                    format!("roles[{i}].neurons"),
                    format!("neuron {bad} is outside 0..{n}"),
                ));
            }
        }
        for (k, ch) in self.retina.channels.iter().enumerate() {
            for (i, [neuron, _, _]) in ch.columns.iter().enumerate() {
                if *neuron >= n {
                    return Err(BrainError::mismatch(
                        format!("retina.channels[{k}].columns[{i}]"),
                        format!("neuron {neuron} is outside 0..{n}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The JSON Schema of a profile, as committed (pretty, final newline).
#[must_use]
pub fn schema() -> String {
    let schema = schemars::schema_for!(Profile);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
