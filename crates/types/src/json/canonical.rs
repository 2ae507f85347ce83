//! The RFC 8785 (JSON Canonicalization Scheme) writer.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

use super::JsonError;
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
    write_value(value, &mut out)?;
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

fn write_value(value: &Value, out: &mut String) -> Result<(), JsonError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_number(n: &Number, out: &mut String) -> Result<(), JsonError> {
    if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(unsafe_integer(&u.to_string()));
        }
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(unsafe_integer(&i.to_string()));
        }
        let _ = write!(out, "{i}");
    } else {
        // serde_json never holds a non-finite double.
        let v = n.as_f64().unwrap_or(0.0);
        if super::strict::is_unsafe_integer(v) {
            return Err(unsafe_integer(&format!("{v}")));
        }
        if v == 0.0 {
            out.push('0'); // ECMAScript prints -0 as "0"
        } else {
            out.push_str(ryu_js::Buffer::new().format_finite(v));
        }
    }
    Ok(())
}

fn unsafe_integer(text: &str) -> JsonError {
    JsonError::UnsafeInteger {
        text: text.to_owned(),
        at: (0, 0).into(),
    }
}

fn write_string(s: &str, out: &mut String) {
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
