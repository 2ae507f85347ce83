//! RGBA8 frames to PNG: the one image format the page reads. It knows pixel buffers and their
//! shape, not where they came from.
//!
//! Frames are stored, not deflated: latency matters more than bytes here. A stored Game Boy
//! frame is 92 KB (5.5 MB/s at 60 Hz, nothing for a loopback or local link) and encodes in
//! about a millisecond even in a debug build, where deflating it took 30 ms and more.

/// Encodes `pixels` (`height` rows of `row_stride` bytes, the first `4 * width` of each row
/// RGBA8) as an 8-bit RGBA PNG, fast rather than small; `None` for a buffer of another size.
pub(crate) fn png_rgba(pixels: &[u8], width: u32, height: u32, row_stride: u32) -> Option<Vec<u8>> {
    let row = usize::try_from(width).ok()?.checked_mul(4)?;
    let stride = usize::try_from(row_stride).ok()?;
    let rows = usize::try_from(height).ok()?;
    if width == 0 || height == 0 || stride < row || pixels.len() != stride.checked_mul(rows)? {
        return None;
    }
    let mut out = Vec::with_capacity(pixels.len() / 4);
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::NoCompression);
        let mut writer = encoder.write_header().ok()?;
        if stride == row {
            writer.write_image_data(pixels).ok()?;
        } else {
            let packed: Vec<u8> = pixels
                .chunks_exact(stride)
                .flat_map(|r| &r[..row])
                .copied()
                .collect();
            writer.write_image_data(&packed).ok()?;
        }
        writer.finish().ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
        let info = reader.next_frame(&mut buf).expect("a frame");
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    #[test]
    fn pixels_survive_the_round_trip_exactly() {
        let pixels: Vec<u8> = (0..3 * 2 * 4).map(|i| (i * 37 % 256) as u8).collect();
        let png = png_rgba(&pixels, 3, 2, 12).expect("encodes");
        assert_eq!(decode(&png), (3, 2, pixels));
    }

    #[test]
    fn a_padded_stride_is_packed() {
        let mut pixels = vec![9u8; 2 * 12];
        pixels[8..12].copy_from_slice(&[0, 0, 0, 0]);
        pixels[20..24].copy_from_slice(&[0, 0, 0, 0]);
        let png = png_rgba(&pixels, 2, 2, 12).expect("encodes");
        assert_eq!(decode(&png).2, vec![9u8; 16]);
    }

    #[test]
    fn a_buffer_of_another_size_is_refused() {
        assert_eq!(png_rgba(&[0; 15], 2, 2, 8), None);
        assert_eq!(png_rgba(&[0; 16], 2, 2, 4), None);
    }
}
