//! Pictures as an animated GIF that loops: one palette of the pictures' own colours when they
//! have at most 256 (a Game Boy screen has four), else a fixed 6x7x6 colour cube (each pixel to
//! its nearest entry per channel). Every picture is shown for the same delay.
//!
//! It knows nothing of runs or frames: it is handed pictures of one size.

use std::collections::BTreeMap;

use crate::picture::Picture;

/// Why an animation could not be encoded.
fn failed(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("encoding a GIF: {e}"))
}

/// The palette and each pixel's index in it, for every picture.
fn indexed(pictures: &[Picture]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut colours: BTreeMap<[u8; 3], u8> = BTreeMap::new();
    for p in pictures {
        for px in p.rgba.chunks_exact(4) {
            let next = u8::try_from(colours.len()).unwrap_or(u8::MAX);
            if colours.len() <= 256 {
                colours.entry([px[0], px[1], px[2]]).or_insert(next);
            }
        }
    }
    if colours.len() <= 256 {
        let mut palette = vec![0; 3 * colours.len()];
        for (rgb, &i) in &colours {
            palette[3 * usize::from(i)..3 * usize::from(i) + 3].copy_from_slice(rgb);
        }
        let frames = pictures
            .iter()
            .map(|p| {
                p.rgba
                    .chunks_exact(4)
                    .map(|px| colours.get(&[px[0], px[1], px[2]]).copied().unwrap_or(0))
                    .collect()
            })
            .collect();
        return (palette, frames);
    }
    let levels = [6_u16, 7, 6];
    let level = |v: u8, n: u16| (u16::from(v) * (n - 1) + 127) / 255;
    let mut palette = Vec::with_capacity(3 * 252);
    for r in 0..levels[0] {
        for g in 0..levels[1] {
            for b in 0..levels[2] {
                for (v, n) in [(r, levels[0]), (g, levels[1]), (b, levels[2])] {
                    palette.push(u8::try_from(v * 255 / (n - 1)).unwrap_or(u8::MAX));
                }
            }
        }
    }
    let frames = pictures
        .iter()
        .map(|p| {
            p.rgba
                .chunks_exact(4)
                .map(|px| {
                    let (r, g, b) = (
                        level(px[0], levels[0]),
                        level(px[1], levels[1]),
                        level(px[2], levels[2]),
                    );
                    u8::try_from((r * levels[1] + g) * levels[2] + b).unwrap_or(0)
                })
                .collect()
        })
        .collect();
    (palette, frames)
}

/// `pictures` (all of the first one's size) as a looping GIF, each shown for
/// `delay_centiseconds`.
pub(crate) fn gif(
    pictures: &[Picture],
    delay_centiseconds: u16,
) -> Result<Vec<u8>, std::io::Error> {
    let first = pictures
        .first()
        .ok_or_else(|| failed("there is no picture"))?;
    let (width, height) = (
        u16::try_from(first.width).map_err(failed)?,
        u16::try_from(first.height).map_err(failed)?,
    );
    if pictures
        .iter()
        .any(|p| (p.width, p.height) != (first.width, first.height))
    {
        return Err(failed("the pictures differ in size"));
    }
    let (palette, frames) = indexed(pictures);
    let mut out = Vec::new();
    {
        let mut encoder = gif::Encoder::new(&mut out, width, height, &palette).map_err(failed)?;
        encoder.set_repeat(gif::Repeat::Infinite).map_err(failed)?;
        for pixels in frames {
            let mut frame = gif::Frame::from_indexed_pixels(width, height, pixels, None);
            frame.delay = delay_centiseconds;
            encoder.write_frame(&frame).map_err(failed)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(rgb: [u8; 3]) -> Picture {
        Picture {
            width: 2,
            height: 2,
            rgba: [rgb[0], rgb[1], rgb[2], 255].repeat(4),
        }
    }

    #[test]
    fn a_few_colours_are_kept_exactly_and_every_picture_is_a_frame() {
        let bytes = gif(&[picture([1, 2, 3]), picture([200, 100, 0])], 3).unwrap();
        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut decoder = options.read_info(&bytes[..]).unwrap();
        let mut seen = Vec::new();
        while let Some(frame) = decoder.read_next_frame().unwrap() {
            assert_eq!((frame.width, frame.height, frame.delay), (2, 2, 3));
            seen.push(frame.buffer[..4].to_vec());
        }
        assert_eq!(seen, [vec![1, 2, 3, 255], vec![200, 100, 0, 255]]);
    }
}
