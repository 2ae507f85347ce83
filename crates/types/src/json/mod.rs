//! Strict JSON reading, RFC 8785 canonical writing, and the wire's compact writing.
//!
//! The reader ([`parse_document`], [`parse_object`], and [`parse_fields`] for an object's
//! top-level fields by name) accepts the subset of JSON the contract can
//! represent exactly and refuses everything else with a code and a byte offset. Numbers are
//! normalised as they are read: a value that is integral and within ±(2^53 − 1) becomes a JSON
//! integer (so `1.0`, `1e0` and `-0` read as `1`, `1` and `0`), anything else stays a double.
//! That is the ECMAScript number model the canonical form is defined over, and it is why
//! `parse(canonical(x)) == x` holds for every value the reader produces.
//!
//! The writer ([`to_canonical`]) produces RFC 8785 (JCS) bytes: object keys in UTF-16 code-unit
//! order, no insignificant whitespace, ECMAScript number formatting, minimal string escapes.
//! [`write_compact`] writes the bus's wire text instead: serde_json's bytes for a value.

pub(crate) mod canonical;
mod compact;
pub(crate) mod scan;
mod strict;
pub(crate) mod writer;

pub use canonical::{Counter, Sink, to_canonical, to_canonical_bytes, utf16_cmp};
pub use compact::{write_compact, write_compact_map, write_compact_str};
pub use strict::{Fields, parse_document, parse_fields, parse_object};

use miette::{Diagnostic, SourceSpan};
use thiserror::Error;

/// A document the strict reader refuses, or a value the canonical writer cannot represent.
///
/// Each variant carries the byte span of the offending text in the input.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
#[non_exhaustive]
pub enum JsonError {
    /// No value at all: zero bytes, or only whitespace.
    #[error("the document is empty")]
    #[diagnostic(
        code("FS0110"),
        help("a payload is exactly one JSON value; here there is none")
    )]
    Empty {
        /// Where the value was expected.
        #[label("a value was expected here")]
        at: SourceSpan,
    },
    /// Bytes that are not UTF-8, or an escape naming a lone surrogate.
    #[error("the document is not valid UTF-8 text: {reason}")]
    #[diagnostic(
        code("FS0111"),
        help("JSON text is UTF-8; re-encode the file, and pair every \\uD800-\\uDFFF escape")
    )]
    InvalidUtf8 {
        /// What is wrong with the bytes.
        reason: String,
        /// The first offending byte.
        #[label("not UTF-8")]
        at: SourceSpan,
    },
    /// Text that is not JSON grammar.
    #[error("invalid JSON: {reason}")]
    #[diagnostic(code("FS0112"), help("check the JSON syntax at the marked place"))]
    Syntax {
        /// What was expected and found.
        reason: String,
        /// The offending text.
        #[label("here")]
        at: SourceSpan,
    },
    /// Input that stops in the middle of a value.
    #[error("the document is truncated: it ends inside {inside}")]
    #[diagnostic(
        code("FS0113"),
        help("the document ends before its value is complete; was the file cut short?")
    )]
    Truncated {
        /// The construct that was still open.
        inside: &'static str,
        /// The end of the input.
        #[label("input ends here")]
        at: SourceSpan,
    },
    /// An object with the same key twice.
    #[error("duplicate key {key:?}")]
    #[diagnostic(
        code("FS0114"),
        help("every key appears once per object; readers disagree on which duplicate wins")
    )]
    DuplicateKey {
        /// The repeated key.
        key: String,
        /// The second occurrence.
        #[label("repeated here")]
        at: SourceSpan,
    },
    /// `NaN`, `Infinity`, or a number too large for a double such as `1e999`.
    #[error("number {text} is not finite")]
    #[diagnostic(
        code("FS0115"),
        help(
            "JSON numbers in flysim are finite doubles; NaN and infinities have no canonical form"
        )
    )]
    NonFinite {
        /// The number as written.
        text: String,
        /// The number.
        #[label("not a finite number")]
        at: SourceSpan,
    },
    /// An integer above 2^53 − 1 written as a JSON number.
    #[error("integer {text} is outside the exact double range (|n| <= 9007199254740991)")]
    #[diagnostic(
        code("FS0116"),
        help("write large counters as U64 strings, e.g. \"9007199254740993\"")
    )]
    UnsafeInteger {
        /// The number as written.
        text: String,
        /// The number.
        #[label("would be rounded")]
        at: SourceSpan,
    },
    /// Anything but whitespace after the value.
    #[error("unexpected data after the JSON value")]
    #[diagnostic(
        code("FS0117"),
        help("a payload is exactly one JSON value; remove what follows it")
    )]
    TrailingData {
        /// The first byte after the value.
        #[label("trailing data starts here")]
        at: SourceSpan,
    },
    /// Arrays and objects nested deeper than the limit.
    #[error("nesting deeper than {limit} levels")]
    #[diagnostic(
        code("FS0118"),
        help("flatten the document; the reader stops at 128 nested arrays and objects")
    )]
    TooDeep {
        /// The limit.
        limit: usize,
        /// The bracket that went over.
        #[label("level {limit} + 1 opens here")]
        at: SourceSpan,
    },
    /// A payload that is valid JSON but not an object.
    #[error("a payload must be a JSON object, found {found}")]
    #[diagnostic(
        code("FS0119"),
        help("wrap the value in an object with the fields its type declares")
    )]
    NotAnObject {
        /// The JSON type found.
        found: &'static str,
        /// The value.
        #[label("not an object")]
        at: SourceSpan,
    },
}

impl JsonError {
    /// The byte span of the offending text.
    #[must_use]
    pub fn span(&self) -> SourceSpan {
        match self {
            Self::Empty { at }
            | Self::InvalidUtf8 { at, .. }
            | Self::Syntax { at, .. }
            | Self::Truncated { at, .. }
            | Self::DuplicateKey { at, .. }
            | Self::NonFinite { at, .. }
            | Self::UnsafeInteger { at, .. }
            | Self::TrailingData { at }
            | Self::TooDeep { at, .. }
            | Self::NotAnObject { at, .. } => *at,
        }
    }
}
