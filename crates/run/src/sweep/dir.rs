//! The sweep directory: its index (`sweep.json`), each member's plan and state directory, the
//! content the plans pin; written once for a sweep (and found again, unchanged, when the same
//! sweep is written there again), read back with every digest checked; and where each member
//! stands, from the run directories in its state directory.
//!
//! It knows files and digests; it does not run anything.

use std::path::{Path, PathBuf};

use flysim_compose::SweepPlan;
use flysim_store::{StoreError, write_durably};
use flysim_types::Digest;
use flysim_types::plan::LaunchPlan;
use flysim_types::trace::{RunManifest, RunStatus};
use serde::{Deserialize, Serialize};

use super::SweepError;
use crate::content::{CONTENT_DIR, ContentSource};

/// The index's file name.
pub const INDEX_FILE: &str = "sweep.json";
/// The format of the index this build writes and reads.
pub const INDEX_FORMAT_VERSION: u32 = 1;

/// `sweep.json`: what the sweep declares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Index {
    /// [`INDEX_FORMAT_VERSION`].
    pub format_version: u32,
    /// The composition's name.
    pub name: String,
    /// The sweep digest (`flysim_compose::sweep::sweep_digest` of the members' plan digests).
    pub sweep_digest: Digest,
    /// The axes' targets, in declaration order.
    pub axes: Vec<String>,
    /// The members, member `i` at index `i`.
    pub members: Vec<IndexMember>,
}

/// One member as the index declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IndexMember {
    /// Its index.
    pub index: usize,
    /// Each axis's value for it, `{"target", "value"}`, in axis order.
    pub values: Vec<AxisValue>,
    /// Its plan's digest.
    pub plan_digest: Digest,
}

/// One axis's value for a member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AxisValue {
    /// The axis's target.
    pub target: String,
    /// The value.
    pub value: serde_json::Value,
}

/// Where a member stands.
#[derive(Debug, Clone)]
pub enum MemberState {
    /// No run directory yet.
    Missing,
    /// A run completed its plan: this one (the first in run-id order).
    Complete(PathBuf, RunManifest),
    /// Runs exist, none complete: the newest (by run id).
    Unfinished(PathBuf, RunManifest),
}

/// A sweep directory with its index read and checked.
#[derive(Debug, Clone)]
pub struct SweepDir {
    dir: PathBuf,
    index: Index,
}

fn unreadable(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Unreadable {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

impl SweepDir {
    /// Writes `sweep` into `dir`: each member's plan, the content `content` finds for them, and
    /// the index last (so an index means a whole sweep directory). A directory that already
    /// holds this sweep is kept as it is (its runs too); one that holds another is refused.
    ///
    /// # Errors
    ///
    /// [`SweepError::NotThisSweep`] for another sweep's directory; a write that fails.
    pub fn prepare(
        dir: &Path,
        sweep: &SweepPlan,
        content: &ContentSource,
    ) -> Result<Self, SweepError> {
        let index = Index {
            format_version: INDEX_FORMAT_VERSION,
            name: sweep.name.clone(),
            sweep_digest: sweep.digest,
            axes: sweep.axes.clone(),
            members: sweep
                .members
                .iter()
                .map(|m| IndexMember {
                    index: m.index,
                    values: m
                        .values
                        .iter()
                        .map(|(target, value)| AxisValue {
                            target: target.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                    plan_digest: m.plan.plan_digest,
                })
                .collect(),
        };
        if dir.join(INDEX_FILE).exists() {
            let found = Self::open(dir)?;
            if found.index.sweep_digest != index.sweep_digest {
                return Err(SweepError::NotThisSweep {
                    dir: dir.to_owned(),
                    reason: format!(
                        "holds sweep sha256:{}, not sha256:{}",
                        found.index.sweep_digest, index.sweep_digest
                    ),
                });
            }
            return Ok(found);
        }
        let made = Self {
            dir: dir.to_owned(),
            index,
        };
        let content_dir = dir.join(CONTENT_DIR);
        create(&content_dir)?;
        for member in &sweep.members {
            let member_dir = made.member_dir(member.index);
            create(&member_dir)?;
            let text = format!("{}\n", member.plan.to_canonical()?);
            write_durably(&member_dir.join(flysim_store::PLAN_FILE), text.as_bytes())?;
            for (digest, bytes) in content.preload(&member.plan) {
                let path = content_dir.join(digest.hex());
                if !path.exists() {
                    write_durably(&path, &bytes)?;
                }
            }
        }
        let text = flysim_types::payload::to_canonical(&made.index)?;
        write_durably(&dir.join(INDEX_FILE), format!("{text}\n").as_bytes())?;
        Ok(made)
    }

    /// Reads the sweep directory `dir`: its index, checked against its own sweep digest.
    ///
    /// # Errors
    ///
    /// [`SweepError::NotThisSweep`] without a readable, consistent index.
    pub fn open(dir: &Path) -> Result<Self, SweepError> {
        let path = dir.join(INDEX_FILE);
        let not = |reason: String| SweepError::NotThisSweep {
            dir: dir.to_owned(),
            reason,
        };
        let bytes = std::fs::read(&path)
            .map_err(|e| not(format!("is not a sweep directory: {INDEX_FILE}: {e}")))?;
        let index: Index = serde_json::from_slice(&bytes)
            .map_err(|e| not(format!("has a damaged {INDEX_FILE}: {e}")))?;
        if index.format_version != INDEX_FORMAT_VERSION {
            return Err(not(format!(
                "has a {INDEX_FILE} of format {}; this build reads format {INDEX_FORMAT_VERSION}",
                index.format_version
            )));
        }
        let ordered = index.members.iter().enumerate().all(|(i, m)| m.index == i);
        let digest =
            flysim_compose::sweep::sweep_digest(index.members.iter().map(|m| &m.plan_digest));
        if !ordered || digest != index.sweep_digest {
            return Err(not(format!(
                "has a damaged {INDEX_FILE}: its members do not make sweep sha256:{}",
                index.sweep_digest
            )));
        }
        Ok(Self {
            dir: dir.to_owned(),
            index,
        })
    }

    /// The directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The index.
    #[must_use]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Member `index`'s state directory, `members/NNNN`.
    #[must_use]
    pub fn member_dir(&self, index: usize) -> PathBuf {
        self.dir.join("members").join(format!("{index:04}"))
    }

    /// The content directory.
    #[must_use]
    pub fn content_dir(&self) -> PathBuf {
        self.dir.join(CONTENT_DIR)
    }

    /// The declared member `index`.
    ///
    /// # Errors
    ///
    /// [`SweepError::NoMember`].
    pub fn member(&self, index: usize) -> Result<&IndexMember, SweepError> {
        self.index
            .members
            .get(index)
            .ok_or_else(|| SweepError::NoMember {
                dir: self.dir.clone(),
                index,
                members: self.index.members.len(),
                last: self.index.members.len().saturating_sub(1),
            })
    }

    /// Member `index`'s plan, read strictly and checked against the declared digest.
    ///
    /// # Errors
    ///
    /// [`SweepError::NoMember`], [`SweepError::ForeignPlan`], an unreadable plan.
    pub fn plan(&self, index: usize) -> Result<LaunchPlan, SweepError> {
        let declared = self.member(index)?.plan_digest;
        let path = self.member_dir(index).join(flysim_store::PLAN_FILE);
        let bytes = std::fs::read(&path).map_err(|e| unreadable(&path, e.to_string()))?;
        let plan: LaunchPlan =
            flysim_types::parse_payload(&bytes).map_err(|e| unreadable(&path, e.to_string()))?;
        if plan.plan_digest != declared {
            return Err(SweepError::ForeignPlan {
                dir: self.dir.clone(),
                index,
                what: format!("members/{index:04}/plan.json"),
                found: plan.plan_digest,
                declared,
            });
        }
        Ok(plan)
    }

    /// Where member `index` stands. A run directory of another plan in its state directory is
    /// refused; one without a readable plan and manifest (a run killed before its first
    /// manifest) is passed over.
    ///
    /// # Errors
    ///
    /// [`SweepError::NoMember`], [`SweepError::ForeignPlan`], an unreadable runs directory.
    pub fn state(&self, index: usize) -> Result<MemberState, SweepError> {
        let declared = self.member(index)?.plan_digest;
        let runs = self.member_dir(index).join(flysim_store::RUNS_DIR);
        let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&runs) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(unreadable(&runs, e.to_string()).into()),
        };
        dirs.sort_by_key(|d| run_order(d));
        let mut newest = None;
        for dir in dirs {
            let Ok((plan, manifest)) = flysim_store::open_plan(&dir) else {
                continue;
            };
            if plan.plan_digest != declared {
                return Err(SweepError::ForeignPlan {
                    dir: self.dir.clone(),
                    index,
                    what: format!("run {}", dir.display()),
                    found: plan.plan_digest,
                    declared,
                });
            }
            if manifest.status == RunStatus::Complete {
                return Ok(MemberState::Complete(dir, manifest));
            }
            newest = Some((dir, manifest));
        }
        Ok(newest.map_or(MemberState::Missing, |(d, m)| MemberState::Unfinished(d, m)))
    }
}

/// A run directory's place among its member's runs: the counter its run id ends with
/// (`<name>-<digest>-<n>`), then the name.
fn run_order(dir: &Path) -> (u64, String) {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = name
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    (n, name)
}

/// Creates `dir` and its parents.
fn create(dir: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(|source| StoreError::Write {
        action: "create",
        path: dir.to_owned(),
        source,
    })
}
