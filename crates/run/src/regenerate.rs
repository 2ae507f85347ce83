//! Regenerating what a run directory does not store (its frames): the recorded plan is
//! re-executed in-process up to a boundary, every regenerated row is checked against the
//! recorded one, and every tapped frame against the recorded view digest before the caller's
//! tap sees it.
//!
//! It knows nothing of what the caller does with a frame (writes a PNG, draws a strip) and
//! reads no flag; it only guarantees that what the tap sees is the recorded run's.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use flysim_session::{
    Deadlines, FrameTap, Pace, RunHooks, RunOptions, SessionError, TappedFrame, run_plan,
};
use flysim_store::open_run;
use flysim_types::Id;
use flysim_types::digest::sha256;
use flysim_types::plan::{RunMode, Transport};
use flysim_types::trace::{DispatchOrder, TraceBehaviour};

use crate::components::registry;
use crate::content::ContentSource;
use crate::error::RunError;
use crate::host::Host;
use crate::progress::Progress;
use crate::spikes::{SpikeSink, recording};

/// What a regeneration re-executed and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regenerated {
    /// The run's id.
    pub run_id: Id,
    /// The boundaries re-executed and checked against the trace (`0..=to`).
    pub rows: u64,
    /// The frames handed to the tap, each checked against its recorded view digest.
    pub frames: u64,
}

/// The first field of a regenerated row that differs from the recorded one.
fn differing_field(recorded: &TraceBehaviour, found: &TraceBehaviour) -> &'static str {
    if recorded.world_time != found.world_time {
        "worldTime"
    } else if recorded.controls != found.controls || recorded.control_digest != found.control_digest
    {
        "controls"
    } else if recorded.agents != found.agents {
        "agents"
    } else if recorded.observation != found.observation {
        "observation"
    } else if recorded.events != found.events {
        "events"
    } else if recorded.episode_request != found.episode_request {
        "episodeRequest"
    } else {
        "behaviour"
    }
}

/// What the checking tap keeps: how many frames it passed on and the first one it refused.
#[derive(Default)]
struct TapRecord {
    frames: u64,
    refused: Option<RunError>,
}

/// A tap that checks each frame against the recorded rows and hands those that match to `sink`.
fn checking_tap(
    run_id: &Id,
    rows: Vec<TraceBehaviour>,
    from: u64,
    to: u64,
    sink: Arc<flysim_session::tap::FrameSink>,
    record: Arc<Mutex<TapRecord>>,
) -> FrameTap {
    let run_id = run_id.to_string();
    let check = move |frame: &TappedFrame<'_>| {
        let mut record = record.lock().unwrap_or_else(PoisonError::into_inner);
        if record.refused.is_some() {
            return;
        }
        let expected = usize::try_from(frame.boundary)
            .ok()
            .and_then(|k| rows.get(k))
            .and_then(|row| {
                row.observation
                    .views
                    .iter()
                    .find(|v| &v.view_id == frame.view_id)
            })
            .map(|v| v.digest);
        let found = sha256(frame.bytes);
        if expected == Some(found) {
            record.frames += 1;
            drop(record);
            sink(frame);
        } else {
            record.refused = Some(RunError::FrameDiffers {
                run_id: run_id.clone(),
                boundary: frame.boundary,
                view: frame.view_id.to_string(),
                detail: match expected {
                    Some(expected) => {
                        format!("its SHA-256 is {found}, the trace records {expected}")
                    }
                    None => "the trace records no such view at this boundary".into(),
                },
            });
        }
    };
    FrameTap {
        from,
        to,
        sink: Arc::new(check),
    }
}

/// Re-executes the run recorded in `dir` (in-process, sequential dispatch) up to boundary
/// `to`, checking every regenerated row against the recorded one, and hands each frame of the
/// boundaries `from..=to` to `tap` once its SHA-256 matches the recorded view digest.
///
/// # Errors
///
/// [`RunError::OutsideRun`] for a range the run did not record, [`RunError::NoViews`] when its
/// rows in range record no view, [`RunError::RowDiffers`] at the first regenerated row that
/// differs (this build or its assets cannot reproduce the run), [`RunError::FrameDiffers`] at
/// the first frame whose digest is not the recorded one (or that is missing), and the
/// directory's or the session's own refusals.
pub fn regenerate(
    dir: &Path,
    from: u64,
    to: u64,
    tap: Arc<flysim_session::tap::FrameSink>,
    host: &Host,
    progress: &mut dyn Progress,
) -> Result<Regenerated, RunError> {
    regenerate_checked(dir, from, to, tap, None, host, progress)
}

/// [`regenerate`], with every LIF agent also handing the spikes of each step it prepares
/// (boundaries `1..=to`) to `spikes`, as the re-execution reaches them; whoever draws them
/// keeps them only once the regeneration succeeded (every row is then the recorded one).
///
/// # Errors
///
/// As [`regenerate`].
pub fn regenerate_with_spikes(
    dir: &Path,
    from: u64,
    to: u64,
    tap: Arc<flysim_session::tap::FrameSink>,
    spikes: Arc<SpikeSink>,
    host: &Host,
    progress: &mut dyn Progress,
) -> Result<Regenerated, RunError> {
    regenerate_checked(dir, from, to, tap, Some(spikes), host, progress)
}

fn regenerate_checked(
    dir: &Path,
    from: u64,
    to: u64,
    tap: Arc<flysim_session::tap::FrameSink>,
    spikes: Option<Arc<SpikeSink>>,
    host: &Host,
    progress: &mut dyn Progress,
) -> Result<Regenerated, RunError> {
    let record = open_run(dir)?;
    let manifest = &record.manifest;
    let run_id = manifest.run_id.clone();
    let steps = manifest.steps.get();
    if from > to || to > steps {
        return Err(RunError::OutsideRun {
            run_id: run_id.to_string(),
            from,
            to,
            steps,
        });
    }
    let rows: Vec<TraceBehaviour> = record.rows.into_iter().map(|r| r.behaviour).collect();
    let wanted: u64 = rows
        .iter()
        .filter(|r| (from..=to).contains(&r.boundary.get()))
        .map(|r| r.observation.views.len() as u64)
        .sum();
    if wanted == 0 {
        return Err(RunError::NoViews {
            run_id: run_id.to_string(),
        });
    }
    let options = RunOptions {
        launch: crate::commands::launch(
            host,
            RunMode::InProcess,
            Transport::Memory,
            Some(manifest.execution.worker_threads),
        ),
        dispatch: DispatchOrder::Sequential,
        steps: to,
        deadlines: Deadlines::default(),
        session_id: run_id.clone(),
        checkpoint_every: None,
        resume: None,
        busy_poll: flysim_session::spin::DEFAULT_BUSY_POLL,
        pace: Pace::Unpaced,
    };
    let content = ContentSource::of_run(dir, host.asset_registry.clone());
    let registry = match spikes {
        Some(sink) => recording(
            registry(&record.plan, &content, host),
            &record.plan,
            &content,
            sink,
        ),
        None => registry(&record.plan, &content, host),
    };
    let tapped = Arc::new(Mutex::new(TapRecord::default()));
    let hooks = RunHooks {
        frame_tap: Some(checking_tap(
            &run_id,
            rows.clone(),
            from,
            to,
            tap,
            Arc::clone(&tapped),
        )),
        ..RunHooks::default()
    };
    let mut checked = 0;
    let mut diverged = None;
    let outcome = run_plan(&record.plan, &options, &registry, hooks, &mut |row| {
        let k = row.behaviour.boundary.get();
        let recorded = usize::try_from(k).ok().and_then(|k| rows.get(k));
        if let Some(recorded) = recorded.filter(|r| **r != row.behaviour) {
            diverged = Some((k, differing_field(recorded, &row.behaviour)));
            // Stops the re-execution; the divergence is what is reported.
            return Err(SessionError::Unavailable {
                what: format!("boundary {k} as recorded"),
                reason: "the regenerated row differs".into(),
            });
        }
        checked += 1;
        progress.committed(k, to);
        Ok(())
    });
    progress.finished();
    if let Some((boundary, field)) = diverged {
        return Err(RunError::RowDiffers {
            run_id: run_id.to_string(),
            boundary,
            field,
        });
    }
    let tapped = std::mem::take(&mut *tapped.lock().unwrap_or_else(PoisonError::into_inner));
    if let Some(refused) = tapped.refused {
        return Err(refused);
    }
    outcome.map_err(|failure| RunError::Session(failure.error))?;
    if tapped.frames != wanted {
        return Err(RunError::FrameDiffers {
            run_id: run_id.to_string(),
            boundary: from,
            view: "every view".into(),
            detail: format!(
                "{} of the {wanted} recorded frames of boundaries {from}..={to} were regenerated",
                tapped.frames
            ),
        });
    }
    Ok(Regenerated {
        run_id,
        rows: checked,
        frames: tapped.frames,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use flysim_types::payload::parse_payload;
    use flysim_types::trace::TransitionTrace;
    use miette::Diagnostic as _;

    /// Boundary 0 of the recorded counter-arena fixture (one view, `counters`).
    fn recorded() -> TraceBehaviour {
        let trace = include_str!("../../../fixtures/runs/synthetic-3/trace.ndjson");
        let line = trace.lines().next().unwrap_or_default();
        let row: TransitionTrace = parse_payload(line.as_bytes()).expect("a recorded row");
        row.behaviour
    }

    #[test]
    fn a_frame_that_is_not_the_recorded_one_is_refused_and_not_passed_on() {
        let passed = Arc::new(AtomicU64::new(0));
        let sink = {
            let passed = Arc::clone(&passed);
            Arc::new(move |_: &TappedFrame<'_>| {
                passed.fetch_add(1, Ordering::Relaxed);
            })
        };
        let record = Arc::new(Mutex::new(TapRecord::default()));
        let run_id = Id::parse("synthetic-1").expect("an id");
        let tap = checking_tap(&run_id, vec![recorded()], 0, 0, sink, Arc::clone(&record));
        let view = Id::parse("counters").expect("an id");
        (tap.sink)(&TappedFrame {
            boundary: 0,
            view_id: &view,
            view: None,
            bytes: b"not the recorded frame",
        });
        assert_eq!(passed.load(Ordering::Relaxed), 0);
        let record = record.lock().expect("not poisoned");
        assert_eq!(record.frames, 0);
        let refused = record.refused.as_ref().expect("refused");
        assert_eq!(
            refused.code().map(|c| c.to_string()).as_deref(),
            Some("FS0933")
        );
        let text = refused.to_string();
        assert!(text.contains("`counters` at boundary 0"), "{text}");
        assert!(
            text.contains(&recorded().observation.views[0].digest.to_string()),
            "{text}"
        );
    }
}
