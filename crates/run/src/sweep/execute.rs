//! Running a sweep's members: one member into its own state directory (skipped when a run of
//! it completed, continued from its newest checkpoint when one was interrupted, else run
//! afresh), and a pool of a bounded number of threads that runs every member not yet
//! complete, taking no new member once asked to stop.
//!
//! Every member's run is an ordinary run of its plan: how it is executed (the pool's size,
//! which thread takes it, whether it was continued) never reaches its rows or digests.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{MemberState, SweepDir, SweepError};
use crate::commands::{Execution, resume, run};
use crate::content::ContentSource;
use crate::error::RunError;
use crate::host::Host;
use crate::invocation::RunReport;
use crate::progress::Quiet;

/// What became of a member.
#[derive(Debug)]
pub enum Outcome {
    /// A run of it had completed already; nothing ran.
    Skipped,
    /// It ran (or was continued) in this invocation.
    Ran(RunReport),
    /// Its run could not start or failed.
    Failed(RunError),
}

/// A member finished (or passed over).
#[derive(Debug)]
pub struct Done {
    /// Its index.
    pub index: usize,
    /// What became of it.
    pub outcome: Outcome,
}

/// Runs member `index` of the sweep in `sweep` unless a run of it completed: an interrupted run
/// (paused, or killed while running) is continued from its newest durable checkpoint; a member
/// without one is run afresh in a new run directory.
///
/// # Errors
///
/// What the sweep directory refuses ([`SweepError`]); a run that fails is an
/// [`Outcome::Failed`].
pub fn run_member(
    sweep: &SweepDir,
    index: usize,
    execution: &Execution,
    host: &Host,
) -> Result<Outcome, SweepError> {
    let plan = sweep.plan(index)?;
    let state_dir = sweep.member_dir(index);
    let outcome = match sweep.state(index)? {
        MemberState::Complete(..) => return Ok(Outcome::Skipped),
        MemberState::Unfinished(dir, _)
            if crate::commands::checkpoints(&dir).is_ok_and(|g| !g.is_empty()) =>
        {
            match resume(&dir, None, None, execution, host, &mut Quiet) {
                Ok(report) => Ok(report),
                // A checkpoint that cannot be resumed from: the member runs afresh.
                Err(_) => fresh(sweep, &plan, &state_dir, execution, host),
            }
        }
        MemberState::Unfinished(..) | MemberState::Missing => {
            fresh(sweep, &plan, &state_dir, execution, host)
        }
    };
    Ok(match outcome {
        Ok(report) => Outcome::Ran(report),
        Err(error) => Outcome::Failed(error),
    })
}

/// A new run of `plan` in `state_dir`, its content from the sweep directory.
fn fresh(
    sweep: &SweepDir,
    plan: &flysim_types::plan::LaunchPlan,
    state_dir: &std::path::Path,
    execution: &Execution,
    host: &Host,
) -> Result<RunReport, RunError> {
    let content = ContentSource {
        composition_dir: None,
        registry: host.asset_registry.clone(),
        content_dir: Some(sweep.content_dir()),
    };
    run(plan, &content, state_dir, None, execution, host, &mut Quiet)
}

/// Runs every member of the sweep that has not completed, at most `jobs` at a time (at least
/// one), in member order as threads come free; `finished` is told of each member as it ends,
/// from the thread that ran it. Once `execution.stop` is requested, running members stop at
/// their next committed boundary and no member starts.
///
/// # Errors
///
/// The first refusal of the sweep directory (a foreign plan, say); members already running
/// finish first.
pub fn run_members(
    sweep: &SweepDir,
    jobs: usize,
    execution: &Execution,
    host: &Host,
    finished: &(dyn Fn(&Done) + Sync),
) -> Result<Vec<Done>, SweepError> {
    let count = sweep.index().members.len();
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::with_capacity(count));
    let refused: Mutex<Option<SweepError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, count.max(1)) {
            scope.spawn(|| {
                loop {
                    if execution.stop.requested() || refused.lock().is_ok_and(|r| r.is_some()) {
                        break;
                    }
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= count {
                        break;
                    }
                    match run_member(sweep, index, execution, host) {
                        Ok(outcome) => {
                            let member = Done { index, outcome };
                            finished(&member);
                            if let Ok(mut all) = done.lock() {
                                all.push(member);
                            }
                        }
                        Err(e) => {
                            if let Ok(mut slot) = refused.lock() {
                                slot.get_or_insert(e);
                            }
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = refused.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut done = done.into_inner().unwrap_or_default();
    done.sort_by_key(|d| d.index);
    Ok(done)
}
