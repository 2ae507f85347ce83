//! The picture of a Dolphin world: its external framebuffer (XFB), read from emulated main
//! memory at a boundary and published as an RGBA8 view.
//!
//! The console's video interface scans the XFB out of main memory; it holds YUV 4:2:2 pixels
//! (`Y0 U Y1 V`, two pixels in four bytes), line after line. Reading those bytes at the paused
//! boundary is exact (they are the emulated state itself, so the same run gives the same bytes)
//! and cheap (one read of `2 × width × height` bytes and an integer conversion), and it needs no
//! renderer: it works with the Null video backend the lockstep runs. Its limit is that it shows
//! only what is in memory: a program that draws its XFB with the CPU (the project's test
//! program) shows its picture; a game draws with the GPU and its XFB reaches memory only through
//! a renderer's copy, which the Null backend does not make, so disc images show no view
//! (`docs/dolphin.md` says why the other routes were not taken).
//!
//! It knows the XFB's layout and the colour conversion. It does not know how memory is read
//! (the world) or what a view descriptor is beyond its shape.

use flysim_types::Id;
use flysim_types::workers::{PixelAspect, ViewDescriptor, ViewFormat};

/// The id of the view a Dolphin world publishes.
pub const VIEW: &str = "screen";

/// Where a content's XFB lies and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Xfb {
    /// Its first byte (cached or uncached mirror, or physical).
    pub address: u32,
    /// Pixels per line (even).
    pub width: u32,
    /// Lines.
    pub height: u32,
}

impl Xfb {
    /// Its bytes in memory: two per pixel.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.width as usize * self.height as usize * 2
    }

    /// The view it is published as: RGBA8, square pixels, produced at its boundary.
    #[must_use]
    pub fn descriptor(&self) -> ViewDescriptor {
        ViewDescriptor {
            view_id: Id::from_static(VIEW),
            width: self.width,
            height: self.height,
            format: ViewFormat::Rgba8,
            row_stride: self.width * 4,
            pixel_aspect: PixelAspect {
                numerator: 1,
                denominator: 1,
            },
            observation_delay_steps: 0,
        }
    }
}

/// One 8-bit channel from a fixed-point value scaled by 256.
fn channel(scaled: i32) -> u8 {
    u8::try_from(((scaled + 128) >> 8).clamp(0, 255)).unwrap_or(u8::MAX)
}

/// One pixel's RGBA from its luma and the pair's chroma: ITU-R BT.601 with studio-range input
/// (Y 16..235, U and V 16..240 around 128), in integer arithmetic scaled by 256, so every
/// machine converts the same bytes to the same pixels.
fn rgba(y: u8, u: u8, v: u8) -> [u8; 4] {
    let c = 298 * (i32::from(y) - 16);
    let d = i32::from(u) - 128;
    let e = i32::from(v) - 128;
    [
        channel(c + 409 * e),
        channel(c - 100 * d - 208 * e),
        channel(c + 516 * d),
        u8::MAX,
    ]
}

/// Converts YUV 4:2:2 bytes (`Y0 U Y1 V` per pixel pair) into RGBA8 in `out`, which it clears
/// first: `out` ends `2 × yuyv.len()` long (a trailing odd byte pair is ignored).
pub fn to_rgba(yuyv: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(yuyv.len() * 2);
    for quad in yuyv.chunks_exact(4) {
        let [y0, u, y1, v] = [quad[0], quad[1], quad[2], quad[3]];
        out.extend_from_slice(&rgba(y0, u, v));
        out.extend_from_slice(&rgba(y1, u, v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn studio_black_and_white_and_the_primaries_convert_to_their_rgb() {
        // Black and white of studio range, and a neutral grey.
        assert_eq!(rgba(16, 128, 128), [0, 0, 0, 255]);
        assert_eq!(rgba(235, 128, 128), [255, 255, 255, 255]);
        assert_eq!(rgba(126, 128, 128), [128, 128, 128, 255]);
        // BT.601 red, green and blue (Y, Cb, Cr of 100 % colour bars) within one step.
        let near = |got: [u8; 4], want: [u8; 3]| {
            got[..3].iter().zip(want).all(|(g, w)| g.abs_diff(w) <= 1)
        };
        assert!(
            near(rgba(81, 90, 240), [255, 0, 0]),
            "{:?}",
            rgba(81, 90, 240)
        );
        assert!(
            near(rgba(145, 54, 34), [0, 255, 0]),
            "{:?}",
            rgba(145, 54, 34)
        );
        assert!(
            near(rgba(41, 240, 110), [0, 0, 255]),
            "{:?}",
            rgba(41, 240, 110)
        );
    }

    #[test]
    fn a_pixel_pair_shares_its_chroma_and_keeps_its_own_luma() {
        let mut out = vec![9; 3];
        to_rgba(&[16, 128, 235, 128, 81, 90, 81, 240], &mut out);
        assert_eq!(out.len(), 16);
        assert_eq!(out[..8], [0, 0, 0, 255, 255, 255, 255, 255]);
        assert_eq!(out[8..12], out[12..16], "one pair, one colour");
        assert!(out[8] > 200 && out[9] < 20, "red: {:?}", &out[8..12]);
    }

    #[test]
    fn the_view_is_rgba_of_the_xfb_size() {
        let xfb = Xfb {
            address: 0x8010_0000,
            width: 640,
            height: 480,
        };
        assert_eq!(xfb.bytes(), 614_400);
        let d = xfb.descriptor();
        flysim_types::Payload::validate(&d).unwrap();
        assert_eq!((d.width, d.height, d.row_stride), (640, 480, 2560));
        assert_eq!(d.frame_bytes(), 2 * xfb.bytes() as u64);
    }
}
