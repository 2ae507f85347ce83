//! The progress line of `flysim run` and `flysim resume` on standard error: steps done of the
//! bound, steps per second, the time left at that rate and each agent's score (the rewards it
//! was given in this invocation). It is redrawn in place, cut to the terminal's width so it
//! never wraps, at most ten times a second; when standard error is not a terminal it draws
//! nothing. Until the first boundary is committed (a Dolphin world boots for seconds) it shows
//! a starting line. It also remembers the run directory, which a failure's `--json` object
//! names.
//!
//! It knows nothing of what a run does; it is only told what was committed.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flysim_types::Id;
use flysim_types::trace::TraceBehaviour;

/// The line shown until the first boundary is committed.
const STARTING: &str = "starting: launching the workers and booting the world...";

/// How often the line is redrawn at most.
const REDRAW_EVERY: Duration = Duration::from_millis(100);

/// The terminal's width in columns, when standard error is a terminal that says.
fn terminal_width() -> Option<usize> {
    #[expect(unsafe_code, reason = "asking the terminal its size (FFI)")]
    // SAFETY: TIOCGWINSZ fills the `winsize` it is handed and nothing else.
    let size = unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        (libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &raw mut size) == 0).then_some(size)
    };
    size.map(|s| usize::from(s.ws_col)).filter(|w| *w > 0)
}

/// `seconds` as `1h02m`, `3m07s` or `12s`.
fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "?".into();
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a finite, non-negative number of seconds, shown rounded"
    )]
    let s = seconds.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// The progress line, and the run directory it was told of.
pub(crate) struct Bar {
    on: bool,
    started: Instant,
    first: Option<u64>,
    last: Option<Instant>,
    scores: BTreeMap<Id, f64>,
    pub(crate) run_dir: Option<PathBuf>,
}

impl Bar {
    /// A bar drawn on standard error when it is a terminal.
    pub(crate) fn new() -> Self {
        Self {
            on: std::io::stderr().is_terminal(),
            started: Instant::now(),
            first: None,
            last: None,
            scores: BTreeMap::new(),
            run_dir: None,
        }
    }

    /// The line for boundary `done` of `total`, at most `width` characters.
    fn line(&self, done: u64, total: u64, width: usize) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let steps = done.saturating_sub(self.first.unwrap_or(done));
        #[expect(clippy::cast_precision_loss, reason = "a rate, shown rounded")]
        let rate = if elapsed > 0.0 {
            steps as f64 / elapsed
        } else {
            0.0
        };
        #[expect(clippy::cast_precision_loss, reason = "a time left, shown rounded")]
        let eta = if rate > 0.0 {
            duration(total.saturating_sub(done) as f64 / rate)
        } else {
            "?".into()
        };
        let scores: Vec<String> = self
            .scores
            .iter()
            .map(|(agent, score)| format!("{agent} {score:.1}"))
            .collect();
        let mut text = format!("{done}/{total} steps  {rate:.1} steps/s  ETA {eta}");
        if !scores.is_empty() {
            text.push_str(&format!("  score {}", scores.join(", ")));
        }
        // A bar in what room is left, at most 30 wide.
        let room = width.saturating_sub(text.chars().count() + 3).min(30);
        let mut out = if room >= 10 {
            let filled = usize::try_from((done * room as u64).checked_div(total).unwrap_or(0))
                .unwrap_or(room)
                .min(room);
            format!(
                "[{}{}] {text}",
                "#".repeat(filled),
                ".".repeat(room - filled)
            )
        } else {
            text
        };
        if out.chars().count() >= width {
            out = out.chars().take(width.saturating_sub(1)).collect();
        }
        out
    }

    fn draw(&mut self, done: u64, total: u64) {
        if !self.on {
            return;
        }
        let due = self.last.is_none_or(|t| t.elapsed() >= REDRAW_EVERY);
        if !due && done < total {
            return;
        }
        self.last = Some(Instant::now());
        let width = terminal_width().unwrap_or(80);
        // Carriage return and erase the line: redrawn in place whatever the width.
        let _ = write!(
            std::io::stderr(),
            "\r\x1b[2K{}",
            self.line(done, total, width)
        );
    }
}

impl flysim_run::Progress for Bar {
    fn started(&mut self, run_dir: &Path) {
        self.run_dir = Some(run_dir.to_owned());
        if self.on {
            // Until boundary 0 is committed (a Dolphin world boots for seconds) a line, not a
            // blank screen.
            let width = terminal_width().unwrap_or(80);
            let line: String = STARTING.chars().take(width.saturating_sub(1)).collect();
            let _ = write!(std::io::stderr(), "\r\x1b[2K{line}");
            self.last = Some(Instant::now());
        }
    }

    fn committed(&mut self, done: u64, total: u64) {
        if self.first.is_none() {
            self.first = Some(done);
            self.started = Instant::now();
        }
        self.draw(done, total);
    }

    fn row(&mut self, row: &TraceBehaviour, total: u64) {
        for agent in &row.agents {
            let score = self.scores.entry(agent.agent_id.clone()).or_insert(0.0);
            *score += agent.rewards.iter().map(|r| r.value).sum::<f64>();
        }
        self.committed(row.boundary.get(), total);
    }

    fn finished(&mut self) {
        if self.on && self.last.is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar() -> Bar {
        let mut bar = Bar::new();
        bar.first = Some(0);
        bar.scores.insert(Id::parse("fly-a").unwrap(), 2.5);
        bar
    }

    #[test]
    fn the_line_names_rate_eta_and_scores_and_never_passes_the_width() {
        let bar = bar();
        let wide = bar.line(30, 600, 200);
        assert!(wide.starts_with('['), "{wide}");
        assert!(wide.contains("30/600 steps"), "{wide}");
        assert!(wide.contains("steps/s") && wide.contains("ETA "), "{wide}");
        assert!(wide.contains("score fly-a 2.5"), "{wide}");
        for width in [1, 10, 20, 40, 79, 200] {
            assert!(
                bar.line(30, 600, width).chars().count() < width.max(2),
                "{width}"
            );
        }
    }

    #[test]
    fn durations_read_as_hours_minutes_or_seconds() {
        assert_eq!(duration(12.2), "12s");
        assert_eq!(duration(187.0), "3m07s");
        assert_eq!(duration(3720.0), "1h02m");
        assert_eq!(duration(f64::INFINITY), "?");
    }
}
