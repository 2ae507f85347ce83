//! `flysim frames RUN_DIR --steps A..B --out DIR [--scale N]`: a run's game frames as PNG
//! files, `DIR/<view>-<boundary>.png`. Frames are not stored in a run directory: the run is
//! re-executed in-process and every frame is checked against the trace's view digest before
//! it is written (`flysim_run::regenerate`).
//!
//! It knows nothing of how a run is re-executed or checked; it parses the range, scales and
//! writes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use flysim_session::TappedFrame;

use crate::error::CliError;
use crate::picture::Picture;

/// Arguments of `flysim frames`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A run directory written by `flysim run`
    #[arg(value_name = "RUN_DIR")]
    dir: PathBuf,
    /// The boundaries whose frames are written, inclusive (`N` for one)
    #[arg(long, value_name = "A..B", value_parser = parse_steps)]
    steps: (u64, u64),
    /// Where the PNG files go (created if missing)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Each pixel as an N x N block (nearest neighbour)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=16))]
    scale: u32,
}

/// `A..B` (inclusive) or `N`.
pub(crate) fn parse_steps(text: &str) -> Result<(u64, u64), String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{s}` is not a boundary (a whole number)"))
    };
    let (from, to) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b.strip_prefix('=').unwrap_or(b))?),
        None => (number(text)?, number(text)?),
    };
    if from > to {
        return Err(format!(
            "{from}..{to} is empty: the first boundary comes after the last"
        ));
    }
    Ok((from, to))
}

/// The file a frame goes to.
fn frame_path(out: &Path, view: &str, boundary: u64) -> PathBuf {
    out.join(format!("{view}-{boundary}.png"))
}

/// Writes one checked frame (scaled); the first failure is kept and the rest skipped.
fn write_frame(
    frame: &TappedFrame<'_>,
    out: &Path,
    scale: u32,
    written: &Mutex<(u64, Option<CliError>)>,
) {
    let mut written = written.lock().unwrap_or_else(PoisonError::into_inner);
    if written.1.is_some() {
        return;
    }
    let path = frame_path(out, frame.view_id.as_str(), frame.boundary);
    let picture = frame
        .view
        .and_then(|v| Picture::from_rows(frame.bytes, v.width, v.height, v.row_stride as usize));
    // Made with the first frame, so a refused run leaves no directory behind.
    let made = std::fs::create_dir_all(out).map_err(|error| CliError::WriteOutput {
        path: out.to_owned(),
        error,
    });
    let result = match (made, picture) {
        (Err(e), _) => Err(e),
        (Ok(()), Some(picture)) => picture.scaled(scale).write(&path),
        (Ok(()), None) => Err(CliError::WriteOutput {
            path,
            error: std::io::Error::other("the frame does not have its view's declared shape"),
        }),
    };
    match result {
        Ok(()) => written.0 += 1,
        Err(e) => written.1 = Some(e),
    }
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let (from, to) = args.steps;
    let written = Arc::new(Mutex::new((0_u64, None)));
    let sink = {
        let (out, scale, written) = (args.out.clone(), args.scale, Arc::clone(&written));
        Arc::new(move |frame: &TappedFrame<'_>| write_frame(frame, &out, scale, &written))
    };
    let mut bar = crate::progress::Bar::new();
    let regenerated =
        flysim_run::regenerate(&args.dir, from, to, sink, &crate::host::host(), &mut bar)?;
    let (count, failed) =
        std::mem::take(&mut *written.lock().unwrap_or_else(PoisonError::into_inner));
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(format!(
        "{count} frame(s) of {} written to {} (boundaries {from}..={to}, each checked against the trace; {} rows re-executed)\n",
        regenerated.run_id,
        args.out.display(),
        regenerated.rows
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_steps;

    #[test]
    fn ranges_are_inclusive_and_ordered() {
        assert_eq!(parse_steps("100..110"), Ok((100, 110)));
        assert_eq!(parse_steps("100..=110"), Ok((100, 110)));
        assert_eq!(parse_steps("7"), Ok((7, 7)));
        assert!(parse_steps("9..3").is_err());
        assert!(parse_steps("a..3").is_err());
    }
}
