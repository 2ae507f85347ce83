//! The kernel block of a profile: which kernel runs (`id`) and every one of its parameters.
//!
//! Two kernels exist: `lif-1ms-v1` ([`Lif1msParams`], the fast 1 ms kernel) and
//! `lif-exp-delay-v1` ([`ExpDelayParams`], the Shiu et al. 2024 whole-brain model: exponential
//! synaptic conductance, a synaptic delay, a frozen refractory period and per-neuron Poisson
//! input at 0.1 ms). The block is read by its `id`: a document whose id is `lif-exp-delay-v1`
//! is read as that kernel, every other one as `lif-1ms-v1` (so an unknown id is refused by the
//! rule on `kernel.id`, with its path). Each kernel's rules live here; the equations are in
//! `docs/brain.md`. This module knows nothing of how the kernels run.

use flysim_types::payload::check;
use flysim_types::{ContractError, Id};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// The id of the 1 ms kernel.
pub const LIF_1MS: &str = "lif-1ms-v1";
/// The id of the Shiu et al. 2024 kernel.
pub const LIF_EXP_DELAY: &str = "lif-exp-delay-v1";
/// Most neuron classes (the default plus overrides) a `lif-exp-delay-v1` profile may declare.
pub const MAX_NEURON_CLASSES: usize = 256;
/// Longest synaptic delay and refractory period, in ticks.
pub const MAX_DELAY_TICKS: u64 = 255;

/// The kernel a profile runs, with its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Kernel {
    /// `lif-1ms-v1`.
    Lif1ms(Lif1msParams),
    /// `lif-exp-delay-v1`.
    ExpDelay(ExpDelayParams),
}

impl<'de> Deserialize<'de> for Kernel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(d)?;
        let id = value.get("id").and_then(serde_json::Value::as_str);
        if id == Some(LIF_EXP_DELAY) {
            ExpDelayParams::deserialize(value)
                .map(Kernel::ExpDelay)
                .map_err(D::Error::custom)
        } else {
            Lif1msParams::deserialize(value)
                .map(Kernel::Lif1ms)
                .map_err(D::Error::custom)
        }
    }
}

impl Kernel {
    /// The kernel's id.
    #[must_use]
    pub fn id(&self) -> &str {
        match self {
            Kernel::Lif1ms(k) => &k.id,
            Kernel::ExpDelay(k) => &k.id,
        }
    }

    /// The rate EMA's weight of the newest tick.
    #[must_use]
    pub fn rate_alpha(&self) -> f64 {
        match self {
            Kernel::Lif1ms(k) => k.rate_alpha,
            Kernel::ExpDelay(k) => k.rate_alpha,
        }
    }

    /// The `lif-1ms-v1` parameters, if that is the kernel.
    #[must_use]
    pub fn lif_1ms(&self) -> Option<&Lif1msParams> {
        match self {
            Kernel::Lif1ms(k) => Some(k),
            Kernel::ExpDelay(_) => None,
        }
    }

    /// The `lif-1ms-v1` parameters, mutable, if that is the kernel.
    pub fn lif_1ms_mut(&mut self) -> Option<&mut Lif1msParams> {
        match self {
            Kernel::Lif1ms(k) => Some(k),
            Kernel::ExpDelay(_) => None,
        }
    }

    /// The `lif-exp-delay-v1` parameters, if that is the kernel.
    #[must_use]
    pub fn exp_delay(&self) -> Option<&ExpDelayParams> {
        match self {
            Kernel::ExpDelay(k) => Some(k),
            Kernel::Lif1ms(_) => None,
        }
    }

    /// The `lif-exp-delay-v1` parameters, mutable, if that is the kernel.
    pub fn exp_delay_mut(&mut self) -> Option<&mut ExpDelayParams> {
        match self {
            Kernel::ExpDelay(k) => Some(k),
            Kernel::Lif1ms(_) => None,
        }
    }

    /// The kernel's own rules (roles are checked by the caller through `known_role`).
    pub(crate) fn validate(
        &self,
        known_role: &dyn Fn(&Id, &str) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        match self {
            Kernel::Lif1ms(k) => k.validate(),
            Kernel::ExpDelay(k) => k.validate(known_role),
        }
    }
}

/// The parameters of `lif-1ms-v1` (see `docs/brain.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Lif1msParams {
    /// Always `lif-1ms-v1`.
    pub id: String,
    /// Membrane time constant in ms; the decay per tick is `f32(exp(-1/tauMs))`.
    pub tau_ms: f64,
    /// Spike threshold.
    pub threshold: f64,
    /// Ticks a neuron ignores its baseline after a spike (1..=255).
    pub refractory_ticks: u32,
    /// Membrane change per synapse count.
    pub synapse_scale: f64,
    /// Baselines are drawn uniformly from `[0, baselineMax)`.
    pub baseline_max: f64,
    /// Noise kicks per tick.
    pub noise_kicks: u32,
    /// Membrane added by one kick.
    pub noise_amount: f64,
    /// Lowest membrane value synaptic input can reach.
    pub membrane_floor: f64,
    /// The rate EMA's weight of the newest tick.
    pub rate_alpha: f64,
}

impl Lif1msParams {
    fn validate(&self) -> Result<(), ContractError> {
        if self.id != LIF_1MS {
            return Err(ContractError::rule(
                "kernel.id",
                format!(
                    "must be `{LIF_1MS}` or `{LIF_EXP_DELAY}` (the kernels this build implements), found `{}`",
                    self.id
                ),
            ));
        }
        positive(self.tau_ms, "kernel.tauMs")?;
        positive(self.threshold, "kernel.threshold")?;
        if !(1..=255).contains(&self.refractory_ticks) {
            return Err(ContractError::rule(
                "kernel.refractoryTicks",
                "must be 1..=255",
            ));
        }
        positive(self.synapse_scale, "kernel.synapseScale")?;
        non_negative(self.baseline_max, "kernel.baselineMax")?;
        non_negative(self.noise_amount, "kernel.noiseAmount")?;
        check::finite(self.membrane_floor, "kernel.membraneFloor")?;
        if self.membrane_floor > 0.0 {
            return Err(ContractError::rule("kernel.membraneFloor", "must be <= 0"));
        }
        rate_alpha(self.rate_alpha)
    }
}

/// The parameters of `lif-exp-delay-v1` (see `docs/brain.md`): the Shiu et al. 2024 model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpDelayParams {
    /// Always `lif-exp-delay-v1`.
    pub id: String,
    /// The tick in nanoseconds (100,000 = 0.1 ms); times in ms are rounded to whole ticks.
    pub tick_ns: u32,
    /// Conductance (mV) added to the target per synapse count of a delivered spike; the count
    /// carries the sign (inhibitory sources are negative).
    pub synapse_mv: f64,
    /// Membrane (mV) added by one Poisson input event.
    pub input_mv: f64,
    /// The rate EMA's weight of the newest tick.
    pub rate_alpha: f64,
    /// The parameters of every neuron no override names.
    pub neurons: NeuronParams,
    /// Later entries win: the neurons of `role` take `params`.
    pub overrides: Vec<NeuronOverride>,
    /// Constant Poisson drives, applied in this order.
    pub poisson: Vec<PoissonDrive>,
}

/// The per-neuron parameters of `lif-exp-delay-v1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NeuronParams {
    /// Resting potential `v0` (mV): where the membrane relaxes to.
    pub rest_mv: f64,
    /// Potential after a spike (mV).
    pub reset_mv: f64,
    /// A spike when the membrane is strictly above this (mV).
    pub threshold_mv: f64,
    /// Membrane time constant (ms).
    pub tau_membrane_ms: f64,
    /// Conductance time constant (ms).
    pub tau_synapse_ms: f64,
    /// Refractory period (ms, rounded to ticks; 0 = none): membrane and conductance frozen.
    pub refractory_ms: f64,
    /// Delay (ms, rounded to ticks, at least one tick) from this neuron's spike to its targets.
    pub delay_ms: f64,
}

/// Per-neuron parameters for the neurons of a role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NeuronOverride {
    /// The role whose neurons take `params`.
    pub role: Id,
    /// Their parameters.
    pub params: NeuronParams,
}

/// A constant Poisson drive: every neuron of `role` gets its own train at `rateHz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoissonDrive {
    /// The driven role.
    pub role: Id,
    /// Events per second per neuron.
    pub rate_hz: f64,
}

impl ExpDelayParams {
    /// `ms` in whole ticks, rounded to nearest.
    #[must_use]
    pub fn ticks(&self, ms: f64) -> u64 {
        let ticks = libm::round(ms * 1e6 / f64::from(self.tick_ns));
        if ticks <= 0.0 { 0 } else { ticks as u64 }
    }

    /// Every neuron class, default first, then the overrides in order.
    pub fn classes(&self) -> impl Iterator<Item = &NeuronParams> {
        std::iter::once(&self.neurons).chain(self.overrides.iter().map(|o| &o.params))
    }

    fn validate(
        &self,
        known_role: &dyn Fn(&Id, &str) -> Result<(), ContractError>,
    ) -> Result<(), ContractError> {
        exact(&self.id, LIF_EXP_DELAY, "kernel.id")?;
        if self.tick_ns == 0 {
            return Err(ContractError::rule("kernel.tickNs", "must be >= 1"));
        }
        check::finite(self.synapse_mv, "kernel.synapseMv")?;
        check::finite(self.input_mv, "kernel.inputMv")?;
        rate_alpha(self.rate_alpha)?;
        self.validate_neurons(&self.neurons, "kernel.neurons")?;
        if self.overrides.len() + 1 > MAX_NEURON_CLASSES {
            return Err(ContractError::rule(
                "kernel.overrides",
                format!("at most {} overrides", MAX_NEURON_CLASSES - 1),
            ));
        }
        for (i, o) in self.overrides.iter().enumerate() {
            known_role(&o.role, &format!("kernel.overrides[{i}].role"))?;
            self.validate_neurons(&o.params, &format!("kernel.overrides[{i}].params"))?;
        }
        for (i, p) in self.poisson.iter().enumerate() {
            known_role(&p.role, &format!("kernel.poisson[{i}].role"))?;
            non_negative(p.rate_hz, &format!("kernel.poisson[{i}].rateHz"))?;
        }
        Ok(())
    }

    fn validate_neurons(&self, n: &NeuronParams, path: &str) -> Result<(), ContractError> {
        check::finite(n.rest_mv, &format!("{path}.restMv"))?;
        check::finite(n.reset_mv, &format!("{path}.resetMv"))?;
        check::finite(n.threshold_mv, &format!("{path}.thresholdMv"))?;
        positive(n.tau_membrane_ms, &format!("{path}.tauMembraneMs"))?;
        positive(n.tau_synapse_ms, &format!("{path}.tauSynapseMs"))?;
        non_negative(n.refractory_ms, &format!("{path}.refractoryMs"))?;
        if self.ticks(n.refractory_ms) > MAX_DELAY_TICKS {
            return Err(ContractError::rule(
                format!("{path}.refractoryMs"),
                format!("at most {MAX_DELAY_TICKS} ticks"),
            ));
        }
        positive(n.delay_ms, &format!("{path}.delayMs"))?;
        let delay = self.ticks(n.delay_ms);
        if !(1..=MAX_DELAY_TICKS).contains(&delay) {
            return Err(ContractError::rule(
                format!("{path}.delayMs"),
                format!("must be 1..={MAX_DELAY_TICKS} ticks, found {delay}"),
            ));
        }
        Ok(())
    }
}

fn rate_alpha(v: f64) -> Result<(), ContractError> {
    positive(v, "kernel.rateAlpha")?;
    if v > 1.0 {
        return Err(ContractError::rule("kernel.rateAlpha", "must be <= 1"));
    }
    Ok(())
}

/// A finite value above 0.
pub(crate) fn positive(v: f64, path: &str) -> Result<(), ContractError> {
    check::finite(v, path)?;
    if v > 0.0 {
        Ok(())
    } else {
        Err(ContractError::rule(path, format!("must be > 0, found {v}")))
    }
}

/// A finite value at least 0.
pub(crate) fn non_negative(v: f64, path: &str) -> Result<(), ContractError> {
    check::finite(v, path)?;
    if v >= 0.0 {
        Ok(())
    } else {
        Err(ContractError::rule(
            path,
            format!("must be >= 0, found {v}"),
        ))
    }
}

/// A string that must be the one value this build implements.
pub(crate) fn exact(found: &str, expected: &str, path: &str) -> Result<(), ContractError> {
    if found == expected {
        Ok(())
    } else {
        Err(ContractError::rule(
            path,
            format!("must be `{expected}` (the only one this build implements), found `{found}`"),
        ))
    }
}
