//! A small raster drawing backend for `plotters` (an RGB pixel buffer, saved as PNG through
//! [`crate::picture::Picture`]), with its own 3×5 pixel font drawn twice its size (digits,
//! lower-case letters, a few signs; capitals are drawn as lower case), so a PNG plot needs no
//! font file; and the sweep's plot drawn on it: each agent's score per value of each axis.
//!
//! It knows plotters and pixels; it is handed the sweep's table and reads nothing else.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};

use crate::picture::Picture;

/// How many pixels one font pixel is drawn as.
const SCALE: i32 = 2;
/// A glyph's advance, in font pixels (3 wide, 1 apart).
const ADVANCE: i32 = 4;
/// A glyph's height, in font pixels.
const HEIGHT: i32 = 5;

/// The rows of a character's glyph, three bits each (the high bit leftmost).
fn glyph(c: char) -> [u8; 5] {
    match c.to_ascii_lowercase() {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 2, 2],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'a' => [2, 5, 7, 5, 5],
        'b' => [6, 5, 6, 5, 6],
        'c' => [3, 4, 4, 4, 3],
        'd' => [6, 5, 5, 5, 6],
        'e' => [7, 4, 6, 4, 7],
        'f' => [7, 4, 6, 4, 4],
        'g' => [3, 4, 5, 5, 3],
        'h' => [5, 5, 7, 5, 5],
        'i' => [7, 2, 2, 2, 7],
        'j' => [1, 1, 1, 5, 2],
        'k' => [5, 5, 6, 5, 5],
        'l' => [4, 4, 4, 4, 7],
        'm' => [5, 7, 7, 5, 5],
        'n' => [6, 5, 5, 5, 5],
        'o' => [2, 5, 5, 5, 2],
        'p' => [6, 5, 6, 4, 4],
        'q' => [2, 5, 5, 6, 3],
        'r' => [6, 5, 6, 5, 5],
        's' => [3, 4, 2, 1, 6],
        't' => [7, 2, 2, 2, 2],
        'u' => [5, 5, 5, 5, 7],
        'v' => [5, 5, 5, 5, 2],
        'w' => [5, 5, 7, 7, 5],
        'x' => [5, 5, 2, 5, 5],
        'y' => [5, 5, 2, 2, 2],
        'z' => [7, 1, 2, 4, 7],
        '.' => [0, 0, 0, 0, 2],
        ',' => [0, 0, 0, 2, 4],
        '-' => [0, 0, 7, 0, 0],
        '+' => [0, 2, 7, 2, 0],
        ':' => [0, 2, 0, 2, 0],
        '=' => [0, 7, 0, 7, 0],
        '(' => [1, 2, 2, 2, 1],
        ')' => [4, 2, 2, 2, 4],
        '/' => [1, 1, 2, 4, 4],
        '_' => [0, 0, 0, 0, 7],
        '"' => [5, 5, 0, 0, 0],
        ' ' => [0; 5],
        _ => [7, 1, 2, 0, 2],
    }
}

/// The size of `text` drawn in the font, in pixels.
fn text_size(text: &str) -> (i32, i32) {
    let n = i32::try_from(text.chars().count()).unwrap_or(i32::MAX / 8);
    ((n * ADVANCE - 1).max(0) * SCALE, HEIGHT * SCALE)
}

/// The raster the plot is drawn on.
struct Raster<'a> {
    width: u32,
    height: u32,
    /// RGBA rows, `4 * width` bytes each.
    rgba: &'a mut [u8],
}

impl Raster<'_> {
    fn blend(&mut self, (x, y): BackendCoord, color: BackendColor) {
        let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y)) else {
            return;
        };
        if x >= self.width || y >= self.height {
            return;
        }
        let at = ((y * self.width + x) * 4) as usize;
        let alpha = color.alpha.clamp(0.0, 1.0);
        let (r, g, b) = color.rgb;
        for (i, channel) in [r, g, b].into_iter().enumerate() {
            let old = f64::from(self.rgba[at + i]);
            let new = old * (1.0 - alpha) + f64::from(channel) * alpha;
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a blend of two channels stays in 0..=255"
            )]
            let value = new.round() as u8;
            self.rgba[at + i] = value;
        }
    }
}

impl DrawingBackend for Raster<'_> {
    type ErrorType = std::io::Error;

    fn get_size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.blend(point, color);
        Ok(())
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let (w, h) = text_size(text);
        let rotated = matches!(style.transform(), FontTransform::Rotate270);
        let anchor = style.anchor();
        // Along the text, then across it.
        let (along, across) = (w, h);
        let start = match anchor.h_pos {
            HPos::Left => 0,
            HPos::Center => -along / 2,
            HPos::Right => -along,
        };
        let top = match anchor.v_pos {
            VPos::Top => 0,
            VPos::Center => -across / 2,
            VPos::Bottom => -across,
        };
        let color = style.color();
        for (i, c) in (0i32..).zip(text.chars()) {
            for (row, bits) in (0i32..).zip(glyph(c)) {
                for col in 0..3 {
                    if bits & (4 >> col) == 0 {
                        continue;
                    }
                    for dy in 0..SCALE {
                        for dx in 0..SCALE {
                            let u = start + (i * ADVANCE + col) * SCALE + dx;
                            let v = top + row * SCALE + dy;
                            let point = if rotated {
                                (pos.0 + v, pos.1 - u)
                            } else {
                                (pos.0 + u, pos.1 + v)
                            };
                            self.blend(point, color);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        _: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (w, h) = text_size(text);
        Ok((w.unsigned_abs(), h.unsigned_abs()))
    }
}

/// The colours of the agents' points, in order.
const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn failed(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("drawing the scores: {e}"))
}

/// A varied value as a label.
fn label(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The scores of the completed members, one panel per axis: each agent's score (a point per
/// member) over the axis's values, in the order they first appear.
pub(crate) fn scores_png(table: &flysim_run::sweep::Table) -> std::io::Result<Vec<u8>> {
    const PANEL: u32 = 280;
    const WIDTH: u32 = 760;
    let panels = u32::try_from(table.axes.len().max(1)).unwrap_or(1);
    let height = PANEL * panels;
    let mut rgba = [255u8, 255, 255, 255].repeat((WIDTH * height) as usize);
    {
        let raster = Raster {
            width: WIDTH,
            height,
            rgba: &mut rgba,
        };
        let root = raster.into_drawing_area();
        let areas = root.split_evenly((table.axes.len().max(1), 1));
        for (k, (axis, area)) in table.axes.iter().zip(&areas).enumerate() {
            draw_axis(table, k, axis, area)?;
        }
        root.present().map_err(failed)?;
    }
    Picture {
        width: WIDTH,
        height,
        rgba,
    }
    .png()
    .map_err(failed)
}

/// One panel: axis `k`'s values along x, the scores up y.
fn draw_axis(
    table: &flysim_run::sweep::Table,
    k: usize,
    axis: &str,
    area: &DrawingArea<Raster<'_>, plotters::coord::Shift>,
) -> std::io::Result<()> {
    let complete: Vec<_> = table
        .rows
        .iter()
        .filter(|r| r.status == "complete")
        .collect();
    let mut values: Vec<String> = Vec::new();
    for row in &complete {
        let text = label(&row.values[k]);
        if !values.contains(&text) {
            values.push(text);
        }
    }
    let scores = complete.iter().flat_map(|r| r.scores.iter().copied());
    let (low, high) = scores.fold((0.0f64, 1.0f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let pad = (high - low).max(1.0) * 0.08;
    #[expect(
        clippy::cast_precision_loss,
        reason = "a count of values as a plot coordinate"
    )]
    let n = values.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("score per {axis}"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..(n - 0.5), (low - pad)..(high + pad))
        .map_err(failed)?;
    let names = values.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(values.len().max(1))
        .x_label_formatter(&|x| {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a tick at a value's index"
            )]
            let i = x.round().max(0.0) as usize;
            if (x - x.round()).abs() < 1e-6 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("score")
        .draw()
        .map_err(failed)?;
    let agents = table.agents.len().max(1);
    for (a, agent) in table.agents.iter().enumerate() {
        let colour = PALETTE[a % PALETTE.len()];
        #[expect(clippy::cast_precision_loss, reason = "a small offset per agent")]
        let offset = (a as f64 - (agents as f64 - 1.0) / 2.0) * 0.12;
        let points = complete.iter().filter_map(|row| {
            let x = values.iter().position(|v| *v == label(&row.values[k]))?;
            #[expect(
                clippy::cast_precision_loss,
                reason = "a value's index as a plot coordinate"
            )]
            let x = x as f64 + offset;
            Some(Circle::new((x, *row.scores.get(a)?), 4, colour.filled()))
        });
        chart
            .draw_series(points)
            .map_err(failed)?
            .label(agent.clone())
            .legend(move |(x, y)| Circle::new((x, y), 4, colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .margin(16)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> flysim_run::sweep::Table {
        let row = |index: usize, rate: f64, scores: Vec<f64>| flysim_run::sweep::MemberRow {
            index,
            values: vec![serde_json::json!(rate), serde_json::json!("7")],
            plan_digest: flysim_types::Digest::from_bytes([0; 32]),
            status: "complete",
            run_dir: None,
            run_digest: None,
            steps: Some(10),
            scores,
            wall_time_s: Some(0.1),
        };
        flysim_run::sweep::Table {
            name: "t".to_owned(),
            sweep_digest: flysim_types::Digest::from_bytes([0; 32]),
            axes: vec!["run.steps".to_owned(), "master-seed".to_owned()],
            agents: vec!["fly-a".to_owned(), "fly-b".to_owned()],
            rows: vec![row(0, 0.25, vec![3.0, 5.0]), row(1, 0.5, vec![9.0, 1.0])],
        }
    }

    #[test]
    fn text_is_measured_as_it_is_drawn() {
        assert_eq!(text_size(""), (0, 10));
        assert_eq!(text_size("ab"), (14, 10));
        assert_eq!(glyph('A'), glyph('a'));
        assert_eq!(glyph('%'), glyph('?'));
        assert_ne!(glyph('0'), glyph('8'));
    }

    #[test]
    fn the_scores_are_one_panel_per_axis_with_each_agents_colour() {
        let png = scores_png(&table()).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (760, 560));
        let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(4).collect();
        for RGBColor(r, g, b) in &PALETTE[..2] {
            assert!(
                pixels.iter().any(|p| p[..3] == [*r, *g, *b]),
                "no point of colour {r},{g},{b}"
            );
        }
        // The third colour is no agent's.
        let RGBColor(r, g, b) = PALETTE[2];
        assert!(!pixels.iter().any(|p| p[..3] == [r, g, b]));
    }
}
