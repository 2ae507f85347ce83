//! RFC 8785 (JSON Canonicalization Scheme) for `serde_json` values, and the pieces of canonical
//! text every writer shares: numbers in ECMAScript form, strings with minimal escapes, keys in
//! UTF-16 order.
//!
//! There is one writer, [`super::writer`] (from any `Serialize`, a `Value` included): this
//! module's entry points hand it their value. It knows nothing of payload types.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::JsonError;
use super::strict::plain_run;
use crate::limits::MAX_SAFE_INTEGER;

/// Compares two strings by their UTF-16 code units, the key order RFC 8785 prescribes.
///
/// This differs from byte (and `char`) order only when a character outside the Basic
/// Multilingual Plane meets one in U+E000..=U+FFFF: its leading surrogate (0xD800..) sorts first.
#[must_use]
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Writes `value` in RFC 8785 canonical form.
///
/// # Errors
///
/// [`JsonError::UnsafeInteger`] for an integer outside ±(2^53 − 1), or a double whose ECMAScript
/// form would be such an integer (2^53 − 1 < |v| < 10^21): the writer refuses rather than write
/// text the reader refuses. Values from the strict reader never carry one.
pub fn to_canonical(value: &Value) -> Result<String, JsonError> {
    let mut out = String::new();
    super::writer::write(value, &mut out).map_err(value_error)?;
    Ok(out)
}

/// [`to_canonical`] as bytes.
///
/// # Errors
///
/// As [`to_canonical`].
pub fn to_canonical_bytes(value: &Value) -> Result<Vec<u8>, JsonError> {
    to_canonical(value).map(String::into_bytes)
}

/// Where written JSON text goes: a string, a byte buffer, or a counter of its length.
pub trait Sink {
    /// Appends `s`.
    fn put(&mut self, s: &str);
}

impl Sink for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

/// Counts the bytes of written text without keeping it.
#[derive(Debug, Default)]
pub struct Counter(pub usize);

impl Sink for Counter {
    fn put(&mut self, s: &str) {
        self.0 += s.len();
    }
}

/// The length of the canonical form of an object (written, then measured).
pub(crate) fn object_len(map: &Map<String, Value>) -> Result<usize, JsonError> {
    let mut out = String::new();
    write_map(map, &mut out)?;
    Ok(out.len())
}

/// Appends the canonical form of an object to `out`.
pub(crate) fn write_map(map: &Map<String, Value>, out: &mut String) -> Result<(), JsonError> {
    super::writer::write(map, out).map_err(value_error)
}

/// A `serde_json::Value` refused by the writer: only an integer canonical JSON cannot hold,
/// since a `Value` has string keys and finite numbers only.
fn value_error(e: super::writer::Error) -> JsonError {
    match e {
        super::writer::Error::Json(e) => e,
        super::writer::Error::Shape(message) => {
            unreachable!("a serde_json::Value always serialises as JSON: {message}")
        }
    }
}

/// At least [`object_len`], found without looking inside strings: a string counts its quotes
/// and six bytes for each of its bytes (the longest escape, `\u001f`, is six; a character
/// needing none is at most as long as its UTF-8). Numbers are counted as written, so an integer
/// canonical JSON cannot represent is refused here too.
pub(crate) fn object_len_bound(map: &Map<String, Value>) -> Result<usize, JsonError> {
    let mut n = 2 + map.len().saturating_sub(1);
    for (key, item) in map {
        n = n
            .saturating_add(string_len_bound(key))
            .saturating_add(1)
            .saturating_add(value_len_bound(item)?);
    }
    Ok(n)
}

fn value_len_bound(value: &Value) -> Result<usize, JsonError> {
    Ok(match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            let mut counter = Counter::default();
            write_number(n, &mut counter)?;
            counter.0
        }
        Value::String(s) => string_len_bound(s),
        Value::Array(items) => {
            let mut n = 2 + items.len().saturating_sub(1);
            for item in items {
                n = n.saturating_add(value_len_bound(item)?);
            }
            n
        }
        Value::Object(map) => object_len_bound(map)?,
    })
}

fn string_len_bound(s: &str) -> usize {
    s.len().saturating_mul(6).saturating_add(2)
}

pub(crate) fn write_number<S: Sink>(n: &Number, out: &mut S) -> Result<(), JsonError> {
    if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(unsafe_integer(&u.to_string()));
        }
        put_integer(u, false, out);
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(unsafe_integer(&i.to_string()));
        }
        put_integer(i.unsigned_abs(), i < 0, out);
    } else {
        // serde_json never holds a non-finite double.
        let v = n.as_f64().unwrap_or(0.0);
        if super::strict::is_unsafe_integer(v) {
            return Err(unsafe_integer(&format!("{v}")));
        }
        if v == 0.0 {
            out.put("0"); // ECMAScript prints -0 as "0"
        } else {
            out.put(ryu_js::Buffer::new().format_finite(v));
        }
    }
    Ok(())
}

/// Writes a decimal integer without allocating.
pub(crate) fn put_integer<S: Sink>(magnitude: u64, negative: bool, out: &mut S) {
    if negative {
        out.put("-");
    }
    let mut buf = [0u8; 20];
    // Only ASCII digits were written.
    out.put(std::str::from_utf8(decimal(magnitude, &mut buf)).unwrap_or_default());
}

/// The decimal digits of `n`, written at the end of `buf`.
pub(crate) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        // A remainder below 10 fits a byte.
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[at..]
}

fn unsafe_integer(text: &str) -> JsonError {
    JsonError::UnsafeInteger {
        text: text.to_owned(),
        at: (0, 0).into(),
    }
}

/// Writes a string with the minimal escapes of RFC 8785: runs that need none are copied whole.
pub(crate) fn write_string<S: Sink>(s: &str, out: &mut S) {
    out.put("\"");
    let bytes = s.as_bytes();
    if plain_run(bytes) == bytes.len() {
        // The common case, eight bytes at a time: nothing to escape.
        out.put(s);
        out.put("\"");
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte that needs an escape is ASCII, so `i` is a character boundary.
        out.put(&s[start..i]);
        if escape.is_empty() {
            out.put(&format!("\\u{:04x}", u32::from(b)));
        } else {
            out.put(escape);
        }
        start = i + 1;
    }
    out.put(&s[start..]);
    out.put("\"");
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use serde_json::json;

    use super::*;

    /// The reference writer: per-character escapes and a UTF-16 sort of every object.
    fn reference(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push('"');
                for ch in s.chars() {
                    match ch {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\u{8}' => out.push_str("\\b"),
                        '\u{c}' => out.push_str("\\f"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if u32::from(c) < 0x20 => {
                            let _ = write!(out, "\\u{:04x}", u32::from(c));
                        }
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference(item, out);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    reference(&Value::String(k.clone()), out);
                    out.push(':');
                    reference(v, out);
                }
                out.push('}');
            }
            Value::Number(n) if n.as_i64().is_some() => {
                let _ = write!(out, "{}", n.as_i64().unwrap());
            }
            other => out.push_str(&to_canonical(other).unwrap()),
        }
    }

    #[test]
    fn the_fast_paths_write_what_the_reference_writes() {
        let values = [
            json!({"b": 1, "a": [true, null, "x\"y\\z\u{1}\u{1f}\n\t\r\u{8}\u{c}/"], "": {}}),
            json!({"\u{e000}": 1, "\u{1F600}": 2, "a": 3, "\u{ffff}": 4, "\u{7ff}": 5}),
            json!({"ключ": "значение ÿ😀", "z": {"\u{10000}": [], "\u{fffd}": 0.5}}),
            json!([
                "",
                "\u{0}",
                "plain text with no escapes",
                1e21,
                -0.0,
                5e-324
            ]),
        ];
        for value in &values {
            let mut expected = String::new();
            reference(value, &mut expected);
            assert_eq!(to_canonical(value).unwrap(), expected);
            if let Value::Object(map) = value {
                assert_eq!(object_len(map).unwrap(), expected.len());
            }
        }
        // A supplementary character sorts before U+E000 in UTF-16 order, after it in byte order.
        assert_eq!(
            to_canonical(&values[1]).unwrap(),
            "{\"a\":3,\"\u{7ff}\":5,\"\u{1F600}\":2,\"\u{e000}\":1,\"\u{ffff}\":4}"
        );
    }
}
