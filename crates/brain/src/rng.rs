//! The kernels' random generator: xorshift32 on an `i32` state, and the rule that derives
//! every further stream from the agent seed.
//!
//! ```text
//! x ^= x << 13;  x ^= x >>> 17 (logical);  x ^= x << 5;  output = x as u32
//! ```
//!
//! Streams: the stream named `s` of agent seed `seed` is seeded with the first nonzero big-endian
//! u32 lane (as `i32`) of `SHA-256("flysim/brain-stream-v1" LF seed LF s LF)`, `seed` in decimal
//! with a leading `-` when negative. If all eight lanes are zero the material is rehashed with a
//! counter suffix (`1` LF, ...) until one is not. The names in use are [`NOISE`] and [`BASELINE`]
//! (`lif-1ms-v1`) and `poisson/i` per driven neuron `i` ([`POISSON_PREFIX`], `lif-exp-delay-v1`);
//! generators use their own names. The agent seed itself never seeds a generator directly.

use flysim_types::digest::sha256;
use flysim_types::seed::first_nonzero_lane;

/// The prefix of stream-derivation material.
pub const STREAM_PREFIX: &str = "flysim/brain-stream-v1";
/// The stream of noise kicks (one draw per kick).
pub const NOISE: &str = "noise";
/// The stream of per-neuron baselines (one draw per neuron, index order).
pub const BASELINE: &str = "baseline";
/// The prefix of the per-neuron Poisson streams of `lif-exp-delay-v1`: neuron `i`'s stream is
/// named `poisson/i` (`i` in decimal), one draw per active drive on it per tick.
pub const POISSON_PREFIX: &str = "poisson/";

/// xorshift32 with shifts 13, 17 (logical), 5 on an `i32` state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorShift32 {
    state: i32,
}

impl XorShift32 {
    /// A generator with the given state (a zero state stays zero forever; derived seeds never are).
    #[must_use]
    pub fn new(seed: i32) -> Self {
        Self { state: seed }
    }

    /// The generator of stream `name` for agent seed `seed` (see the module rule).
    #[must_use]
    pub fn stream(seed: i32, name: &str) -> Self {
        Self::new(stream_seed(seed, name))
    }

    /// The current state.
    #[must_use]
    pub fn state(&self) -> i32 {
        self.state
    }

    /// The next draw as `u32`.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.state as u32;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.state = x as i32;
        x
    }

    /// The next draw as a double in `[0, 1)`: `u32 / 2^32`.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        f64::from(self.next_u32()) / 4_294_967_296.0
    }

    /// The next draw reduced to `[0, n)` by `u32 mod n` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }
}

/// The seed of stream `name` for agent seed `seed`.
#[must_use]
pub fn stream_seed(seed: i32, name: &str) -> i32 {
    let material = format!("{STREAM_PREFIX}\n{seed}\n{name}\n");
    let mut round = 0u32;
    loop {
        let bytes = if round == 0 {
            material.clone()
        } else {
            format!("{material}{round}\n")
        };
        if let Some(lane) = first_nonzero_lane(&sha256(bytes.as_bytes())) {
            return lane;
        }
        round += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_vector_from_22222() {
        let mut rng = XorShift32::new(22_222);
        let draws: Vec<u32> = (0..4).map(|_| rng.next_u32()).collect();
        assert_eq!(
            draws,
            [1_374_414_818, 2_413_927_497, 829_730_269, 1_025_812_730]
        );
    }

    #[test]
    fn streams_differ_by_name_and_seed_and_are_stable() {
        let a = stream_seed(42, NOISE);
        assert_ne!(a, stream_seed(42, BASELINE));
        assert_ne!(a, stream_seed(43, NOISE));
        assert_eq!(a, stream_seed(42, NOISE));
        assert_ne!(stream_seed(0, NOISE), 0);
    }
}
