//! The corpus: the named well-formed (or interestingly malformed) inputs a campaign starts from,
//! read from directories or given as bytes. It knows nothing about mutation or targets.

use std::io;
use std::path::Path;

/// One named input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Where it came from (a path relative to the directory it was read from, or a given name).
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The inputs a campaign mutates, in a fixed order.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    samples: Vec<Sample>,
}

impl Corpus {
    /// An empty corpus.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one input.
    pub fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.samples.push(Sample {
            name: name.into(),
            bytes,
        });
    }

    /// Adds every file under `dir` (recursively, in path order) whose path `keep` accepts;
    /// returns how many were added.
    ///
    /// # Errors
    ///
    /// Any error reading the directory tree or a file.
    pub fn add_files(&mut self, dir: &Path, keep: impl Fn(&Path) -> bool) -> io::Result<usize> {
        let mut paths = Vec::new();
        walk(dir, &mut paths)?;
        paths.sort();
        let mut added = 0;
        for path in paths.into_iter().filter(|p| keep(p)) {
            let name = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            self.add(name, std::fs::read(&path)?);
            added += 1;
        }
        Ok(added)
    }

    /// The inputs, in the order they were added.
    #[must_use]
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// How many inputs there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// Every file path under `dir`.
fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether a path ends in `.ext` (a filter for [`Corpus::add_files`]).
#[must_use]
pub fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}
