//! Small raster plots drawn straight into RGBA pixels: a line chart of series over steps and a
//! heat map of rows over steps, each a [`Picture`]. Enough for a run report; no text (the page
//! around the image labels it).
//!
//! It knows nothing of runs: it is handed numbers.

use crate::picture::Picture;

/// The colours series are drawn in, in order.
pub(crate) const PALETTE: [[u8; 3]; 6] = [
    [31, 119, 180],
    [214, 39, 40],
    [44, 160, 44],
    [148, 103, 189],
    [255, 127, 14],
    [23, 190, 207],
];

/// A white canvas.
fn canvas(width: u32, height: u32) -> Picture {
    Picture {
        width,
        height,
        rgba: [255, 255, 255, 255].repeat((width * height) as usize),
    }
}

/// Sets pixel `(x, y)` (ignored outside the picture).
fn put(p: &mut Picture, x: i64, y: i64, rgb: [u8; 3]) {
    if x < 0 || y < 0 || x >= i64::from(p.width) || y >= i64::from(p.height) {
        return;
    }
    #[expect(clippy::cast_sign_loss, reason = "checked non-negative above")]
    let at = 4 * (y as usize * p.width as usize + x as usize);
    p.rgba[at..at + 4].copy_from_slice(&[rgb[0], rgb[1], rgb[2], 255]);
}

/// A straight line from `a` to `b` (Bresenham), two pixels thick.
fn line(p: &mut Picture, a: (i64, i64), b: (i64, i64), rgb: [u8; 3]) {
    let (mut x, mut y) = a;
    let (dx, dy) = ((b.0 - a.0).abs(), -(b.1 - a.1).abs());
    let (sx, sy) = (
        if a.0 < b.0 { 1 } else { -1 },
        if a.1 < b.1 { 1 } else { -1 },
    );
    let mut err = dx + dy;
    loop {
        put(p, x, y, rgb);
        put(p, x, y + 1, rgb);
        if (x, y) == b {
            return;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}

/// Each series (one value per step) as a line over a light grid, scaled to the
/// largest value: `width` x `height` pixels with a 10-pixel margin.
pub(crate) fn line_chart(series: &[Vec<f64>], width: u32, height: u32) -> Picture {
    let mut p = canvas(width, height);
    let (w, h) = (i64::from(width) - 20, i64::from(height) - 20);
    for i in 0..=4 {
        let y = 10 + h * i / 4;
        line(&mut p, (10, y), (10 + w, y), [225, 225, 225]);
    }
    line(&mut p, (10, 10), (10, 10 + h), [120, 120, 120]);
    line(&mut p, (10, 10 + h), (10 + w, 10 + h), [120, 120, 120]);
    let top = series
        .iter()
        .flatten()
        .fold(0.0_f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    for (s, values) in series.iter().enumerate() {
        let n = values.len().max(2) - 1;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_precision_loss,
            reason = "pixel coordinates of values scaled to the canvas"
        )]
        let at = |i: usize, v: f64| {
            (
                10 + (i as f64 / n as f64 * w as f64).round() as i64,
                10 + h - (v.max(0.0) / top * h as f64).round() as i64,
            )
        };
        for (i, pair) in values.windows(2).enumerate() {
            line(
                &mut p,
                at(i, pair[0]),
                at(i + 1, pair[1]),
                PALETTE[s % PALETTE.len()],
            );
        }
    }
    p
}

/// A heat map: one band of `band` pixels per row of `rows`, one column per step (steps
/// grouped into at most `max_width` columns by their mean), dark blue (0) to yellow (the
/// largest value of the row).
pub(crate) fn heat_map(rows: &[Vec<f64>], band: u32, max_width: u32) -> Picture {
    let steps = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let per = steps.div_ceil(max_width.max(1) as usize);
    let columns = u32::try_from(steps.div_ceil(per)).unwrap_or(max_width);
    let height = band * u32::try_from(rows.len()).unwrap_or(0).max(1);
    let mut p = canvas(columns, height);
    for (r, values) in rows.iter().enumerate() {
        let top = values.iter().fold(0.0_f64, |m, v| m.max(*v));
        for (c, chunk) in values.chunks(per).enumerate() {
            #[expect(clippy::cast_precision_loss, reason = "a mean of a few values")]
            let mean = chunk.iter().sum::<f64>() / chunk.len() as f64;
            let t = if top > 0.0 {
                (mean / top).clamp(0.0, 1.0)
            } else {
                0.0
            };
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a colour channel from a fraction in 0..=1"
            )]
            let channel = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
            let rgb = [
                channel(20.0, 250.0),
                channel(20.0, 220.0),
                channel(90.0, 30.0),
            ];
            for y in 0..band {
                put(
                    &mut p,
                    i64::try_from(c).unwrap_or(i64::MAX),
                    i64::from(band) * i64::try_from(r).unwrap_or(0) + i64::from(y),
                    rgb,
                );
            }
        }
    }
    p
}

/// Pictures side by side, top-aligned, 4 white pixels apart.
pub(crate) fn strip(pictures: &[Picture]) -> Picture {
    let gap = 4;
    let width = pictures
        .iter()
        .map(|p| p.width + gap)
        .sum::<u32>()
        .max(1 + gap)
        - gap;
    let height = pictures.iter().map(|p| p.height).max().unwrap_or(1);
    let mut out = canvas(width, height);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rising_line_is_drawn_from_bottom_left_to_top_right() {
        let p = line_chart(&[vec![0.0, 1.0, 2.0]], 120, 60);
        let blue =
            |x: usize, y: usize| p.rgba[4 * (y * 120 + x)..4 * (y * 120 + x) + 3] == PALETTE[0];
        assert!(blue(10, 50) && blue(110, 10));
        assert!(!blue(110, 50));
    }

    #[test]
    fn the_heat_map_has_one_band_per_row_and_groups_steps() {
        let p = heat_map(&[vec![0.0; 10], vec![1.0; 10]], 3, 5);
        assert_eq!((p.width, p.height), (5, 6));
        assert_ne!(p.rgba[0..4], p.rgba[4 * 5 * 3..4 * 5 * 3 + 4]);
    }
}
