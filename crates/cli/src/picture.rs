//! RGBA8 pictures as PNG files: nearest-neighbour integer scaling, pictures side by side (a
//! strip), and encoding. Used by the commands that write a run's frames.
//!
//! It knows nothing of runs, views or where a picture comes from.

use std::path::Path;

use crate::error::CliError;

/// An RGBA8 picture, rows packed (`4 * width` bytes each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) rgba: Vec<u8>,
}

impl Picture {
    /// The picture in `bytes` with rows of `stride` bytes (at least `4 * width`); `None` when
    /// `bytes` is too short for `height` such rows.
    pub(crate) fn from_rows(bytes: &[u8], width: u32, height: u32, stride: usize) -> Option<Self> {
        let row = 4 * width as usize;
        if stride < row || bytes.len() < stride * height as usize {
            return None;
        }
        let rgba = bytes
            .chunks_exact(stride)
            .take(height as usize)
            .flat_map(|r| &r[..row])
            .copied()
            .collect();
        Some(Self {
            width,
            height,
            rgba,
        })
    }

    /// Each pixel as a `scale` x `scale` block (nearest neighbour); `scale` is at least 1.
    pub(crate) fn scaled(&self, scale: u32) -> Self {
        let scale = scale.max(1);
        if scale == 1 {
            return self.clone();
        }
        let (s, w) = (scale as usize, self.width as usize);
        let mut rgba = Vec::with_capacity(self.rgba.len() * s * s);
        for row in self.rgba.chunks_exact(4 * w) {
            let wide: Vec<u8> = row
                .chunks_exact(4)
                .flat_map(|px| std::iter::repeat_n(px, s).flatten())
                .copied()
                .collect();
            for _ in 0..s {
                rgba.extend_from_slice(&wide);
            }
        }
        Self {
            width: self.width * scale,
            height: self.height * scale,
            rgba,
        }
    }

    /// `pictures` side by side, top-aligned, `gap` white pixels apart (a white pixel when
    /// there is none).
    pub(crate) fn strip(pictures: &[Self], gap: u32) -> Self {
        let width = pictures
            .iter()
            .map(|p| p.width + gap)
            .sum::<u32>()
            .saturating_sub(gap)
            .max(1);
        let height = pictures.iter().map(|p| p.height).max().unwrap_or(1);
        let mut out = Self {
            width,
            height,
            rgba: [255, 255, 255, 255].repeat(width as usize * height as usize),
        };
        let mut left = 0_usize;
        for p in pictures {
            for (y, row) in p.rgba.chunks_exact(4 * p.width as usize).enumerate() {
                let at = 4 * (y * width as usize + left);
                out.rgba[at..at + row.len()].copy_from_slice(row);
            }
            left += (p.width + gap) as usize;
        }
        out
    }

    /// The picture as PNG bytes (8-bit RGBA).
    pub(crate) fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header()?;
            writer.write_image_data(&self.rgba)?;
            writer.finish()?;
        }
        Ok(out)
    }

    /// Writes the picture to `path` as PNG.
    pub(crate) fn write(&self, path: &Path) -> Result<(), CliError> {
        let failed = |error| CliError::WriteOutput {
            path: path.to_owned(),
            error,
        };
        let bytes = self.png().map_err(|e| failed(std::io::Error::other(e)))?;
        std::fs::write(path, bytes).map_err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::Picture;

    #[test]
    fn scaling_repeats_each_pixel_as_a_block() {
        let p = Picture {
            width: 2,
            height: 1,
            rgba: vec![1, 2, 3, 4, 5, 6, 7, 8],
        };
        let s = p.scaled(2);
        assert_eq!((s.width, s.height), (4, 2));
        let row = [1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8];
        assert_eq!(s.rgba, [row, row].concat());
    }

    #[test]
    fn a_strip_puts_pictures_side_by_side_with_a_white_gap() {
        let red = Picture {
            width: 1,
            height: 2,
            rgba: [255, 0, 0, 255].repeat(2),
        };
        let blue = Picture {
            width: 1,
            height: 1,
            rgba: vec![0, 0, 255, 255],
        };
        let s = Picture::strip(&[red, blue], 2);
        assert_eq!((s.width, s.height), (4, 2));
        let white = [255, 255, 255, 255];
        let row0 = [[255, 0, 0, 255], white, white, [0, 0, 255, 255]].concat();
        let row1 = [[255, 0, 0, 255], white, white, white].concat();
        assert_eq!(s.rgba, [row0, row1].concat());
    }

    #[test]
    fn rows_with_padding_are_packed() {
        let bytes = [1, 1, 1, 1, 9, 9, 2, 2, 2, 2, 9, 9];
        let p = Picture::from_rows(&bytes, 1, 2, 6).unwrap();
        assert_eq!(p.rgba, [1, 1, 1, 1, 2, 2, 2, 2]);
        assert!(Picture::from_rows(&bytes, 1, 3, 6).is_none());
    }
}
