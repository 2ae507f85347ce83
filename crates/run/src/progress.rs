//! How a run reports progress to whoever shows it (the binary draws a bar on a terminal).
//! Progress is told what was committed; it can never change what a run does.

use flysim_types::trace::TraceBehaviour;

/// Told of every committed boundary.
pub trait Progress {
    /// The invocation writes the run directory `run_dir` (told before its first step, so a
    /// failure can still name it).
    fn started(&mut self, run_dir: &std::path::Path) {
        let _ = run_dir;
    }

    /// Boundary `boundary` of at most `total` is committed.
    fn committed(&mut self, boundary: u64, total: u64);

    /// The row of a committed boundary (its agents' rewards, say), of at most `total`; by
    /// default only its boundary is told.
    fn row(&mut self, row: &TraceBehaviour, total: u64) {
        self.committed(row.boundary.get(), total);
    }

    /// The invocation is over (whatever its outcome): clear what was drawn.
    fn finished(&mut self) {}
}

/// Progress nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn committed(&mut self, _boundary: u64, _total: u64) {}
}
