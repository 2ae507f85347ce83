//! Sweeps as a library: a resolved sweep written into a sweep directory (its index, every
//! member's plan, the content the plans pin), its members run there with a bounded pool (each
//! member in its own state directory, a completed member never run again, an interrupted one
//! continued from its checkpoint), and the members read back into one table.
//!
//! A sweep directory:
//!
//! ```text
//! DIR/sweep.json                      the index: sweep digest, axes, each member's values and plan digest
//! DIR/content/<sha256 hex>            every content asset the plans pin
//! DIR/members/0003/plan.json          member 3's plan
//! DIR/members/0003/runs/<runId>/      member 3's run directories (its state directory is members/0003)
//! ```
//!
//! - `dir`: the index and the directory's layout, written and read back, each member's state.
//! - `execute`: one member run, and the pool that runs them all.
//! - `collect`: the table of every member.
//!
//! It does not resolve compositions (`flysim_compose::sweep` does) and prints nothing: the
//! caller is told of each member as it finishes.

mod collect;
mod dir;
mod execute;

use std::path::PathBuf;

pub use collect::{MemberRow, Table, collect};
pub use dir::{
    AxisValue, INDEX_FILE, INDEX_FORMAT_VERSION, Index, IndexMember, MemberState, SweepDir,
};
pub use execute::{Done, Outcome, run_member, run_members};
use flysim_types::Digest;
use miette::Diagnostic;
use thiserror::Error;

/// Why a sweep directory cannot be used as asked.
#[derive(Debug, Error, Diagnostic)]
pub enum SweepError {
    /// A member's plan, or a run in its state directory, is not the plan the sweep declared.
    #[error(
        "member {index} of {dir}: {what} is plan sha256:{found}, the sweep declares sha256:{declared}"
    )]
    #[diagnostic(
        code("FS0936"),
        help(
            "a sweep directory holds the plans it declared and their runs only; remove what was put there by hand, or write the sweep into a fresh directory"
        )
    )]
    ForeignPlan {
        /// The sweep directory.
        dir: PathBuf,
        /// The member.
        index: usize,
        /// What holds the other plan (`members/0003/plan.json`, a run directory).
        what: String,
        /// The digest found.
        found: Digest,
        /// The digest the index declares.
        declared: Digest,
    },
    /// A directory that is not a sweep directory, whose index is damaged, or that holds
    /// another sweep.
    #[error("{dir} {reason}")]
    #[diagnostic(
        code("FS0937"),
        help(
            "a sweep directory is written by the sweep commands (its index is sweep.json); give each sweep its own directory"
        )
    )]
    NotThisSweep {
        /// The directory.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A member index the sweep does not have.
    #[error("the sweep in {dir} has {members} members (0 to {last}); there is no member {index}")]
    #[diagnostic(
        code("FS0938"),
        help("members are numbered from 0 in grid order; sweep.json lists them")
    )]
    NoMember {
        /// The sweep directory.
        dir: PathBuf,
        /// The index asked for.
        index: usize,
        /// How many members it has.
        members: usize,
        /// The last index.
        last: usize,
    },
    /// The directory could not be written or read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Store(#[from] flysim_store::StoreError),
    /// A value could not be written in its canonical form, or read back.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] flysim_types::ContractError),
}
