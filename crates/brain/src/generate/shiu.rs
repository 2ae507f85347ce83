//! Generators for `lif-exp-delay-v1`: the Shiu et al. 2024 reference parameters, a profile that
//! drives chosen neurons with Poisson input on any connectome, and synthetic graphs with the
//! statistics of that model's FlyWire v783 graph (sign per presynaptic neuron, heavy-tailed
//! degrees and synapse counts).
//!
//! Random choices come from the xorshift32 stream `shiu-graph-v1` of the generator seed, so the
//! output is a pure function of the arguments. This module knows nothing of how a kernel runs.

use flysim_types::Id;

use crate::connectome::Connectome;
use crate::profile::{
    ConnectomeRef, ExpDelayParams, Kernel, LIF_EXP_DELAY, NeuronOverride, NeuronParams,
    PoissonDrive, Profile, Retina, Role,
};
use crate::rng::XorShift32;

use super::{GENERATOR_SEED, default_readout, id};

/// FlyWire v783 as the Shiu et al. 2024 model uses it: neurons.
pub const FLYWIRE_783_NEURONS: u32 = 138_639;
/// FlyWire v783 as the Shiu et al. 2024 model uses it: connections (neuron pairs).
pub const FLYWIRE_783_CONNECTIONS: u64 = 15_091_983;

/// The neuron parameters of the Shiu et al. 2024 model: v0 = v_reset = −52 mV, vth = −45 mV,
/// τm = 20 ms, τs = 5 ms, refractory 2.2 ms, delay 1.8 ms.
#[must_use]
pub fn shiu_neurons() -> NeuronParams {
    NeuronParams {
        rest_mv: -52.0,
        reset_mv: -52.0,
        threshold_mv: -45.0,
        tau_membrane_ms: 20.0,
        tau_synapse_ms: 5.0,
        refractory_ms: 2.2,
        delay_ms: 1.8,
    }
}

/// The kernel of the Shiu et al. 2024 model at dt = 0.1 ms: 0.275 mV per synapse, Poisson
/// events of 250 × 0.275 = 68.75 mV, and the driven role without a refractory period (as that
/// model sets for its Poisson targets), driven at `rate_hz`.
#[must_use]
pub fn shiu_kernel(driven: &Id, rate_hz: f64) -> ExpDelayParams {
    ExpDelayParams {
        id: LIF_EXP_DELAY.to_owned(),
        tick_ns: 100_000,
        synapse_mv: 0.275,
        input_mv: 68.75,
        rate_alpha: 0.004,
        neurons: shiu_neurons(),
        overrides: vec![NeuronOverride {
            role: driven.clone(),
            params: NeuronParams {
                refractory_ms: 0.0,
                ..shiu_neurons()
            },
        }],
        poisson: vec![PoissonDrive {
            role: driven.clone(),
            rate_hz,
        }],
    }
}

/// A profile for `conn` on the Shiu et al. 2024 kernel: role `driven` (the given neurons,
/// ascending and unique) gets Poisson input at `rate_hz`; rate roles `driven` and `all`; no
/// retina channels, no readout bindings, no stimuli, no learning.
#[must_use]
pub fn shiu_profile(conn: &Connectome, name: &str, driven: Vec<u32>, rate_hz: f64) -> Profile {
    let driven_id = id("driven");
    Profile {
        format: crate::profile::FORMAT.to_owned(),
        id: id(name),
        description: format!(
            "The Shiu et al. 2024 whole-brain LIF model, {} neurons driven at {rate_hz} Hz",
            driven.len()
        ),
        connectome: ConnectomeRef {
            file: format!("{name}.flycsr"),
            digest: conn.digest(),
            neurons: conn.neurons(),
            edges: conn.edges() as u32,
        },
        kernel: Kernel::ExpDelay(shiu_kernel(&driven_id, rate_hz)),
        roles: vec![
            Role {
                id: id("all"),
                neurons: (0..conn.neurons()).collect(),
            },
            Role {
                id: driven_id.clone(),
                neurons: driven,
            },
        ],
        rate_roles: vec![id("all"), driven_id],
        retina: Retina {
            width: 1,
            height: 1,
            layout: crate::profile::RetinaLayout::Frame,
            channels: Vec::new(),
        },
        readout: crate::profile::Readout {
            bindings: Vec::new(),
            ..default_readout(0, 1)
        },
        stimuli: Vec::new(),
        plasticity: None,
    }
}

/// A graph with the statistics of the Shiu et al. 2024 FlyWire v783 graph: every neuron is
/// inhibitory with probability `inhibitory` (all its outgoing counts negative); out-degrees are
/// heavy-tailed (Pareto, shape 1.5) with `connections` in total; targets favour a heavy-tailed
/// subset of neurons (index `perm[floor(n·u²)]`); a connection's synapse count is
/// `1 + floor(2.6·(u^(−1/2.2) − 1))` (mean about 3.6, heavy tail), capped at 2,000. A row's
/// repeated targets and self-edges are dropped, so the edge count is a little below
/// `connections`.
///
/// # Panics
///
/// Never for `neurons >= 2` (the edges are in range and the counts fit).
#[must_use]
pub fn shiu_like(neurons: u32, connections: u64, inhibitory: f64, seed: i32) -> Connectome {
    let mut rng = XorShift32::stream(seed ^ GENERATOR_SEED, "shiu-graph-v1");
    let n = neurons as usize;
    let sign: Vec<i64> = (0..n)
        .map(|_| if rng.next_f64() < inhibitory { -1 } else { 1 })
        .collect();
    let mut perm: Vec<u32> = (0..neurons).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u32 + 1) as usize;
        perm.swap(i, j);
    }
    let raw: Vec<f64> = (0..n)
        .map(|_| libm::pow(1.0 - rng.next_f64(), -1.0 / 1.5))
        .collect();
    let total: f64 = raw.iter().sum();
    let scale = connections as f64 / total;
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0u32);
    let mut targets = Vec::with_capacity(connections as usize);
    let mut weights = Vec::with_capacity(connections as usize);
    for (pre, &r) in raw.iter().enumerate() {
        let degree = ((r * scale) as usize).min(n - 1);
        let mut row: Vec<u32> = (0..degree)
            .map(|_| {
                let u = rng.next_f64();
                perm[((u * u) * n as f64) as usize % n]
            })
            .filter(|&t| t as usize != pre)
            .collect();
        row.sort_unstable();
        row.dedup();
        for t in row {
            let u = 1.0 - rng.next_f64();
            let count = (1.0 + libm::floor(2.6 * (libm::pow(u, -1.0 / 2.2) - 1.0))).min(2_000.0);
            targets.push(t);
            weights.push((sign[pre] * count as i64) as i16);
        }
        indptr.push(targets.len() as u32);
    }
    let meta = [
        ("dataset".to_owned(), "shiu-like-synthetic".to_owned()),
        ("importer".to_owned(), "generate::shiu_like".to_owned()),
    ]
    .into_iter()
    .collect();
    Connectome::from_csr(indptr, targets, weights, None, meta)
        .unwrap_or_else(|e| unreachable!("generated edges are valid: {e}"))
}

/// `k` distinct neurons of `0..n` (ascending) from the generator stream `name`.
#[must_use]
pub fn pick_neurons(n: u32, k: usize, name: &str) -> Vec<u32> {
    let mut rng = XorShift32::stream(GENERATOR_SEED, name);
    let all: Vec<u32> = (0..n).collect();
    super::pick(&mut rng, &all, k)
}

/// Poisson rate (Hz) of a retina column that sees its band, in `arena-shiu-v1`.
pub const ARENA_SHIU_PIXEL_HZ: f64 = 400.0;

/// `arena-shiu-v1`: the `arena-toy-v1` connectome, retina and readout on the Shiu et al. 2024
/// kernel (reference neurons, no constant drive): a retina column that sees its band drives its
/// neuron at [`ARENA_SHIU_PIXEL_HZ`]; the `reward` stimulus drives its role at 500 Hz; the
/// readout's tick counts are ten times the toy's (the same milliseconds at 0.1 ms), its rate
/// EMA weight a tenth; no learning (the kernel has none). The circuit was wired for
/// `lif-1ms-v1`; on this kernel it is a deterministic fly for the arena, not a good player.
#[must_use]
pub fn arena_shiu_v1() -> (Connectome, Profile) {
    let (conn, toy) = super::arena_toy_v1();
    let mut p = toy;
    p.id = id("arena-shiu-v1");
    p.description =
        "The arena-toy-v1 network on the Shiu et al. 2024 kernel (lif-exp-delay-v1, 0.1 ms ticks)"
            .to_owned();
    p.kernel = Kernel::ExpDelay(ExpDelayParams {
        overrides: Vec::new(),
        poisson: Vec::new(),
        ..shiu_kernel(&id("driven"), 0.0)
    });
    for ch in &mut p.retina.channels {
        ch.gain = ARENA_SHIU_PIXEL_HZ;
    }
    for s in &mut p.stimuli {
        s.drive = 500.0;
    }
    let r = &mut p.readout;
    r.warmup_ticks *= 10;
    r.decide_every_ticks *= 10;
    r.pulse_hold_ticks *= 10;
    r.pulse_cooldown_ticks *= 10;
    p.plasticity = None;
    (conn, p)
}
