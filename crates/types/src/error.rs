//! The refusals of the contract layer, one variant per diagnostic code.
//!
//! Every refusal names where it happened (`path`, a dotted field path such as
//! `controls[0].axes[1].value`; empty for a bare value) and the rule that was broken. The codes
//! are registered in `flysim-codes`; `flysim explain FSnnnn` documents each one.

use miette::Diagnostic;
use thiserror::Error;

use crate::json::JsonError;

/// Formats a field path for messages: `at `path`: ` or nothing for the document itself.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("at `{path}`: ")
    }
}

/// A value or document the contract refuses.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
#[non_exhaustive]
pub enum ContractError {
    /// A string that is not an `Id`.
    #[error("{}{value:?} is not an Id: {reason}", at(path))]
    #[diagnostic(
        code("FS0101"),
        help(
            "an Id is 1 to 64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit"
        )
    )]
    InvalidId {
        /// Where the value was found.
        path: String,
        /// The refused text.
        value: String,
        /// Which part of the rule it breaks.
        reason: &'static str,
    },
    /// A string that is not a canonical `U64`.
    #[error("{}{value:?} is not a canonical U64: {reason}", at(path))]
    #[diagnostic(
        code("FS0102"),
        help(
            "write a U64 as a JSON string of decimal digits: \"0\", or no leading zero, at most 18446744073709551615"
        )
    )]
    InvalidU64 {
        /// Where the value was found.
        path: String,
        /// The refused text.
        value: String,
        /// Which part of the rule it breaks.
        reason: &'static str,
    },
    /// A string that is not a lowercase SHA-256 hex digest.
    #[error("{}{value:?} is not a digest: {reason}", at(path))]
    #[diagnostic(
        code("FS0103"),
        help("a digest is exactly 64 lowercase hexadecimal characters (SHA-256)")
    )]
    InvalidDigest {
        /// Where the value was found.
        path: String,
        /// The refused text.
        value: String,
        /// Which part of the rule it breaks.
        reason: &'static str,
    },
    /// A rational that breaks the `RationalNs` form.
    #[error(
        "{}{numerator}/{denominator} is not a valid RationalNs: {reason}",
        at(path)
    )]
    #[diagnostic(
        code("FS0104"),
        help(
            "a RationalNs is reduced (gcd 1), has a positive denominator, and writes zero only as 0/1"
        )
    )]
    InvalidRational {
        /// Where the value was found.
        path: String,
        /// The numerator as written.
        numerator: String,
        /// The denominator as written.
        denominator: String,
        /// Which part of the rule it breaks.
        reason: &'static str,
    },
    /// Checked rational arithmetic that would overflow 64 bits.
    #[error("rational arithmetic overflows 64 bits: {operation}")]
    #[diagnostic(
        code("FS0105"),
        help(
            "flysim never wraps time; use a coarser duration or fewer steps so every value fits a U64"
        )
    )]
    RationalOverflow {
        /// The operation that overflowed, with its operands.
        operation: String,
    },
    /// A string that is not the expected identity spelling (`call-`, `req-`, `dlv-`, `own-`).
    #[error("{}{value:?} is not a {expected}", at(path))]
    #[diagnostic(
        code("FS0106"),
        help(
            "call ids are `call-<U64>`, request ids `req-<U64>`, delivery tokens `dlv-<U64>`, hold tokens `own-<U64>`; the U64 has no leading zero"
        )
    )]
    InvalidIdSpelling {
        /// Where the value was found.
        path: String,
        /// The refused text.
        value: String,
        /// The spelling that was expected, e.g. `request id (req-<U64>)`.
        expected: &'static str,
    },
    /// A `TypedValue` whose canonical JSON exceeds 32 KiB.
    #[error(
        "{}typed value is {bytes} bytes of canonical JSON, over the limit of {limit}",
        at(path)
    )]
    #[diagnostic(
        code("FS0107"),
        help(
            "move large state into an artifact-backed schema; a TypedValue is at most 32768 bytes of canonical JSON"
        )
    )]
    TypedValueTooLarge {
        /// Where the value was found.
        path: String,
        /// Its canonical size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The document is not strict JSON.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Json(#[from] JsonError),
    /// A field the type does not declare.
    #[error("{}unknown field `{field}`", at(path))]
    #[diagnostic(
        code("FS0120"),
        help("remove the field; contract types refuse fields they do not declare")
    )]
    UnknownField {
        /// The object that carried the field.
        path: String,
        /// The field name.
        field: String,
    },
    /// A missing field or a value of the wrong JSON type.
    #[error("{}{message}", at(path))]
    #[diagnostic(
        code("FS0121"),
        help("compare the document with its JSON Schema (`schemas/` holds them all)")
    )]
    Shape {
        /// Where the mismatch was found.
        path: String,
        /// What was expected and found.
        message: String,
    },
    /// A value that is well-formed but breaks a contract rule.
    #[error("{}{rule}", at(path))]
    #[diagnostic(
        code("FS0122"),
        help("the rule is stated in the message; the contract refuses rather than repairs")
    )]
    Rule {
        /// Where the rule was broken.
        path: String,
        /// The rule, stated as what is required.
        rule: String,
    },
    /// Two agents of one composition share an id, so they would share a seed.
    #[error("agent id `{agent_id}` appears more than once")]
    #[diagnostic(
        code("FS0130"),
        help("give every agent its own id; equal ids would silently share one derived seed")
    )]
    RepeatedAgent {
        /// The repeated id.
        agent_id: String,
    },
    /// Seed derivation found no nonzero lane in any of its four rounds.
    #[error(
        "seed derivation exhausted its four rounds without a nonzero lane for agent `{agent_id}`"
    )]
    #[diagnostic(
        code("FS0131"),
        help(
            "no known input does this; report the master seed and agent id, they are a SHA-256 curiosity"
        )
    )]
    SeedRoundsExhausted {
        /// The agent whose material was rehashed.
        agent_id: String,
    },
}

impl ContractError {
    /// Returns the same refusal with its field path placed under `prefix`.
    #[must_use]
    pub fn under(mut self, prefix: &str) -> Self {
        if prefix.is_empty() {
            return self;
        }
        let join = |p: &mut String| {
            *p = if p.is_empty() {
                prefix.to_owned()
            } else if p.starts_with('[') {
                format!("{prefix}{p}")
            } else {
                format!("{prefix}.{p}")
            };
        };
        match &mut self {
            Self::InvalidId { path, .. }
            | Self::InvalidU64 { path, .. }
            | Self::InvalidDigest { path, .. }
            | Self::InvalidRational { path, .. }
            | Self::InvalidIdSpelling { path, .. }
            | Self::TypedValueTooLarge { path, .. }
            | Self::UnknownField { path, .. }
            | Self::Shape { path, .. }
            | Self::Rule { path, .. } => join(path),
            Self::RationalOverflow { .. }
            | Self::Json(_)
            | Self::RepeatedAgent { .. }
            | Self::SeedRoundsExhausted { .. } => {}
        }
        self
    }

    /// The registered diagnostic code of this refusal (`FSnnnn`).
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    /// A rule refusal at `path`.
    pub fn rule(path: impl Into<String>, rule: impl Into<String>) -> Self {
        Self::Rule {
            path: path.into(),
            rule: rule.into(),
        }
    }
}
