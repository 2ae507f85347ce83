//! How a run reports progress to whoever shows it (the binary draws a bar on a terminal).
//! Progress is told what was committed; it can never change what a run does.

/// Told of every committed boundary.
pub trait Progress {
    /// Boundary `boundary` of at most `total` is committed.
    fn committed(&mut self, boundary: u64, total: u64);

    /// The invocation is over (whatever its outcome): clear what was drawn.
    fn finished(&mut self) {}
}

/// Progress nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn committed(&mut self, _boundary: u64, _total: u64) {}
}
