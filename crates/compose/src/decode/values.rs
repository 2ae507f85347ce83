//! Value decoders: one KDL entry to a typed, spanned value (string, id, digest, integer in a
//! range, number, boolean, one of a set of names), or a wrong-type or bad-value diagnostic.
//!
//! They know KDL values and the grammars of ids and digests; they do not know which node or
//! property a value belongs to beyond the description the caller gives for messages.

use flysim_types::{Digest, Id};
use kdl::{KdlEntry, KdlValue};

use super::node::FileDecoder;
use crate::diag::Problem;
use crate::model::Spanned;
use crate::text::suggest;

/// Describes the KDL type of a value for messages.
fn kind_of(value: &KdlValue) -> &'static str {
    match value {
        KdlValue::String(_) => "a string",
        KdlValue::Integer(_) => "an integer",
        KdlValue::Float(_) => "a float",
        KdlValue::Bool(_) => "a boolean",
        KdlValue::Null => "#null",
    }
}

impl FileDecoder<'_> {
    /// Reports `entry` (described as `what`) as not of the `expected` type.
    pub(super) fn wrong_type(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        expected: &'static str,
        help: Option<String>,
    ) {
        self.push(Problem::WrongType {
            src: self.src(),
            what: what.to_owned(),
            expected,
            found: kind_of(entry.value()),
            at: entry.span(),
            help,
        });
    }

    /// Reports `entry` (described as `what`) as of the right type but a refused value.
    pub(super) fn bad_value(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        reason: String,
        help: Option<String>,
    ) {
        self.push(Problem::BadValue {
            src: self.src(),
            what: what.to_owned(),
            reason,
            at: entry.span(),
            help,
        });
    }

    /// A string.
    pub(super) fn string(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<String>> {
        match entry.value() {
            KdlValue::String(s) => Some(self.spanned(s.clone(), entry.span())),
            _ => {
                self.wrong_type(entry, what, "a string", None);
                None
            }
        }
    }

    /// A string that is a valid [`Id`].
    pub(super) fn id(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<Id>> {
        let text = self.string(entry, what)?;
        match Id::parse(&text.value) {
            Ok(id) => Some(Spanned {
                value: id,
                span: text.span,
            }),
            Err(e) => {
                self.bad_value(
                    entry,
                    what,
                    e.to_string(),
                    Some("an id is 1 to 64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit".to_owned()),
                );
                None
            }
        }
    }

    /// A string that is a sha256 [`Digest`] in lowercase hex.
    pub(super) fn digest(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<Digest>> {
        let text = self.string(entry, what)?;
        match Digest::parse(&text.value) {
            Ok(d) => Some(Spanned {
                value: d,
                span: text.span,
            }),
            Err(e) => {
                self.bad_value(
                    entry,
                    what,
                    e.to_string(),
                    Some("a sha256 is 64 lowercase hexadecimal characters, e.g. the output of `sha256sum FILE`".to_owned()),
                );
                None
            }
        }
    }

    /// An integer in `min..=max`, as the integer type of the bounds.
    pub(super) fn int<T>(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        min: T,
        max: T,
    ) -> Option<Spanned<T>>
    where
        T: Copy + Into<i128> + TryFrom<i128>,
    {
        let (low, high) = (min.into(), max.into());
        match entry.value() {
            KdlValue::Integer(n) if (low..=high).contains(n) => {
                let value = T::try_from(*n).ok()?;
                Some(self.spanned(value, entry.span()))
            }
            KdlValue::Integer(n) => {
                self.bad_value(entry, what, format!("{n} is outside {low}..={high}"), None);
                None
            }
            _ => {
                self.wrong_type(entry, what, "an integer", None);
                None
            }
        }
    }

    /// A finite number (an integer only when a double holds it exactly).
    pub(super) fn float(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<f64>> {
        let value = match entry.value() {
            KdlValue::Float(f) => *f,
            #[expect(
                clippy::cast_precision_loss,
                reason = "checked below: only integers a double holds exactly are accepted"
            )]
            KdlValue::Integer(n) if n.unsigned_abs() <= 1 << 53 => *n as f64,
            KdlValue::Integer(n) => {
                self.bad_value(entry, what, format!("{n} is not exact as a double"), None);
                return None;
            }
            _ => {
                self.wrong_type(entry, what, "a number", None);
                return None;
            }
        };
        if value.is_finite() {
            Some(self.spanned(value, entry.span()))
        } else {
            self.bad_value(entry, what, "the number is not finite".to_owned(), None);
            None
        }
    }

    /// `#true` or `#false`.
    pub(super) fn boolean(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<bool>> {
        match entry.value() {
            KdlValue::Bool(b) => Some(self.spanned(*b, entry.span())),
            _ => {
                self.wrong_type(
                    entry,
                    what,
                    "a boolean",
                    Some("KDL 2 spells booleans `#true` and `#false`".to_owned()),
                );
                None
            }
        }
    }

    /// A string naming one of `choices`, as its value.
    pub(super) fn choice<T: Copy>(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        choices: &[(&'static str, T)],
    ) -> Option<Spanned<T>> {
        let text = self.string(entry, what)?;
        if let Some((_, v)) = choices.iter().find(|(s, _)| *s == text.value) {
            return Some(Spanned {
                value: *v,
                span: text.span,
            });
        }
        let names = choices.iter().map(|(s, _)| *s);
        let help = suggest(&text.value, names.clone()).map(|s| format!("did you mean \"{s}\"?"));
        self.push(Problem::NotAChoice {
            src: self.src(),
            what: what.to_owned(),
            found: text.value,
            choices: names
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", "),
            at: entry.span(),
            help,
        });
        None
    }
}
