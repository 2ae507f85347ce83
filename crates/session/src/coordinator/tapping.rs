//! Hands the committed boundary's frames to the frame tap, if one is set and wants the
//! boundary. Called once the boundary is `Ready`; it reads the committed observation and its
//! artifacts and changes nothing the row records.
//!
//! It knows nothing of what the tap does with a frame (`crate::tap`).

use super::Coordinator;
use crate::tap::TappedFrame;

impl Coordinator {
    /// Gives every view of the committed boundary to the tap (a bus artifact is read; an
    /// unreadable one is skipped, which the tap's owner sees as a missing frame).
    pub(super) async fn tap_frames(&self) {
        let Some(tap) = self.frame_tap.as_ref().filter(|t| t.wants(self.step)) else {
            return;
        };
        let Some(committed) = &self.committed else {
            return;
        };
        for view in &committed.observation.sensory_views {
            let Some((_, artifact)) = committed
                .frames
                .iter()
                .find(|(_, a)| a.reference() == &view.pixels)
            else {
                continue;
            };
            let read;
            let bytes = match artifact.local_bytes() {
                Some(bytes) => bytes,
                None => match artifact.read().await {
                    Ok(bytes) => {
                        read = bytes;
                        &read
                    }
                    Err(_) => continue,
                },
            };
            let descriptor = self
                .descriptor
                .as_ref()
                .and_then(|d| d.views.iter().find(|v| v.view_id == view.view_id));
            (tap.sink)(&TappedFrame {
                boundary: self.step,
                view_id: &view.view_id,
                view: descriptor,
                bytes,
            });
        }
    }
}
