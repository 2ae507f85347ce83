//! A campaign: one target's search. It replays the regression inputs kept for the target, then
//! the corpus as it is, then mutated corpus inputs until the budget ends, each under
//! `catch_unwind`; the first panic fails the campaign with a message that keeps the input. It
//! knows nothing about any format: the target's check is a closure over bytes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::budget::{Budget, seed_from_env};
use crate::corpus::{Corpus, has_extension};
use crate::crash::{describe, run_caught};
use crate::mutate::Mutator;
use crate::rng::{SplitMix, seed_of};

/// No mutated input is longer than this.
const MAX_INPUT_BYTES: usize = 1 << 20;

/// What a campaign did, when nothing panicked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The regression files replayed, by name.
    pub replayed: Vec<String>,
    /// The regression files skipped as known failures, by name.
    pub skipped: Vec<String>,
    /// The corpus inputs run unmutated.
    pub corpus: usize,
    /// The mutated inputs run.
    pub mutated: u64,
    /// The seed of the mutations.
    pub seed: u64,
}

/// One target's campaign, before it runs.
#[derive(Debug, Clone)]
pub struct Campaign<'a> {
    target: &'a str,
    corpus: &'a Corpus,
    regressions: Option<PathBuf>,
    known_failures: Vec<&'a str>,
    seed: u64,
}

impl<'a> Campaign<'a> {
    /// A campaign named `target` over `corpus`, seeded from its name (or the seed variable).
    #[must_use]
    pub fn new(target: &'a str, corpus: &'a Corpus) -> Self {
        Self {
            target,
            corpus,
            regressions: None,
            known_failures: Vec::new(),
            seed: seed_from_env().unwrap_or_else(|| seed_of(target)),
        }
    }

    /// Replays every file in `dir` first (a missing directory holds none).
    #[must_use]
    pub fn regressions(mut self, dir: impl Into<PathBuf>) -> Self {
        self.regressions = Some(dir.into());
        self
    }

    /// Skips the regression file `name`: a known failure, not yet fixed where it fails.
    #[must_use]
    pub fn known_failure(mut self, name: &'a str) -> Self {
        self.known_failures.push(name);
        self
    }

    /// Runs the campaign.
    ///
    /// # Panics
    ///
    /// On the first input `check` panics on, with the input's origin, the panic, where the
    /// input was kept and its hex; or if the regression directory cannot be read.
    pub fn run(&self, budget: Budget, check: impl Fn(&[u8])) -> Report {
        let mut report = Report {
            replayed: Vec::new(),
            skipped: Vec::new(),
            corpus: 0,
            mutated: 0,
            seed: self.seed,
        };
        let fail = |origin: &str, panic: &str, bytes: &[u8]| -> ! {
            panic!("{}", describe(self.target, origin, panic, bytes))
        };
        for sample in self.regression_files().samples() {
            if self.known_failures.contains(&sample.name.as_str()) {
                report.skipped.push(sample.name.clone());
                continue;
            }
            if let Some(panic) = run_caught(&check, &sample.bytes) {
                fail(
                    &format!("regression `{}`", sample.name),
                    &panic,
                    &sample.bytes,
                );
            }
            report.replayed.push(sample.name.clone());
        }
        for sample in self.corpus.samples() {
            if let Some(panic) = run_caught(&check, &sample.bytes) {
                fail(
                    &format!("corpus input `{}`", sample.name),
                    &panic,
                    &sample.bytes,
                );
            }
            report.corpus += 1;
        }
        let inputs: Vec<Vec<u8>> = self
            .corpus
            .samples()
            .iter()
            .map(|s| s.bytes.clone())
            .collect();
        let longest = inputs.iter().map(Vec::len).max().unwrap_or(0);
        let mutator = Mutator::new(&inputs, (2 * longest).clamp(4096, MAX_INPUT_BYTES));
        let mut rng = SplitMix::new(self.seed);
        let deadline = Deadline::of(budget);
        while !deadline.reached(report.mutated) {
            let bytes = mutator.next_input(&mut rng);
            if let Some(panic) = run_caught(&check, &bytes) {
                let origin = format!("mutated input #{} (seed {})", report.mutated + 1, self.seed);
                fail(&origin, &panic, &bytes);
            }
            report.mutated += 1;
        }
        report
    }

    /// The regression inputs, in name order.
    fn regression_files(&self) -> Corpus {
        let mut files = Corpus::new();
        if let Some(dir) = self.regressions.as_deref().filter(|d| d.is_dir()) {
            let added = files.add_files(dir, |p| !has_extension(p, "md"));
            if let Err(e) = added {
                panic!("the regressions in {} cannot be read: {e}", dir.display());
            }
        }
        files
    }
}

/// Runs the campaign `target` over `corpus`, replaying the files in `regressions` first (see
/// [`Campaign::run`]).
///
/// # Panics
///
/// As [`Campaign::run`].
pub fn run(
    target: &str,
    corpus: &Corpus,
    regressions: &Path,
    budget: Budget,
    check: impl Fn(&[u8]),
) -> Report {
    Campaign::new(target, corpus)
        .regressions(regressions)
        .run(budget, check)
}

/// When the mutation loop stops.
enum Deadline {
    Inputs(u64),
    Time(Instant),
}

impl Deadline {
    #[expect(
        clippy::disallowed_methods,
        reason = "a time budget only bounds how long the search runs"
    )]
    fn of(budget: Budget) -> Self {
        match budget {
            Budget::Inputs(n) => Self::Inputs(n),
            Budget::Time(span) => Self::Time(Instant::now() + span),
        }
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a time budget only bounds how long the search runs"
    )]
    fn reached(&self, done: u64) -> bool {
        match self {
            Self::Inputs(n) => done >= *n,
            Self::Time(end) => Instant::now() >= *end,
        }
    }
}
