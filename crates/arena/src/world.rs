//! The counter arena: the smallest world a session can drive.
//!
//! Every port holds a signed counter, 0 at boundary 0. A step adds 1 to a port's counter when
//! its `press` button (or, for a port without one, any button) is down, and subtracts 1
//! otherwise. The one view, `counters`, is 8 pixels wide and one row per port; pixel `j` of a
//! row carries byte `j` of the counter (two's complement, big-endian) as
//! `R = b, G = 255 - b, B = 32 * j, A = 255`. Every observation is a fresh frame. The
//! inspection value is `{"step", "counters": [{"portId", "value"}]}`.
//!
//! It checkpoints exactly (`exact-checkpoint`): a capture is `FLYCTR01`, the step and every
//! counter as little-endian 64-bit integers.

use flysim_types::digest::sha256;
use flysim_types::plan::PlanEnvironment;
use flysim_types::workers::{
    Determinism, EnvironmentDescriptor, PixelAspect, PortControl, PortDescriptor, Recovery,
    ViewDescriptor, ViewFormat,
};
use flysim_types::{Digest, Id, TypedValue, U64};
use serde_json::{Value, json};

use crate::schemas::counter_inspection;
use flysim_component::backend::{BackendError, EnvironmentBackend, EnvironmentSetup, Frame};

/// The arena's one view.
pub const VIEW: &str = "counters";
/// Pixels per row of the view.
pub const VIEW_WIDTH: u32 = 8;

/// The counter arena.
#[derive(Debug)]
pub struct CounterArena {
    descriptor: EnvironmentDescriptor,
    counters: Vec<i64>,
    step: u64,
    staged: Option<(Vec<i64>, u64)>,
}

/// The magic of a counter arena capture: then the step and each counter, little-endian.
const CAPTURE_MAGIC: &[u8; 8] = b"FLYCTR01";

impl CounterArena {
    /// The arena for a plan's environment, with `configuration_digest` naming its effective
    /// configuration.
    ///
    /// # Errors
    ///
    /// [`BackendError::Invalid`] for a world this build does not have or more than 4 ports.
    pub fn new(env: &PlanEnvironment, configuration_digest: Digest) -> Result<Self, BackendError> {
        if env.identity != "counter-v1" {
            return Err(BackendError::Invalid(format!(
                "the arena world `{}` is not in this build (known: counter-v1)",
                env.identity
            )));
        }
        let height = u32::try_from(env.ports.len())
            .ok()
            .filter(|h| (1..=4).contains(h))
            .ok_or_else(|| BackendError::Invalid("the arena has 1 to 4 ports".into()))?;
        let view_id = Id::parse(VIEW).map_err(|e| BackendError::Invalid(e.to_string()))?;
        let descriptor = EnvironmentDescriptor {
            backend_digest: env.backend_digest,
            content_digest: sha256(b"flysim/arena/counter-v1"),
            configuration_digest,
            step_duration: env.step_duration,
            ports: env
                .ports
                .iter()
                .map(|p| PortDescriptor {
                    port_id: p.port_id.clone(),
                    controls: p.controls.clone(),
                })
                .collect(),
            inspection_schema: counter_inspection(),
            views: vec![ViewDescriptor {
                view_id,
                width: VIEW_WIDTH,
                height,
                format: ViewFormat::Rgba8,
                row_stride: VIEW_WIDTH * 4,
                pixel_aspect: PixelAspect {
                    numerator: 1,
                    denominator: 1,
                },
                observation_delay_steps: 0,
            }],
            audio: Vec::new(),
            recovery: Recovery::ExactCheckpoint,
            determinism: Determinism::FixedBuild,
        };
        Ok(Self {
            counters: vec![0; env.ports.len()],
            descriptor,
            step: 0,
            staged: None,
        })
    }

    /// The counters, in port order.
    #[must_use]
    pub fn counters(&self) -> &[i64] {
        &self.counters
    }
}

impl EnvironmentBackend for CounterArena {
    fn descriptor(&self) -> &EnvironmentDescriptor {
        &self.descriptor
    }

    fn initialize(&mut self, _setup: &EnvironmentSetup) -> Result<(), BackendError> {
        self.counters.iter_mut().for_each(|c| *c = 0);
        self.step = 0;
        Ok(())
    }

    fn advance(&mut self, controls: &[PortControl]) -> Result<(), BackendError> {
        if controls.len() != self.counters.len() {
            return Err(BackendError::Invalid(
                "one control per port, in descriptor order".into(),
            ));
        }
        // Only a restored step can be this far on; refused before anything changes.
        let next = self
            .step
            .checked_add(1)
            .ok_or_else(|| BackendError::Fault("the arena's step counter is exhausted".into()))?;
        for (counter, control) in self.counters.iter_mut().zip(controls) {
            let press = control.buttons.iter().find(|b| b.id.as_str() == "press");
            let down = match press {
                Some(b) => b.down,
                None => control.buttons.iter().any(|b| b.down),
            };
            *counter = counter.saturating_add(if down { 1 } else { -1 });
        }
        self.step = next;
        Ok(())
    }

    fn frames(&self) -> Vec<Frame> {
        let mut bytes = Vec::with_capacity(self.counters.len() * VIEW_WIDTH as usize * 4);
        for counter in &self.counters {
            for (j, b) in counter.to_be_bytes().into_iter().enumerate() {
                bytes.extend_from_slice(&[b, 255 - b, (j as u8) * 32, 255]);
            }
        }
        vec![Frame {
            view_id: self.descriptor.views[0].view_id.clone(),
            bytes: std::sync::Arc::new(bytes),
        }]
    }

    fn inspection(&self) -> Result<TypedValue, BackendError> {
        let counters: Vec<Value> = self
            .descriptor
            .ports
            .iter()
            .zip(&self.counters)
            .map(|(p, c)| json!({"portId": p.port_id, "value": c}))
            .collect();
        let value = json!({"step": U64(self.step), "counters": counters});
        Ok(TypedValue {
            schema: counter_inspection(),
            value: flysim_component::task::json_object(value),
        })
    }

    fn engine_frame(&self) -> Option<String> {
        Some(self.step.to_string())
    }

    fn work(&self) -> u64 {
        self.step
    }

    /// A counter per port and a frame of a few bytes each: microseconds a step.
    fn quick(&self) -> bool {
        true
    }

    fn capture(&self) -> Result<Vec<u8>, BackendError> {
        let mut out = CAPTURE_MAGIC.to_vec();
        out.extend_from_slice(&self.step.to_le_bytes());
        for c in &self.counters {
            out.extend_from_slice(&c.to_le_bytes());
        }
        Ok(out)
    }

    fn stage_restore(&mut self, payload: &[u8]) -> Result<(), BackendError> {
        let expected = 16 + 8 * self.counters.len();
        if payload.len() != expected || !payload.starts_with(CAPTURE_MAGIC) {
            return Err(BackendError::Incompatible(format!(
                "a capture of this {}-port arena is {expected} bytes starting `FLYCTR01`",
                self.counters.len()
            )));
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&payload[at..at + 8]);
            b
        };
        let step = u64::from_le_bytes(word(8));
        if step == u64::MAX {
            return Err(BackendError::Incompatible(
                "a capture at step 2^64-1 cannot advance".into(),
            ));
        }
        let counters = (0..self.counters.len())
            .map(|i| i64::from_le_bytes(word(16 + 8 * i)))
            .collect();
        self.staged = Some((counters, step));
        Ok(())
    }

    fn activate_restore(&mut self) -> Result<(), BackendError> {
        let (counters, step) = self
            .staged
            .take()
            .ok_or_else(|| BackendError::Invalid("no staged capture to activate".into()))?;
        self.counters = counters;
        self.step = step;
        Ok(())
    }
}

/// Reads the counters back from an arena frame (what an agent sensing pixels would decode).
#[must_use]
pub fn decode_frame(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(VIEW_WIDTH as usize * 4)
        .map(|row| {
            let mut be = [0u8; 8];
            for (j, px) in row.chunks_exact(4).enumerate() {
                be[j] = px[0];
            }
            i64::from_be_bytes(be)
        })
        .collect()
}
