//! `flysim report RUN_DIR [-o DIR] [--raster-steps A..B] [--clip-steps A..B] [--open]`: a
//! self-contained `report.html` beside its images, for a person to look back at a run:
//!
//! - the summary table: composition, run, status, plan and run digest, steps, world time, wall
//!   time, steps/s, each agent's score and number of rewards;
//! - `score.svg`: each agent's cumulative score (line, left axis) and the reward of each step
//!   (bars, right axis) over the steps;
//! - `rates-<agent>.svg`: a heat map of the agent's role rates and population rate over the
//!   steps, each row scaled to its own largest rate (named in its label), with a colour bar;
//! - `spikes-<agent>.svg`: a spike raster of each LIF agent in a window of steps
//!   (`--raster-steps`, by default the first 200; none for a run without a LIF agent), one dot
//!   per spike, neuron index over steps;
//! - `rewards.png`: the game's screen at the first eight reward events, side by side;
//! - `play.gif`: a looping clip of the game (`--clip-steps`, by default the two seconds of world
//!   time around the first reward), every frame that keeps the clip at 50 fps or less.
//!
//! Frames and spikes are not stored in a run directory: the run is re-executed once, up to the
//! last boundary any picture needs, and every row and frame is checked against the trace
//! (`flysim_run::regenerate_with_spikes`; a run this build cannot reproduce is refused with
//! `FS0932`/`FS0933`). The re-execution shows the progress line. `--open` hands the page to the
//! user's browser (`BROWSER`, else `xdg-open`); when there is none it says so and succeeds.
//!
//! It knows nothing of how a run is re-executed (`regenerated`), how plots are drawn
//! (`crate::plot`) or how the page is laid out (`page`); it decides what to show.

mod page;
mod regenerated;
mod series;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use flysim_store::RunRecord;
use flysim_types::plan::ModelKind;
use flysim_types::trace::TraceBehaviour;

use crate::Printed;
use crate::commands::frames::parse_steps;
use crate::error::CliError;
use crate::exit;
use crate::picture::Picture;
use crate::plot;
use page::Page;
use regenerated::{Kept, Wanted};

/// At most this many reward events get a frame in the strip.
const STRIP_FRAMES: usize = 8;
/// The raster's default window, in steps from the start.
const RASTER_STEPS: u64 = 200;
/// The clip's default length in world time, centred on the first reward.
const CLIP_SECONDS: f64 = 2.0;
/// The shortest time a clip frame is shown (browsers show a GIF frame of under 20 ms for 100).
const CLIP_FRAME_SECONDS: f64 = 0.02;
/// The width of every plot, in pixels.
const PLOT_WIDTH: u32 = 900;

/// Arguments of `flysim report`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
The page shows the run's summary, its score over steps (cumulative score and reward per step), \
a heat map of each agent's role rates, a spike raster of each LIF agent, the game's screen at \
the reward events and an animated GIF of a stretch of play. Frames and spikes are regenerated \
by re-executing the run once, every row and frame checked against the trace; a run this build \
cannot reproduce is refused. docs/report.md describes what each picture shows.")]
pub(crate) struct Args {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
    /// Where the page and its images go (default: RUN_DIR/report)
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    out: Option<PathBuf>,
    /// The spike raster's window: the steps from boundary A to boundary B (default: the first
    /// 200 steps; only for a run with a LIF agent)
    #[arg(long, value_name = "A..B", value_parser = parse_steps)]
    raster_steps: Option<(u64, u64)>,
    /// The animated clip's boundaries (default: the 2 s of world time around the first reward,
    /// or the first 2 s)
    #[arg(long, value_name = "A..B", value_parser = parse_steps)]
    clip_steps: Option<(u64, u64)>,
    /// Open the page in the browser (`BROWSER`, else `xdg-open`)
    #[arg(long)]
    open: bool,
}

/// Writes `bytes` to `path`.
fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|error| CliError::WriteOutput {
        path: path.to_owned(),
        error,
    })
}

/// An image drawn into `path`, or the drawing's failure as one to write it.
fn write_drawn(path: &Path, drawn: Result<String, std::io::Error>) -> Result<(), CliError> {
    let text = drawn.map_err(|error| CliError::WriteOutput {
        path: path.to_owned(),
        error,
    })?;
    write(path, text)
}

/// The raster's window: as asked (refused for a run without a LIF agent), else the first
/// [`RASTER_STEPS`] steps of a run with one.
fn raster_window(args: &Args, record: &RunRecord) -> Result<Option<(u64, u64)>, CliError> {
    let steps = record.manifest.steps.get();
    let lif = record
        .plan
        .profiles
        .iter()
        .any(|p| p.model == ModelKind::Lif);
    match (args.raster_steps, lif) {
        (Some(_), false) => Err(CliError::NoSpikes {
            run_id: record.manifest.run_id.to_string(),
            reason: "the run has no LIF agent, whose spikes a raster shows".into(),
        }),
        (Some((from, to)), true) if to > steps || from == to => Err(CliError::NoSpikes {
            run_id: record.manifest.run_id.to_string(),
            reason: format!(
                "{from}..{to} holds no step of the run's boundaries 0..={steps} (a raster needs A < B <= {steps})"
            ),
        }),
        (Some(window), true) => Ok(Some(window)),
        (None, true) if steps > 0 => Ok(Some((0, steps.min(RASTER_STEPS)))),
        (None, _) => Ok(None),
    }
}

/// The clip's boundaries and every how many frames one is kept: as asked, else
/// [`CLIP_SECONDS`] around the first reward (the first ones when there is none).
fn clip(args: &Args, rows: &[TraceBehaviour], steps: u64) -> Option<(u64, u64, u64)> {
    let step = series::step_seconds(rows);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a few steps, from positive finite seconds"
    )]
    let (half, stride) = if step > 0.0 {
        (
            (CLIP_SECONDS / 2.0 / step).round() as u64,
            (CLIP_FRAME_SECONDS / step).ceil().max(1.0) as u64,
        )
    } else {
        (60, 2)
    };
    let (from, to) = args.clip_steps.unwrap_or_else(|| {
        let centre = series::reward_boundaries(rows, 1)
            .first()
            .copied()
            .unwrap_or(half);
        (centre.saturating_sub(half), centre + half)
    });
    (from <= steps).then_some((from, to.min(steps), stride.max(1)))
}

/// The clip's delay per kept frame, in GIF centiseconds (at least 2).
fn clip_delay(rows: &[TraceBehaviour], stride: u64) -> u16 {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a short delay in centiseconds"
    )]
    let cs = (series::step_seconds(rows) * stride as f64 * 100.0).round() as u16;
    cs.max(2)
}

/// An agent and its raster's dots: `(x, neuron)`.
type AgentPoints = (String, Vec<(f64, u32)>);

/// Each agent's spikes of the window as `(x, neuron)`, `x` the step plus the tick's place in
/// it, checked against the brain ticks the trace records for each step.
fn raster_points(
    run_id: &str,
    kept: &Kept,
    ticks: &BTreeMap<String, Vec<(u64, u64)>>,
) -> Result<Vec<AgentPoints>, CliError> {
    let refuse = |reason: String| CliError::NoSpikes {
        run_id: run_id.to_owned(),
        reason,
    };
    let mut out = Vec::new();
    for (agent, steps) in &kept.spikes {
        let mut points = Vec::new();
        for (&k, spikes) in steps {
            let spikes = spikes.as_ref().ok_or_else(|| {
                refuse(format!(
                    "{agent} did not record its spikes of step {k} (its Prepare applied pre-step stimuli)"
                ))
            })?;
            let (first, end) = usize::try_from(k)
                .ok()
                .and_then(|k| ticks.get(agent)?.get(k).copied())
                .unwrap_or_default();
            for &(t, n) in spikes {
                if !(first..end).contains(&t) {
                    return Err(refuse(format!(
                        "{agent} fired at brain tick {t} in step {k}, whose ticks the trace records as {first}..{end}"
                    )));
                }
                #[expect(clippy::cast_precision_loss, reason = "a position on the time axis")]
                let x = (k - 1) as f64 + (t - first) as f64 / (end - first) as f64;
                points.push((x, n));
            }
        }
        out.push((agent.clone(), points));
    }
    Ok(out)
}

/// The plots of the trace alone: the score and each agent's rates.
fn trace_plots(page: &mut Page, out: &Path, rows: &[TraceBehaviour]) -> Result<(), CliError> {
    page.heading("Score over steps");
    let rewards = series::rewards(rows);
    write_drawn(
        &out.join("score.svg"),
        plot::score_chart(&rewards, PLOT_WIDTH, 340),
    )?;
    page.image(
        "score.svg",
        (PLOT_WIDTH, 340),
        "Each agent's cumulative score (line, left axis) and the reward paid at each step (bars, right axis).",
        false,
    );
    page.heading("Role rates over steps");
    for rates in series::rates(rows) {
        let name = format!("rates-{}.svg", rates.agent);
        let size = plot::heat_map_size(&rates, PLOT_WIDTH);
        write_drawn(&out.join(&name), plot::heat_map(&rates, 400, PLOT_WIDTH))?;
        page.image(
            &name,
            size,
            &format!(
                "The firing rate of each of {}'s roles and of its whole population at every step (mean over groups of steps), each row from 0 (dark blue) to its own largest rate (yellow), named in its label.",
                rates.agent
            ),
            false,
        );
    }
    Ok(())
}

/// The pictures of the re-execution: the rasters, the reward strip and the clip.
fn regenerated_pictures(
    page: &mut Page,
    out: &Path,
    record: &RunRecord,
    rows: &[TraceBehaviour],
    wanted: &Wanted,
    kept: &Kept,
) -> Result<(), CliError> {
    if let Some((from, to)) = wanted.raster {
        page.heading("Spikes");
        let ticks = series::step_ticks(rows);
        for (agent, spikes) in raster_points(record.manifest.run_id.as_str(), kept, &ticks)? {
            let name = format!("spikes-{agent}.svg");
            let neurons = spikes.iter().map(|s| s.1 + 1).max().unwrap_or(1);
            let count = spikes.len();
            let raster = plot::Raster {
                agent: agent.clone(),
                from,
                to,
                spikes,
                neurons,
            };
            write_drawn(&out.join(&name), plot::raster(&raster, PLOT_WIDTH, 420))?;
            page.image(
                &name,
                (PLOT_WIDTH, 420),
                &format!(
                    "{count} spikes of {agent} in steps {from}..{to}: one dot per spike (spikes on one pixel share it), neuron index up, time along the steps; regenerated by re-executing the run, every step checked against the trace."
                ),
                false,
            );
        }
    }
    if !kept.strip.is_empty() {
        page.heading("The game at the reward events");
        let pictures: Vec<Picture> = kept.strip.iter().map(|(_, p)| p.scaled(2)).collect();
        let strip = Picture::strip(&pictures, 4);
        strip.write(&out.join("rewards.png"))?;
        let at: Vec<String> = kept.strip.iter().map(|(k, _)| k.to_string()).collect();
        page.image(
            "rewards.png",
            (strip.width, strip.height),
            &format!(
                "The screen at boundaries {} (regenerated, each checked against the trace).",
                at.join(", ")
            ),
            true,
        );
    }
    if let (Some((from, to, stride)), false) = (wanted.clip, kept.clip.is_empty()) {
        page.heading("A stretch of play");
        let pictures: Vec<Picture> = kept.clip.iter().map(|p| p.scaled(2)).collect();
        let delay = clip_delay(rows, stride);
        let gif =
            crate::animation::gif(&pictures, delay).map_err(|error| CliError::WriteOutput {
                path: out.join("play.gif"),
                error,
            })?;
        write(&out.join("play.gif"), gif)?;
        let size = pictures.first().map_or((0, 0), |p| (p.width, p.height));
        page.image(
            "play.gif",
            size,
            &format!(
                "Boundaries {from}..={to}, every {stride} frame(s), {} ms each, looping (regenerated, each frame checked against the trace).",
                u32::from(delay) * 10
            ),
            true,
        );
    }
    Ok(())
}

/// Writes the images and the page; returns the page's path.
fn write_report(args: &Args, out: &Path) -> Result<PathBuf, CliError> {
    let record = flysim_store::open_run(&args.dir)?;
    let rows: Vec<TraceBehaviour> = record.rows.iter().map(|r| r.behaviour.clone()).collect();
    let steps = record.manifest.steps.get();
    let wanted = Wanted {
        strip: series::reward_boundaries(&rows, STRIP_FRAMES),
        clip: clip(args, &rows, steps),
        raster: raster_window(args, &record)?,
    };
    std::fs::create_dir_all(out).map_err(|error| CliError::WriteOutput {
        path: out.to_owned(),
        error,
    })?;
    let mut page = Page::new(
        record.manifest.run_id.as_str(),
        &series::summary(&record, &series::rewards(&rows)),
    );
    trace_plots(&mut page, out, &rows)?;
    let kept = regenerated::regenerate(&args.dir, &wanted)?;
    regenerated_pictures(&mut page, out, &record, &rows, &wanted, &kept)?;
    if kept.strip.is_empty() && kept.clip.is_empty() {
        page.note("The run records no game frame to show.");
    }
    let path = out.join("report.html");
    write(&path, page.finish())?;
    Ok(path)
}

/// Hands `page` to the browser; what went wrong, for standard error, when it could not.
fn open(page: &Path) -> Option<String> {
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_owned());
    let Some(opener) = crate::host::browser_opener() else {
        return Some(format!(
            "no browser to open the report with (set BROWSER, or install xdg-open); open {} yourself\n",
            page.display()
        ));
    };
    // Not waited for: a browser named by `BROWSER` may stay open as long as the user likes.
    match std::process::Command::new(&opener)
        .arg(&page)
        .stdin(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => None,
        Err(e) => Some(format!(
            "cannot start {} ({e}); open {} yourself\n",
            opener.display(),
            page.display()
        )),
    }
}

pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let out = args.out.clone().unwrap_or_else(|| args.dir.join("report"));
    let page = write_report(args, &out)?;
    let stderr = if args.open { open(&page) } else { None };
    Ok(Printed {
        stdout: format!("report written to {}\n", page.display()),
        stderr: stderr.unwrap_or_default(),
        code: exit::SUCCESS,
    })
}
