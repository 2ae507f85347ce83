//! The report's plots as SVG documents, drawn with `plotters`: the reward per step and the
//! cumulative score of each agent, a heat map of an agent's role rates over steps, and a spike
//! raster (neurons over time). Each has a title, axis labels, tick numbers and a legend; the
//! text is SVG text, which the browser renders (no font is read here).
//!
//! It knows nothing of runs, traces or regeneration: it is handed numbers and returns text.

use plotters::coord::Shift;
use plotters::prelude::*;

/// The colours series are drawn in, in order.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// The font of every label (the browser picks the face).
const FONT: &str = "sans-serif";

/// Why a plot could not be drawn.
fn failed(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("drawing a plot: {e}"))
}

/// The colour of series `i`.
fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The heat map's colour of a fraction in `0..=1`: dark blue to yellow.
fn heat(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a colour channel from a fraction in 0..=1"
    )]
    let channel = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    RGBColor(
        channel(20.0, 250.0),
        channel(20.0, 220.0),
        channel(90.0, 30.0),
    )
}

/// Runs `draw` on a white `width` x `height` SVG canvas; returns the document.
fn svg(
    width: u32,
    height: u32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), std::io::Error>,
) -> Result<String, std::io::Error> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        draw(&root)?;
        root.present().map_err(failed)?;
    }
    Ok(text)
}

/// One agent's rewards: its name and the reward paid at every boundary (0 when none).
#[derive(Debug, Clone)]
pub(crate) struct Rewards {
    pub(crate) agent: String,
    pub(crate) per_step: Vec<f64>,
}

/// The score plot: each agent's cumulative score (a line, left axis) and the reward paid at
/// each step (bars, right axis) over the boundaries, `width` x `height` pixels.
pub(crate) fn score_chart(
    agents: &[Rewards],
    width: u32,
    height: u32,
) -> Result<String, std::io::Error> {
    let steps = agents
        .iter()
        .map(|a| a.per_step.len())
        .max()
        .unwrap_or(0)
        .max(2)
        - 1;
    #[expect(clippy::cast_precision_loss, reason = "a step count as a coordinate")]
    let last = steps as f64;
    let cumulative: Vec<Vec<f64>> = agents
        .iter()
        .map(|a| {
            a.per_step
                .iter()
                .scan(0.0, |sum, r| {
                    *sum += r;
                    Some(*sum)
                })
                .collect()
        })
        .collect();
    let top = |values: &mut dyn Iterator<Item = f64>| values.fold(0.0_f64, f64::max).max(1.0);
    let score_top = top(&mut cumulative.iter().flatten().copied()) * 1.1;
    let reward_top = top(&mut agents.iter().flat_map(|a| a.per_step.iter().copied())) * 1.1;
    // A bar is at least a two-hundredth of the axis wide, so a single reward shows.
    let half_bar = (last / 400.0).max(0.5);
    svg(width, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption("Score over steps", (FONT, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .right_y_label_area_size(56)
            .build_cartesian_2d(0.0..last, 0.0..score_top)
            .map_err(failed)?
            .set_secondary_coord(0.0..last, 0.0..reward_top);
        chart
            .configure_mesh()
            .x_desc("step (boundary)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("cumulative score")
            .max_light_lines(2)
            .label_style((FONT, 12))
            .draw()
            .map_err(failed)?;
        chart
            .configure_secondary_axes()
            .y_desc("reward per step")
            .label_style((FONT, 12))
            .draw()
            .map_err(failed)?;
        for (i, (agent, sums)) in agents.iter().zip(&cumulative).enumerate() {
            let light = colour(i).mix(0.45);
            #[expect(clippy::cast_precision_loss, reason = "a step as a coordinate")]
            let bars = agent
                .per_step
                .iter()
                .enumerate()
                .filter(|(_, r)| **r != 0.0)
                .map(|(k, r)| {
                    let x = k as f64;
                    Rectangle::new([(x - half_bar, 0.0), (x + half_bar, *r)], light.filled())
                });
            chart
                .draw_secondary_series(bars)
                .map_err(failed)?
                .label(format!("reward of {}", agent.agent))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 16, y + 5)], light.filled())
                });
            #[expect(clippy::cast_precision_loss, reason = "a step as a coordinate")]
            let line = sums.iter().enumerate().map(|(k, s)| (k as f64, *s));
            let solid = colour(i);
            chart
                .draw_series(LineSeries::new(line, solid.stroke_width(2)))
                .map_err(failed)?
                .label(format!("score of {}", agent.agent))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], solid.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(failed)
    })
}

/// Means of `values` over groups of `per` steps.
fn grouped(values: &[f64], per: usize) -> Vec<f64> {
    values
        .chunks(per.max(1))
        .map(|c| {
            #[expect(clippy::cast_precision_loss, reason = "a mean of a few values")]
            let mean = c.iter().sum::<f64>() / c.len() as f64;
            mean
        })
        .collect()
}

/// One agent's rates over steps: row names (roles, the population rate last) and, per row, the
/// rate in Hz at every boundary.
#[derive(Debug, Clone)]
pub(crate) struct Rates {
    pub(crate) agent: String,
    pub(crate) rows: Vec<String>,
    pub(crate) hz: Vec<Vec<f64>>,
}

/// The size of [`heat_map`]'s picture of `rates`, `width` wide.
pub(crate) fn heat_map_size(rates: &Rates, width: u32) -> (u32, u32) {
    let rows = u32::try_from(rates.rows.len()).unwrap_or(u32::MAX).max(1);
    (width, 90 + 18 * rows)
}

/// The heat map of `rates`: one band per row, steps along x (grouped into at most `columns`
/// by their mean), each row coloured from 0 (dark blue) to its own largest rate (yellow), which
/// its label names; a colour bar is the legend.
pub(crate) fn heat_map(
    rates: &Rates,
    columns: usize,
    width: u32,
) -> Result<String, std::io::Error> {
    let steps = rates.hz.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let per = steps.div_ceil(columns.max(1));
    let rows = u32::try_from(rates.rows.len()).unwrap_or(u32::MAX).max(1);
    let (_, height) = heat_map_size(rates, width);
    let labels: Vec<String> = rates
        .rows
        .iter()
        .zip(&rates.hz)
        .map(|(name, hz)| format!("{name} ({:.1} Hz)", hz.iter().copied().fold(0.0, f64::max)))
        .collect();
    #[expect(clippy::cast_precision_loss, reason = "a step count as a coordinate")]
    let last = steps as f64;
    svg(width, height, |root| {
        let (plot, bar) = root.split_horizontally(width.saturating_sub(70));
        let mut chart = ChartBuilder::on(&plot)
            .caption(format!("Rates of {} over steps", rates.agent), (FONT, 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(150)
            .build_cartesian_2d(0.0..last, (0..rows).into_segmented())
            .map_err(failed)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("step (boundary)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("role (largest rate)")
            .y_labels(rates.rows.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .label_style((FONT, 11))
            .draw()
            .map_err(failed)?;
        for (r, hz) in (0..rows).zip(&rates.hz) {
            let top = hz.iter().copied().fold(0.0, f64::max);
            #[expect(clippy::cast_precision_loss, reason = "a step as a coordinate")]
            let cells = grouped(hz, per)
                .into_iter()
                .enumerate()
                .map(move |(c, mean)| {
                    let x = (c * per) as f64;
                    let t = if top > 0.0 { mean / top } else { 0.0 };
                    Rectangle::new(
                        [
                            (x, SegmentValue::Exact(r)),
                            ((x + per as f64).min(last), SegmentValue::Exact(r + 1)),
                        ],
                        heat(t).filled(),
                    )
                });
            chart.draw_series(cells).map_err(failed)?;
        }
        colour_bar(&bar)
    })
}

/// The heat map's legend: a vertical bar from 0 to each row's largest rate.
fn colour_bar(area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), std::io::Error> {
    let mut chart = ChartBuilder::on(area)
        .margin_top(40)
        .margin_bottom(50)
        .margin_right(30)
        .y_label_area_size(0)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(failed)?;
    let steps = (0..20).map(|i| {
        let (a, b) = (f64::from(i) / 20.0, f64::from(i + 1) / 20.0);
        Rectangle::new([(0.0, a), (1.0, b)], heat(a).filled())
    });
    chart.draw_series(steps).map_err(failed)?;
    let style = (FONT, 11).into_font().color(&BLACK);
    chart
        .draw_series([
            Text::new("max", (0.0, 1.06), style.clone()),
            Text::new("0", (0.3, -0.02), style),
        ])
        .map_err(failed)?;
    Ok(())
}

/// What a spike raster shows: the boundaries of its window, its spikes as `(x, neuron)` with
/// `x` a fractional step inside the window, and how many neurons the rows span.
#[derive(Debug, Clone)]
pub(crate) struct Raster {
    pub(crate) agent: String,
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) spikes: Vec<(f64, u32)>,
    pub(crate) neurons: u32,
}

/// The spike raster: one dot per spike, neuron index up, steps along x; spikes that fall on
/// one screen pixel share a dot.
pub(crate) fn raster(r: &Raster, width: u32, height: u32) -> Result<String, std::io::Error> {
    #[expect(clippy::cast_precision_loss, reason = "boundaries as coordinates")]
    let (from, to) = (r.from as f64, (r.to.max(r.from + 1)) as f64);
    let neurons = r.neurons.max(1);
    svg(width, height, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Spikes of {}, steps {}..{}", r.agent, r.from, r.to),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(from..to, 0..neurons)
            .map_err(failed)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("step (boundary)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("neuron index")
            .label_style((FONT, 12))
            .draw()
            .map_err(failed)?;
        let mut seen = std::collections::BTreeSet::new();
        let dots: Vec<(f64, u32)> = r
            .spikes
            .iter()
            .copied()
            .filter(|p| seen.insert(chart.backend_coord(p)))
            .collect();
        let dot = RGBColor(20, 20, 60).filled();
        chart
            .draw_series(dots.into_iter().map(|p| Circle::new(p, 1, dot)))
            .map(|_| ())
            .map_err(failed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_chart_has_its_title_axis_labels_and_legend() {
        let svg = score_chart(
            &[Rewards {
                agent: "fly-a".into(),
                per_step: vec![0.0, 1.0, 0.0, 1.0],
            }],
            600,
            300,
        )
        .unwrap();
        for text in [
            "Score over steps",
            "step (boundary)",
            "cumulative score",
            "reward per step",
            "score of fly-a",
        ] {
            assert!(svg.contains(text), "{text} is missing");
        }
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
    }

    #[test]
    fn the_heat_map_labels_each_row_with_its_largest_rate() {
        let svg = heat_map(
            &Rates {
                agent: "fly-a".into(),
                rows: vec!["kenyon".into(), "population".into()],
                hz: vec![vec![0.0, 2.5, 1.0], vec![0.5, 0.5, 0.5]],
            },
            100,
            600,
        )
        .unwrap();
        assert!(svg.contains("kenyon (2.5 Hz)"), "{svg}");
        assert!(svg.contains("population (0.5 Hz)"));
        assert!(svg.contains("Rates of fly-a over steps"));
    }
}
