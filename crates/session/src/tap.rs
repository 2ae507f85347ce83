//! The frame tap: a way to look at the frames of committed boundaries as they pass, for tools
//! that regenerate a run's frames (frames are not stored in a run directory).
//!
//! It owns the tap's shape only. The coordinator calls it (`coordinator/tapping.rs`); what a
//! tap does with a frame (check it, write it) is its owner's business. A tap sees copies, never
//! reaches a worker, and cannot change a row.

use std::sync::Arc;

use flysim_types::Id;
use flysim_types::workers::ViewDescriptor;

/// One frame of one committed boundary, as a tap sees it.
#[derive(Debug, Clone, Copy)]
pub struct TappedFrame<'a> {
    /// The committed boundary.
    pub boundary: u64,
    /// The view the frame belongs to.
    pub view_id: &'a Id,
    /// The view's shape as the environment declared it (width, height, row stride).
    pub view: Option<&'a ViewDescriptor>,
    /// The frame: `rowStride * height` bytes of RGBA8.
    pub bytes: &'a [u8],
}

/// What a [`FrameTap`] calls with each frame.
pub type FrameSink = dyn Fn(&TappedFrame<'_>) + Send + Sync;

/// Frames of the committed boundaries `from..=to`, handed to `sink` in boundary order (within
/// a boundary, in the observation's view order).
#[derive(Clone)]
pub struct FrameTap {
    /// The first boundary tapped.
    pub from: u64,
    /// The last boundary tapped.
    pub to: u64,
    /// Called with each frame.
    pub sink: Arc<FrameSink>,
}

impl FrameTap {
    /// Whether the tap wants boundary `k`.
    #[must_use]
    pub fn wants(&self, k: u64) -> bool {
        (self.from..=self.to).contains(&k)
    }
}

impl std::fmt::Debug for FrameTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameTap")
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}
