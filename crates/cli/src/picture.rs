//! RGBA8 pictures as PNG files: nearest-neighbour integer scaling and encoding. Used by the
//! commands that write a run's frames and plots.
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
    fn rows_with_padding_are_packed() {
        let bytes = [1, 1, 1, 1, 9, 9, 2, 2, 2, 2, 9, 9];
        let p = Picture::from_rows(&bytes, 1, 2, 6).unwrap();
        assert_eq!(p.rgba, [1, 1, 1, 1, 2, 2, 2, 2]);
        assert!(Picture::from_rows(&bytes, 1, 3, 6).is_none());
    }
}
