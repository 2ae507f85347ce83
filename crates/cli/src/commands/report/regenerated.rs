//! The one re-execution a report makes: the run is regenerated once, from the first boundary
//! any picture needs to the last, with every row and frame checked against the trace
//! (`flysim_run::regenerate_with_spikes`), and it keeps the frames of the reward strip, every
//! `stride`-th frame of the clip and each LIF agent's spikes in the raster's window.
//!
//! It knows nothing of how pictures are drawn or laid out; it hands back what it kept.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use flysim_run::spikes::SpikeStep;
use flysim_session::TappedFrame;

use crate::error::CliError;
use crate::picture::Picture;

/// The frames and spikes a report asks for, as boundaries.
#[derive(Debug, Clone, Default)]
pub(super) struct Wanted {
    /// The boundaries of the reward strip.
    pub(super) strip: Vec<u64>,
    /// The clip's boundaries (inclusive) and how many frames apart the kept ones are.
    pub(super) clip: Option<(u64, u64, u64)>,
    /// The raster's window: the spikes of the steps ending at `from + 1..=to`.
    pub(super) raster: Option<(u64, u64)>,
}

/// One agent's spikes by boundary: `(brain tick, neuron)`, `None` for a step it did not record.
pub(super) type StepSpikes = BTreeMap<u64, Option<Vec<(u64, u32)>>>;

/// What the re-execution kept, each frame checked against its recorded view digest.
#[derive(Debug, Default)]
pub(super) struct Kept {
    /// The first view's frame at each strip boundary.
    pub(super) strip: Vec<(u64, Picture)>,
    /// The first view's frames of the clip, in order.
    pub(super) clip: Vec<Picture>,
    /// Each LIF agent's spikes by boundary: `None` for a step the agent did not record.
    pub(super) spikes: BTreeMap<String, StepSpikes>,
}

impl Wanted {
    /// The boundaries the re-execution must hand frames for (`None`: no frame is wanted).
    fn frames(&self) -> Option<(u64, u64)> {
        let firsts = self.strip.first().copied().into_iter();
        let lasts = self.strip.last().copied().into_iter();
        let from = firsts.chain(self.clip.map(|c| c.0)).min()?;
        let to = lasts.chain(self.clip.map(|c| c.1)).max()?;
        Some((from, to))
    }

    /// Whether the frame of `boundary` is kept for the strip or the clip.
    fn keeps(&self, boundary: u64) -> (bool, bool) {
        let strip = self.strip.contains(&boundary);
        let clip = self.clip.is_some_and(|(a, b, stride)| {
            (a..=b).contains(&boundary) && (boundary - a).is_multiple_of(stride.max(1))
        });
        (strip, clip)
    }
}

/// Keeps the frame if the strip or the clip wants it (the first view of a boundary only).
fn keep_frame(frame: &TappedFrame<'_>, wanted: &Wanted, kept: &Mutex<(Kept, Option<u64>)>) {
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.1 == Some(frame.boundary) {
        return;
    }
    kept.1 = Some(frame.boundary);
    let (strip, clip) = wanted.keeps(frame.boundary);
    if !strip && !clip {
        return;
    }
    let Some(picture) = frame
        .view
        .and_then(|v| Picture::from_rows(frame.bytes, v.width, v.height, v.row_stride as usize))
    else {
        return;
    };
    if strip {
        kept.0.strip.push((frame.boundary, picture.clone()));
    }
    if clip {
        kept.0.clip.push(picture);
    }
}

/// Re-executes the run in `dir` once and keeps what `wanted` asks for; nothing when it asks for
/// no frame, or the run records no view.
pub(super) fn regenerate(dir: &Path, wanted: &Wanted) -> Result<Kept, CliError> {
    let Some((from, frames_to)) = wanted.frames() else {
        return Ok(Kept::default());
    };
    let to = frames_to.max(wanted.raster.map_or(0, |r| r.1));
    let kept = Arc::new(Mutex::new((Kept::default(), None)));
    let frame_sink = {
        let (kept, wanted) = (Arc::clone(&kept), wanted.clone());
        Arc::new(move |frame: &TappedFrame<'_>| {
            if frame.boundary <= frames_to {
                keep_frame(frame, &wanted, &kept);
            }
        })
    };
    let spike_sink = {
        let (kept, window) = (Arc::clone(&kept), wanted.raster);
        Arc::new(move |step: &SpikeStep<'_>| {
            let Some((a, b)) = window else { return };
            if step.boundary <= a || step.boundary > b {
                return;
            }
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            kept.0
                .spikes
                .entry(step.agent_id.to_string())
                .or_default()
                .insert(step.boundary, step.spikes.map(<[_]>::to_vec));
        })
    };
    let mut bar = crate::progress::Bar::new();
    let host = crate::host::host();
    match flysim_run::regenerate_with_spikes(dir, from, to, frame_sink, spike_sink, &host, &mut bar)
    {
        Ok(_) => {}
        Err(flysim_run::RunError::NoViews { .. }) => return Ok(Kept::default()),
        Err(e) => return Err(e.into()),
    }
    Ok(std::mem::take(
        &mut kept.lock().unwrap_or_else(PoisonError::into_inner).0,
    ))
}
