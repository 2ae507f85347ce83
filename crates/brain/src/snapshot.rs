//! Brain snapshots (`FLYBRST` 0x01, format version 1): the whole mutable state of a [`Brain`]
//! as bytes, with the identities it belongs to and a SHA-256 trailer, and the exact restore.
//!
//! Layout (little-endian): magic, version, profile digest, connectome digest, seed, counters,
//! activity, the noise state (0 for `lif-exp-delay-v1`), the calibration and learning flags, the
//! kernel's per-neuron state (see [`crate::dynamics`]), retina drive, stimulation remaining,
//! rates, baselines, learning state, readout state, trailer. A restore is two steps:
//! [`Brain::check_snapshot`] reads and checks everything into a [`CheckedSnapshot`] without
//! changing the brain, [`Brain::install_snapshot`] installs it. This module knows the byte
//! layout; which values a run reaches is checked by the kernels (`dynamics`) and
//! `snapshot_check`.

use flysim_types::Digest;

use crate::dynamics::Dynamics;
use crate::error::BrainError;
use crate::model::{Activity, Brain, Counters};
use crate::plasticity::LearningState;
use crate::readout::ReadoutState;

/// The snapshot magic.
const SNAPSHOT_MAGIC: [u8; 8] = *b"FLYBRST\x01";
/// The snapshot format version.
const SNAPSHOT_VERSION: u32 = 1;

/// A snapshot being written.
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub(crate) fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub(crate) fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    /// A length prefix and the values.
    pub(crate) fn f32s(&mut self, v: &[f32]) {
        self.len(v.len());
        v.iter().for_each(|x| self.bytes(&x.to_le_bytes()));
    }
}

/// A snapshot being read.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&[u8], BrainError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| BrainError::SnapshotCorrupt {
                reason: "the snapshot ends early".into(),
            })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, BrainError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, BrainError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, BrainError> {
        let mut x = [0u8; 8];
        x.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(x))
    }
    pub(crate) fn f64(&mut self) -> Result<f64, BrainError> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub(crate) fn bool(&mut self) -> Result<bool, BrainError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(BrainError::SnapshotCorrupt {
                reason: format!("a flag byte is {v}"),
            }),
        }
    }
    /// A length prefix that must equal `expected`.
    pub(crate) fn len(&mut self, expected: usize, what: &str) -> Result<(), BrainError> {
        let n = self.u64()?;
        if n != expected as u64 {
            return Err(BrainError::SnapshotMismatch {
                reason: format!("{what}: the snapshot has {n}, this model {expected}"),
            });
        }
        Ok(())
    }
    pub(crate) fn f32s(&mut self, n: usize, what: &str) -> Result<Vec<f32>, BrainError> {
        self.len(n, what)?;
        Ok(self
            .take(n * 4)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    pub(crate) fn f64s(&mut self, n: usize, what: &str) -> Result<Vec<f64>, BrainError> {
        self.len(n, what)?;
        (0..n).map(|_| self.f64()).collect()
    }
    pub(crate) fn u64s(&mut self, n: usize, what: &str) -> Result<Vec<u64>, BrainError> {
        self.len(n, what)?;
        (0..n).map(|_| self.u64()).collect()
    }
}

impl Brain {
    /// The whole mutable state as bytes: magic `FLYBRST\x01`, version, the identities (profile
    /// digest, connectome digest, seed), every counter and array, and a SHA-256 trailer.
    #[must_use]
    pub fn capture(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.bytes(&SNAPSHOT_MAGIC);
        w.u32(SNAPSHOT_VERSION);
        w.bytes(self.profile_digest.as_bytes());
        w.bytes(self.connectome.digest().as_bytes());
        w.u32(self.seed as u32);
        w.u64(self.counters.ticks);
        w.u64(self.counters.draws);
        w.u64(self.counters.decodes);
        w.u64(self.activity.spikes);
        w.u64(self.activity.events);
        w.u32(self.dynamics.noise_state());
        w.u8(u8::from(self.calibrated));
        w.u8(u8::from(self.learning_enabled));
        self.dynamics.write(&mut w);
        w.len(self.drive.len());
        self.drive.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(self.stim_remaining.len());
        self.stim_remaining.iter().for_each(|&v| w.u64(v));
        w.len(self.rates.len());
        self.rates.iter().for_each(|&v| w.f64(v));
        w.f64(self.population_rate);
        w.len(self.baseline_rates.len());
        self.baseline_rates.iter().for_each(|&v| w.f64(v));
        let l = &self.learning;
        w.len(l.gains.len());
        l.gains.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(l.traces.len());
        l.traces.iter().for_each(|v| w.bytes(&v.to_le_bytes()));
        w.len(l.touched.len());
        l.touched.iter().for_each(|&v| w.u64(v));
        w.len(l.last_spike.len());
        l.last_spike.iter().for_each(|&v| w.u64(v as u64));
        w.u64(l.updates);
        w.u64(l.changed);
        w.f64(l.signal);
        let r = &self.readout;
        w.u8(r.winner.map_or(255, |b| b as u8));
        w.u64(r.next_decision);
        r.pulse_until.iter().for_each(|&v| w.u64(v));
        r.cooldown_until.iter().for_each(|&v| w.u64(v));
        let digest = flysim_types::digest::sha256(&w.0);
        w.bytes(digest.as_bytes());
        w.0
    }

    /// Loads a snapshot taken by [`Brain::capture`] of a brain built from the same profile,
    /// connectome and seed: [`Brain::check_snapshot`], then [`Brain::install_snapshot`]. On
    /// refusal the brain is unchanged.
    ///
    /// # Errors
    ///
    /// As [`Brain::check_snapshot`].
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), BrainError> {
        let checked = self.check_snapshot(bytes)?;
        self.install_snapshot(checked)
    }

    /// Reads and checks a snapshot without installing it: the magic, the SHA-256 trailer, the
    /// version, the identities (profile digest, connectome digest, seed), every array's length,
    /// and every value (see [`CheckedSnapshot`]). Only this brain's model is read, never its
    /// mutable state, so the result can be installed later, whatever ran in between.
    ///
    /// # Errors
    ///
    /// [`BrainError::SnapshotCorrupt`] for bytes that are not an intact snapshot,
    /// [`BrainError::SnapshotMismatch`] for a snapshot of another model,
    /// [`BrainError::SnapshotOutOfRange`] for an intact snapshot holding a state no run reaches.
    pub fn check_snapshot(&self, bytes: &[u8]) -> Result<CheckedSnapshot, BrainError> {
        let corrupt = |reason: &str| BrainError::SnapshotCorrupt {
            reason: reason.to_owned(),
        };
        if bytes.len() < 8 + 4 + 32 || bytes[..8] != SNAPSHOT_MAGIC {
            return Err(corrupt("not a brain snapshot (magic)"));
        }
        let (body, trailer) = bytes.split_at(bytes.len() - 32);
        if flysim_types::digest::sha256(body).as_bytes()[..] != *trailer {
            return Err(corrupt("the SHA-256 trailer does not match"));
        }
        let mut r = Reader { bytes: body, at: 8 };
        let version = r.u32()?;
        if version != SNAPSHOT_VERSION {
            return Err(corrupt(&format!(
                "snapshot version {version} is not supported"
            )));
        }
        let mismatch = |reason: String| BrainError::SnapshotMismatch { reason };
        if r.take(32)? != self.profile_digest.as_bytes() {
            return Err(mismatch("the profile digest differs".into()));
        }
        if r.take(32)? != self.connectome.digest().as_bytes() {
            return Err(mismatch("the connectome digest differs".into()));
        }
        let seed = r.u32()? as i32;
        if seed != self.seed {
            return Err(mismatch(format!("seed {seed}, this model {}", self.seed)));
        }
        let counters = Counters {
            ticks: r.u64()?,
            draws: r.u64()?,
            decodes: r.u64()?,
        };
        let activity = Activity {
            spikes: r.u64()?,
            events: r.u64()?,
        };
        let noise = r.u32()?;
        let calibrated = r.bool()?;
        let learning_enabled = r.bool()?;
        let dynamics = self.dynamics.read(noise, &mut r)?;
        let drive = r.f32s(self.drive.len(), "retina columns")?;
        let stim_remaining = r.u64s(self.stim_remaining.len(), "stimulus kinds")?;
        let rates = r.f64s(self.rates.len(), "rate roles")?;
        let population_rate = r.f64()?;
        let baseline_rates = r.f64s(self.rates.len(), "rate roles")?;
        let slots = self.learning.gains.len();
        let gains = r.f32s(slots, "plastic slots")?;
        let traces = r.f32s(slots, "plastic slots")?;
        let touched = r.u64s(slots, "plastic slots")?;
        let last_spike: Vec<i64> = r
            .u64s(self.learning.last_spike.len(), "stamped neurons")?
            .into_iter()
            .map(|v| v as i64)
            .collect();
        let learning = LearningState {
            gains,
            traces,
            touched,
            last_spike,
            updates: r.u64()?,
            changed: r.u64()?,
            signal: r.f64()?,
        };
        let winner = match r.u8()? {
            255 => None,
            b => Some(
                *crate::profile::Button::ALL
                    .get(b as usize)
                    .ok_or_else(|| corrupt("unknown held button"))?,
            ),
        };
        let next_decision = r.u64()?;
        let mut pulse_until = [0u64; 8];
        for v in &mut pulse_until {
            *v = r.u64()?;
        }
        let mut cooldown_until = [0u64; 8];
        for v in &mut cooldown_until {
            *v = r.u64()?;
        }
        if r.at != body.len() {
            return Err(corrupt("bytes follow the last field"));
        }
        let checked = CheckedSnapshot {
            identity: self.identity(),
            counters,
            activity,
            dynamics,
            calibrated,
            learning_enabled: learning_enabled && self.plastic.is_some(),
            drive,
            stim_remaining,
            rates,
            population_rate,
            baseline_rates,
            learning,
            readout: ReadoutState {
                winner,
                next_decision,
                pulse_until,
                cooldown_until,
            },
        };
        self.check_values(&checked)?;
        Ok(checked)
    }

    /// Installs a snapshot [`Brain::check_snapshot`] accepted: the whole mutable state is
    /// replaced by it, exactly.
    ///
    /// # Errors
    ///
    /// [`BrainError::SnapshotMismatch`] when it was checked against a brain of another model
    /// (profile, connectome or seed); the brain is then unchanged.
    pub fn install_snapshot(&mut self, snapshot: CheckedSnapshot) -> Result<(), BrainError> {
        if snapshot.identity != self.identity() {
            return Err(BrainError::SnapshotMismatch {
                reason: "the snapshot was checked against a brain of another model".into(),
            });
        }
        self.counters = snapshot.counters;
        self.activity = snapshot.activity;
        self.dynamics = snapshot.dynamics;
        self.calibrated = snapshot.calibrated;
        self.learning_enabled = snapshot.learning_enabled;
        self.drive = snapshot.drive;
        self.stim_remaining = snapshot.stim_remaining;
        self.rates = snapshot.rates;
        self.population_rate = snapshot.population_rate;
        self.baseline_rates = snapshot.baseline_rates;
        self.learning = snapshot.learning;
        self.readout = snapshot.readout;
        Ok(())
    }

    /// What a snapshot must match: the profile digest, the connectome digest and the seed.
    fn identity(&self) -> (Digest, Digest, i32) {
        (self.profile_digest, self.connectome.digest(), self.seed)
    }
}

/// A snapshot read and checked against a brain's model by [`Brain::check_snapshot`], ready for
/// [`Brain::install_snapshot`]: the whole mutable state of a brain, each value one a run of the
/// model reaches (the checks are listed in `docs/brain.md`, "The model API").
#[derive(Debug)]
pub struct CheckedSnapshot {
    /// The profile digest, connectome digest and seed it was checked against.
    identity: (Digest, Digest, i32),
    pub(crate) counters: Counters,
    pub(crate) activity: Activity,
    pub(crate) dynamics: Dynamics,
    pub(crate) calibrated: bool,
    pub(crate) learning_enabled: bool,
    pub(crate) drive: Vec<f32>,
    pub(crate) stim_remaining: Vec<u64>,
    pub(crate) rates: Vec<f64>,
    pub(crate) population_rate: f64,
    pub(crate) baseline_rates: Vec<f64>,
    pub(crate) learning: LearningState,
    pub(crate) readout: ReadoutState,
}
