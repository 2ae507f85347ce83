//! The refusals of a declared memory task (`task "memory-v1" { … }`): a task block where the
//! task takes none or none where it needs one, an address the environment's backend cannot
//! read, a type that does not fit its address or its options, a name that is not declared, a
//! reward that pays both on a condition and on rises or drops.
//! Each is what the run would refuse before its first step.
//!
//! It knows the diagnostics' shape only; the checks that raise them are the resolver's.

use miette::{Diagnostic, SourceSpan};
use thiserror::Error;

use super::Src;

/// A memory task declaration the resolver refuses, with its code.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum MemoryProblem {
    /// An address outside every region the backend lets tasks read.
    #[error(
        "variable `{variable}` is at {address:#x}, which the {backend} backend does not let tasks read"
    )]
    #[diagnostic(code("FS0257"))]
    Unreadable {
        /// The source.
        #[source_code]
        src: Src,
        /// The variable.
        variable: String,
        /// Its address.
        address: u32,
        /// The backend.
        backend: String,
        /// The address.
        #[label("not readable")]
        at: SourceSpan,
        /// The readable regions.
        #[help]
        help: Option<String>,
    },
    /// A type that does not fit: its bytes run past the readable region, or it has an option
    /// of another type (or lacks its own).
    #[error("variable `{variable}`: {reason}")]
    #[diagnostic(code("FS0258"))]
    TypeFit {
        /// The source.
        #[source_code]
        src: Src,
        /// The variable.
        variable: String,
        /// What does not fit.
        reason: String,
        /// The type or option at fault.
        #[label("does not fit")]
        at: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
    /// A reward or condition naming a variable (or a port) that is not declared.
    #[error("{what} `{found}` is not declared")]
    #[diagnostic(code("FS0259"))]
    Unknown {
        /// The source.
        #[source_code]
        src: Src,
        /// `variable` or `port`.
        what: &'static str,
        /// The name.
        found: String,
        /// It.
        #[label("not declared")]
        at: SourceSpan,
        /// A suggestion and the declared names.
        #[help]
        help: Option<String>,
    },
    /// A reward rule with both a condition and `on`.
    #[error("reward `{rule}` pays on a condition and `on` rises or drops: choose one")]
    #[diagnostic(code("FS0261"))]
    OnWithCondition {
        /// The source.
        #[source_code]
        src: Src,
        /// The rule.
        rule: String,
        /// `on=`.
        #[label("pays each rise or drop")]
        at: SourceSpan,
        /// The condition's comparison.
        #[label("pays once where this starts to hold")]
        condition: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
    /// A block on a task that takes none, or a memory task without its variables.
    #[error("{reason}")]
    #[diagnostic(code("FS0260"))]
    Block {
        /// The source.
        #[source_code]
        src: Src,
        /// What is wrong.
        reason: String,
        /// The task node.
        #[label("here")]
        at: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
}
