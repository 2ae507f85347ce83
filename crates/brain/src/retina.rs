//! The retina encoder: an RGBA8 frame becomes one drive value per column.
//!
//! Column `c = [neuron, x, y]` reads the pixel at `(x, y)` (row-major, 4 bytes per pixel, alpha
//! ignored) and computes, in f64, the Rec. 709 luminance `L = (0.2126 R + 0.7152 G + 0.0722 B) /
//! 255`, then its channel's response: `gain · L` (`on`), `gain · (1 − L)` (`off`), or `gain` when
//! `low <= L <= high` and 0 otherwise (`band`), stored as f32. Every tick until the next frame
//! adds `drive` to the column's neuron (channels in profile order, columns in channel order). No
//! frame means zero drive.

use crate::error::BrainError;
use crate::profile::{Response, Retina};

/// An RGBA8 frame, row-major, no padding.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: &'a [u8],
}

/// The drive of every column for `frame`.
///
/// # Errors
///
/// [`BrainError::FrameRefused`] when the frame's size differs from the retina's.
pub fn encode(retina: &Retina, frame: &Frame<'_>) -> Result<Vec<f32>, BrainError> {
    if frame.width != retina.width || frame.height != retina.height {
        return Err(BrainError::FrameRefused {
            reason: format!(
                "the frame is {}x{}, the retina reads {}x{}",
                frame.width, frame.height, retina.width, retina.height
            ),
        });
    }
    let expected = frame.width as usize * frame.height as usize * 4;
    if frame.rgba.len() != expected {
        return Err(BrainError::FrameRefused {
            reason: format!(
                "{} bytes of pixels, expected {expected} (RGBA8)",
                frame.rgba.len()
            ),
        });
    }
    Ok(retina
        .columns()
        .map(|(ch, &[_, x, y])| {
            let at = (y as usize * frame.width as usize + x as usize) * 4;
            let px = &frame.rgba[at..at + 4];
            let lum =
                (0.2126 * f64::from(px[0]) + 0.7152 * f64::from(px[1]) + 0.0722 * f64::from(px[2]))
                    / 255.0;
            let drive = match ch.response {
                Response::On => ch.gain * lum,
                Response::Off => ch.gain * (1.0 - lum),
                Response::Band { low, high } => {
                    if low <= lum && lum <= high {
                        ch.gain
                    } else {
                        0.0
                    }
                }
            };
            drive as f32
        })
        .collect())
}
