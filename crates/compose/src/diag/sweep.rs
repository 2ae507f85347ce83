//! The refusals of a `sweep` block: an axis that names nothing the composition has, an axis
//! without values (or a backward range), a family larger than the language allows, two axes
//! that vary the same thing.
//!
//! It knows the diagnostics' shape only; the decoder and the sweep's expansion raise them.

use miette::{Diagnostic, SourceSpan};
use thiserror::Error;

use super::Src;

/// A `sweep` block that does not describe a family of plans, with its code.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum SweepProblem {
    /// An axis whose target is not something a sweep can vary, or names an undeclared profile.
    #[error("a sweep cannot vary {target:?}: {reason}")]
    #[diagnostic(code("FS0270"))]
    UnknownTarget {
        /// The source.
        #[source_code]
        src: Src,
        /// The target as written.
        target: String,
        /// Why it names nothing.
        reason: String,
        /// It.
        #[label("not a sweep target")]
        at: SourceSpan,
        /// The targets a sweep can vary, or the profiles declared.
        #[help]
        help: Option<String>,
    },
    /// An axis with no value, or a range whose `from` is above its `to`.
    #[error("the sweep axis {target:?} has no values: {reason}")]
    #[diagnostic(code("FS0271"))]
    EmptyAxis {
        /// The source.
        #[source_code]
        src: Src,
        /// The axis's target.
        target: String,
        /// What is wrong.
        reason: String,
        /// The axis.
        #[label("no values")]
        at: SourceSpan,
        /// How to write one.
        #[help]
        help: Option<String>,
    },
    /// A family of more members than the language allows.
    #[error("the sweep has {members} members, more than the {limit} a sweep may have")]
    #[diagnostic(
        code("FS0272"),
        help(
            "the members are the product of the axes' value counts; split the study into several sweeps, or vary fewer values"
        )
    )]
    TooManyMembers {
        /// The source.
        #[source_code]
        src: Src,
        /// The product of the axes' sizes (saturating).
        members: u128,
        /// The limit.
        limit: usize,
        /// The block.
        #[label("this sweep")]
        at: SourceSpan,
    },
    /// Two axes that vary the same target.
    #[error("two sweep axes vary {target:?}")]
    #[diagnostic(
        code("FS0273"),
        help("a target is varied by one axis; put every value of it on that axis")
    )]
    RepeatedTarget {
        /// The source.
        #[source_code]
        src: Src,
        /// The target.
        target: String,
        /// The second axis.
        #[label("varied again here")]
        at: SourceSpan,
        /// The first one.
        #[label("first varied here")]
        first: SourceSpan,
    },
}
