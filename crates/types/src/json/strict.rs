//! The strict JSON reader: a small recursive-descent parser over validated UTF-8.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use super::JsonError;
use crate::limits::{MAX_JSON_DEPTH, MAX_SAFE_INTEGER};

/// Parses exactly one JSON value of any type, refusing what the contract cannot represent.
///
/// # Errors
///
/// Returns a [`JsonError`] naming the first refused construct and its byte span.
pub fn parse_document(bytes: &[u8]) -> Result<Value, JsonError> {
    let mut reader = Reader::start(bytes)?;
    let value = reader.value(0)?;
    reader.end()?;
    Ok(value)
}

/// What [`parse_fields`] read from an object: the value of each named field, in the order of
/// the names, and the first other key in key order (the one that [`parse_object`]'s map would
/// list first).
#[derive(Debug)]
pub struct Fields<const N: usize> {
    /// Each name's value, `None` where the object lacks it.
    pub values: [Option<Value>; N],
    /// The least key (in `String` order) that is not one of the names.
    pub unknown: Option<String>,
}

/// Reads a payload as [`parse_object`] does, refusing exactly the same documents with the same
/// errors, but hands over the values of the top-level fields named in `names` instead of a map,
/// and names the least other key instead of keeping it: the top-level keys are compared where
/// they lie in `bytes`, not copied into a map.
///
/// # Errors
///
/// As [`parse_object`].
pub fn parse_fields<const N: usize>(
    bytes: &[u8],
    names: &[&str; N],
) -> Result<Fields<N>, JsonError> {
    let mut reader = Reader::start(bytes)?;
    if reader.peek() != Some(b'{') {
        // Not an object: whatever `parse_object` says about it.
        return match parse_object(bytes) {
            Err(refused) => Err(refused),
            Ok(_) => unreachable!("a document that does not start with `{{` is not an object"),
        };
    }
    let mut values = [const { None }; N];
    let mut others: BTreeSet<String> = BTreeSet::new();
    reader.members(1, |key, value| {
        if let Some(i) = names.iter().position(|name| *name == key) {
            if values[i].is_some() {
                return Some(key.into_owned());
            }
            values[i] = Some(value);
            None
        } else {
            let key = key.into_owned();
            if others.contains(&key) {
                Some(key)
            } else {
                others.insert(key);
                None
            }
        }
    })?;
    reader.end()?;
    Ok(Fields {
        values,
        unknown: others.pop_first(),
    })
}

/// Parses a payload: exactly one JSON object (see [`parse_document`]).
///
/// # Errors
///
/// As [`parse_document`], plus [`JsonError::NotAnObject`] for any other top-level value.
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, JsonError> {
    match parse_document(bytes)? {
        Value::Object(map) => Ok(map),
        other => {
            let start = bytes
                .iter()
                .position(|b| !b" \t\r\n".contains(b))
                .unwrap_or(0);
            let end = bytes
                .iter()
                .rposition(|b| !b" \t\r\n".contains(b))
                .map_or(start, |e| e + 1);
            Err(JsonError::NotAnObject {
                found: type_name(&other),
                at: (start, end - start).into(),
            })
        }
    }
}

/// The JSON type name of a value, for messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the first value of `bytes` (valid UTF-8, not only whitespace).
    fn start(bytes: &'a [u8]) -> Result<Self, JsonError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let offset = e.valid_up_to();
            JsonError::InvalidUtf8 {
                reason: format!("invalid byte sequence at offset {offset}"),
                at: (offset, e.error_len().unwrap_or(1)).into(),
            }
        })?;
        let mut reader = Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        };
        reader.skip_ws();
        if reader.pos == reader.bytes.len() {
            return Err(JsonError::Empty {
                at: (reader.pos, 0).into(),
            });
        }
        Ok(reader)
    }

    /// After the document's value: only whitespace may follow.
    fn end(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.pos != self.bytes.len() {
            return Err(JsonError::TrailingData {
                at: (self.pos, self.bytes.len() - self.pos).into(),
            });
        }
        Ok(())
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn truncated(&self, inside: &'static str) -> JsonError {
        JsonError::Truncated {
            inside,
            at: (self.bytes.len(), 0).into(),
        }
    }

    /// A syntax error covering the character at the cursor.
    fn unexpected(&self, expected: &str) -> JsonError {
        let ch = self.text[self.pos..].chars().next().unwrap_or(' ');
        JsonError::Syntax {
            reason: format!("expected {expected}, found {ch:?}"),
            at: (self.pos, ch.len_utf8()).into(),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.peek() {
            None => Err(self.truncated("a value")),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?.into_owned())),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'N' | b'I') => self.non_finite_word(),
            Some(_) => Err(self.unexpected("a JSON value")),
        }
    }

    fn literal(&mut self, word: &'static str, value: Value) -> Result<Value, JsonError> {
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else if word.as_bytes().starts_with(rest) {
            Err(self.truncated("a literal"))
        } else {
            Err(JsonError::Syntax {
                reason: format!("expected `{word}`"),
                at: (self.pos, self.word_len()).into(),
            })
        }
    }

    /// The length of the alphanumeric run at the cursor (for spans of bad words).
    fn word_len(&self) -> usize {
        self.bytes[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count()
            .max(1)
    }

    fn non_finite_word(&mut self) -> Result<Value, JsonError> {
        let len = self.word_len();
        let text = &self.text[self.pos..self.pos + len];
        if matches!(text, "NaN" | "Infinity" | "-Infinity") {
            Err(JsonError::NonFinite {
                text: text.to_owned(),
                at: (self.pos, len).into(),
            })
        } else {
            Err(self.unexpected("a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        let mut map = Map::new();
        self.members(depth, |key, value| match map.entry(key.into_owned()) {
            Entry::Vacant(slot) => {
                slot.insert(value);
                None
            }
            Entry::Occupied(taken) => Some(taken.key().clone()),
        })?;
        Ok(Value::Object(map))
    }

    /// Reads an object (the cursor on its `{`), handing each key and value to `member`, which
    /// returns the key when the object already had it (a duplicate, refused at the key).
    fn members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(Cow<'a, str>, Value) -> Option<String>,
    ) -> Result<(), JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(JsonError::TooDeep {
                limit: MAX_JSON_DEPTH,
                at: (self.pos, 1).into(),
            });
        }
        self.pos += 1; // '{'
        self.skip_ws();
        match self.peek() {
            None => return Err(self.truncated("an object")),
            Some(b'}') => {
                self.pos += 1;
                return Ok(());
            }
            Some(_) => {}
        }
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(self.truncated("an object")),
                Some(b'"') => {}
                Some(_) => return Err(self.unexpected("a string key")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            let key_len = self.pos - key_start;
            self.skip_ws();
            match self.peek() {
                None => return Err(self.truncated("an object")),
                Some(b':') => self.pos += 1,
                Some(_) => return Err(self.unexpected("`:`")),
            }
            self.skip_ws();
            let value = self.value(depth)?;
            if let Some(key) = member(key, value) {
                return Err(JsonError::DuplicateKey {
                    key,
                    at: (key_start, key_len).into(),
                });
            }
            self.skip_ws();
            match self.peek() {
                None => return Err(self.truncated("an object")),
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_JSON_DEPTH {
            return Err(JsonError::TooDeep {
                limit: MAX_JSON_DEPTH,
                at: (self.pos, 1).into(),
            });
        }
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        match self.peek() {
            None => return Err(self.truncated("an array")),
            Some(b']') => {
                self.pos += 1;
                return Ok(Value::Array(items));
            }
            Some(_) => {}
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                None => return Err(self.truncated("an array")),
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(_) => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    /// A string (the cursor on its opening quote): most have no escape and are borrowed from the
    /// text as they lie; the others are decoded.
    fn string(&mut self) -> Result<Cow<'a, str>, JsonError> {
        let start = self.pos + 1;
        let run = plain_run(&self.bytes[start..]);
        if self.bytes.get(start + run) == Some(&b'"') {
            self.pos = start + run + 1;
            return Ok(Cow::Borrowed(&self.text[start..start + run]));
        }
        self.escaped_string().map(Cow::Owned)
    }

    /// A string that is not plain (an escape, a control character or no end), the cursor on its
    /// opening quote.
    fn escaped_string(&mut self) -> Result<String, JsonError> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            // Copy the longest run that needs no attention in one go.
            let run = plain_run(&self.bytes[self.pos..]);
            out.push_str(&self.text[self.pos..self.pos + run]);
            self.pos += run;
            match self.peek() {
                None => return Err(self.truncated("a string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(b) => {
                    return Err(JsonError::Syntax {
                        reason: format!(
                            "control character U+{b:04X} must be escaped inside a string"
                        ),
                        at: (self.pos, 1).into(),
                    });
                }
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let start = self.pos;
        self.pos += 1; // backslash
        let Some(b) = self.peek() else {
            return Err(self.truncated("a string escape"));
        };
        self.pos += 1;
        let ch = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let first = self.hex4()?;
                match first {
                    0xD800..=0xDBFF => {
                        if self.bytes[self.pos..].starts_with(b"\\u") {
                            self.pos += 2;
                            let second = self.hex4()?;
                            if (0xDC00..=0xDFFF).contains(&second) {
                                let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                                char::from_u32(c).unwrap_or('\u{FFFD}')
                            } else {
                                return Err(self.lone_surrogate(start));
                            }
                        } else if self.pos >= self.bytes.len() {
                            return Err(self.truncated("a string escape"));
                        } else {
                            return Err(self.lone_surrogate(start));
                        }
                    }
                    0xDC00..=0xDFFF => return Err(self.lone_surrogate(start)),
                    c => char::from_u32(c).unwrap_or('\u{FFFD}'),
                }
            }
            _ => {
                self.pos -= 1;
                return Err(JsonError::Syntax {
                    reason: "unknown escape".to_owned(),
                    at: (start, self.pos - start + 1).into(),
                });
            }
        };
        out.push(ch);
        Ok(())
    }

    fn lone_surrogate(&self, start: usize) -> JsonError {
        JsonError::InvalidUtf8 {
            reason: "escape names a lone UTF-16 surrogate".to_owned(),
            at: (start, self.pos - start).into(),
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let Some(b) = self.peek() else {
                return Err(self.truncated("a string escape"));
            };
            let d = char::from(b)
                .to_digit(16)
                .ok_or_else(|| self.unexpected("a hexadecimal digit"))?;
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn digits(&mut self) -> usize {
        let n = self.bytes[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        self.pos += n;
        n
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.peek() == Some(b'I') {
                self.pos = start;
                return self.non_finite_word();
            }
        }
        match self.peek() {
            None => return Err(self.truncated("a number")),
            Some(b'0') => {
                self.pos += 1;
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return Err(JsonError::Syntax {
                        reason: "numbers have no leading zeros".to_owned(),
                        at: (start, self.pos - start + 1).into(),
                    });
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            Some(_) => return Err(self.unexpected("a digit")),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.pos += 1;
            if self.peek().is_none() {
                return Err(self.truncated("a number"));
            }
            if self.digits() == 0 {
                return Err(self.unexpected("a digit after `.`"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.peek().is_none() {
                return Err(self.truncated("a number"));
            }
            if self.digits() == 0 {
                return Err(self.unexpected("a digit in the exponent"));
            }
        }
        let text = &self.text[start..self.pos];
        let at = (start, self.pos - start).into();
        if integral {
            let magnitude = text.trim_start_matches('-');
            let value: Option<u64> = magnitude.parse().ok();
            return match value {
                Some(v) if v <= MAX_SAFE_INTEGER => {
                    Ok(Value::Number(if text.starts_with('-') && v != 0 {
                        Number::from(-i64::try_from(v).unwrap_or(i64::MAX))
                    } else {
                        Number::from(v)
                    }))
                }
                _ => Err(JsonError::UnsafeInteger {
                    text: text.to_owned(),
                    at,
                }),
            };
        }
        let v: f64 = text.parse().map_err(|_| JsonError::Syntax {
            reason: "malformed number".to_owned(),
            at,
        })?;
        if !v.is_finite() {
            return Err(JsonError::NonFinite {
                text: text.to_owned(),
                at,
            });
        }
        if is_unsafe_integer(v) {
            return Err(JsonError::UnsafeInteger {
                text: text.to_owned(),
                at,
            });
        }
        Ok(Value::Number(normalise(v)))
    }
}

/// The length of the longest prefix of `bytes` that a string copies as it is: no `"`, no `\\`
/// and no control character (below U+0020).
///
/// Eight bytes at a time: in each little-endian word, a byte's top bit is flagged when the byte is
/// below 0x20 or equal to `"` or `\\` (the test `(x − 0x20…) & !x & 0x80…`, and the same test
/// for zero on `x ^ c`). A subtraction's borrow can only flag bytes above a true match, so the
/// lowest flagged byte is the first byte that needs attention. A tail of fewer than eight bytes
/// is the last eight bytes again when there are eight (the bytes it shares with the word before
/// are plain, so they flag nothing), and otherwise a word of its bytes padded with spaces.
#[inline(always)]
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    let mut words = bytes.chunks_exact(8);
    let mut done = 0;
    for word in &mut words {
        if let Some(at) = first_special(word) {
            return done + at;
        }
        done += 8;
    }
    let tail = words.remainder().len();
    if tail == 0 {
        return done;
    }
    let last = if bytes.len() >= 8 {
        let from = bytes.len() - 8;
        first_special(&bytes[from..]).map(|at| from + at)
    } else {
        let mut padded = [b' '; 8];
        padded[..tail].copy_from_slice(bytes);
        first_special(&padded)
    };
    last.unwrap_or(bytes.len())
}

/// The first byte of an eight-byte `word` that is `"`, `\\` or below 0x20 ([`plain_run`]).
#[inline(always)]
fn first_special(word: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let mut lanes = [0u8; 8];
    lanes.copy_from_slice(word);
    let x = u64::from_le_bytes(lanes);
    let flagged = below(x, 0x20)
        | below(x ^ (ONES * u64::from(b'"')), 1)
        | below(x ^ (ONES * u64::from(b'\\')), 1);
    (flagged != 0).then(|| (flagged.trailing_zeros() / 8) as usize)
}

/// Whether a double's canonical (ECMAScript) form would be a digits-only integer above
/// 2^53 − 1: integral values with 2^53 − 1 < |v| < 10^21. The reader refuses such text when it is
/// written as an integer, so it refuses the value however it is written, and the writer refuses
/// it too; that keeps `parse(canonical(x)) == x` total. From 10^21 on, ECMAScript uses exponent
/// form (`1e+21`), which is unambiguous and accepted.
pub(crate) fn is_unsafe_integer(v: f64) -> bool {
    #[expect(
        clippy::cast_precision_loss,
        reason = "2^53 - 1 is exactly representable"
    )]
    let safe = MAX_SAFE_INTEGER as f64;
    v.fract() == 0.0 && v.abs() > safe && v.abs() < 1e21
}

/// Represents a finite double as the reader does: integral values within the safe range become
/// integers (`-0.0` becomes `0`), everything else stays a double.
pub(crate) fn normalise(v: f64) -> Number {
    #[expect(
        clippy::cast_precision_loss,
        reason = "2^53 - 1 is exactly representable"
    )]
    let safe = MAX_SAFE_INTEGER as f64;
    if v.fract() == 0.0 && v.abs() <= safe {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "integral and within ±2^53 - 1"
        )]
        let i = v as i64;
        if i >= 0 {
            Number::from(i.unsigned_abs())
        } else {
            Number::from(i)
        }
    } else {
        Number::from_f64(v).unwrap_or_else(|| Number::from(0u64))
    }
}

#[cfg(test)]
mod tests {
    use super::plain_run;

    /// The rule `plain_run` computes, one byte at a time.
    fn bytewise(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|b| *b == b'"' || *b == b'\\' || *b < 0x20)
            .unwrap_or(bytes.len())
    }

    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control_byte() {
        assert_eq!(plain_run(b""), 0);
        assert_eq!(plain_run(b"protocol\""), 8);
        assert_eq!(plain_run(b"fly\\n"), 3);
        assert_eq!(plain_run(b"tab\there"), 3);
        assert_eq!(plain_run("é – ü".as_bytes()), "é – ü".len());
        assert_eq!(plain_run(b"0123456789abcdef\x1f"), 16);
    }

    /// Every length up to three words, each place holding a byte that needs attention (or the
    /// plain neighbours of one), with and without a second one later, against the byte-wise
    /// rule: the tail's second look at the last eight bytes, and the padded short strings.
    #[test]
    fn every_length_and_place_gives_the_bytewise_answer() {
        for len in 0..=24 {
            let plain = vec![b'a'; len];
            assert_eq!(plain_run(&plain), len, "{len} plain bytes");
            for at in 0..len {
                for byte in [
                    b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff,
                ] {
                    let mut buf = plain.clone();
                    buf[at] = byte;
                    assert_eq!(
                        plain_run(&buf),
                        bytewise(&buf),
                        "{byte:#04x} at {at} of {len}"
                    );
                    if let Some(last) = buf.last_mut() {
                        *last = b'"';
                    }
                    assert_eq!(
                        plain_run(&buf),
                        bytewise(&buf),
                        "{byte:#04x} at {at} of {len}, and a quote last"
                    );
                }
            }
        }
    }

    /// Every pair of byte values at every pair of neighbouring places in and across a word (the
    /// word test's borrows run from one byte into the next), against the byte-wise rule.
    #[test]
    fn every_pair_of_neighbouring_bytes_gives_the_bytewise_answer() {
        for at in [0, 3, 6, 7, 8, 14, 15, 16] {
            let mut buf = [b'a'; 18];
            for first in 0..=255u8 {
                for second in 0..=255u8 {
                    buf[at] = first;
                    buf[at + 1] = second;
                    assert_eq!(
                        plain_run(&buf),
                        bytewise(&buf),
                        "bytes {first:#04x} {second:#04x} at {at}"
                    );
                }
            }
        }
    }
}
