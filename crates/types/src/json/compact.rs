//! The compact JSON text the bus writes on the wire: exactly the bytes `serde_json::to_vec` gives
//! a [`Value`] (no whitespace, keys in the map's own order, serde_json's string escapes, which
//! are RFC 8785's, and its number text), appended straight to a [`Sink`] (a byte buffer, or a
//! [`super::Counter`] that only measures it).
//!
//! This is not the canonical form (that one orders keys by UTF-16 code units and writes numbers
//! as ECMAScript does, [`super::to_canonical`]); it only spares the wire serde's per-string
//! machinery. The fuzz campaign over the JSON corpus checks it against `serde_json::to_vec`.

use std::fmt;

use serde_json::{Map, Value};

use super::canonical::{Sink, put_integer, write_string};

impl Sink for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// A [`Sink`] as a formatter's destination, for number text.
struct Formatted<'a, S>(&'a mut S);

impl<S: Sink> fmt::Write for Formatted<'_, S> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.put(s);
        Ok(())
    }
}

/// Appends `value`'s compact text to `out`.
pub fn write_compact<S: Sink>(value: &Value, out: &mut S) {
    match value {
        Value::Null => out.put("null"),
        Value::Bool(true) => out.put("true"),
        Value::Bool(false) => out.put("false"),
        Value::Number(n) => {
            // An integer's digits, as serde_json's serialiser writes them (itoa), without the
            // formatting machinery (two numbers in every envelope); a double in serde_json's own
            // text (ryu: its `Display` is its serialiser's text).
            if let Some(u) = n.as_u64() {
                put_integer(u, false, out);
            } else if let Some(i) = n.as_i64() {
                put_integer(i.unsigned_abs(), i < 0, out);
            } else if let Err(e) = fmt::Write::write_fmt(&mut Formatted(out), format_args!("{n}")) {
                unreachable!("a sink cannot refuse text: {e}");
            }
        }
        Value::String(s) => write_compact_str(s, out),
        Value::Array(items) => {
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_compact(item, out);
            }
            out.put("]");
        }
        Value::Object(map) => write_compact_map(map, out),
    }
}

/// Appends a map's compact text (an object) to `out`.
pub fn write_compact_map<S: Sink>(map: &Map<String, Value>, out: &mut S) {
    out.put("{");
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.put(",");
        }
        write_compact_str(key, out);
        out.put(":");
        write_compact(value, out);
    }
    out.put("}");
}

/// Appends a string's compact text (quoted and escaped) to `out`.
pub fn write_compact_str<S: Sink>(s: &str, out: &mut S) {
    write_string(s, out);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::write_compact;

    #[test]
    fn the_compact_text_is_serde_jsons() {
        let value = json!({
            "b": [1, -2, 0.5, 1e21, 123456789012u64, null, true, false, 0, u64::MAX, i64::MIN, -0.0],
            "a": "quote \" backslash \\ controls \u{1} \u{8} \u{c} \n \r \t \u{1f} del \u{7f} é 🦋",
            "": {"nested": {}, "list": []},
        });
        let mut out = b"kept".to_vec();
        write_compact(&value, &mut out);
        assert_eq!(&out[..4], b"kept");
        assert_eq!(&out[4..], serde_json::to_vec(&value).unwrap());
        assert_eq!(
            String::from_utf8(out[4..].to_vec()).unwrap(),
            "{\"\":{\"list\":[],\"nested\":{}},\"a\":\"quote \\\" backslash \\\\ controls \\u0001 \\b \\f \\n \\r \\t \\u001f del \u{7f} é 🦋\",\"b\":[1,-2,0.5,1e+21,123456789012,null,true,false,0,18446744073709551615,-9223372036854775808,-0.0]}"
        );
    }
}
