//! The compact JSON text the bus writes on the wire: exactly the bytes `serde_json::to_vec` gives
//! a [`Value`] (no whitespace, keys in the map's own order, serde_json's string escapes, which
//! are RFC 8785's, and its number text), appended straight to a byte buffer.
//!
//! This is not the canonical form (that one orders keys by UTF-16 code units and writes numbers
//! as ECMAScript does, [`super::to_canonical`]); it only spares the wire serde's per-string
//! machinery. The fuzz campaign over the JSON corpus checks it against `serde_json::to_vec`.

use serde_json::{Map, Value};

use super::canonical::{Sink, write_string};

impl Sink for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// Appends `value`'s compact text to `out`.
pub fn write_compact(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // serde_json's own number text (itoa, ryu).
        Value::Number(n) => {
            if let Err(e) = serde_json::to_writer(&mut *out, n) {
                unreachable!("writing a number into memory cannot fail: {e}");
            }
        }
        Value::String(s) => write_compact_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => write_compact_map(map, out),
    }
}

/// Appends a map's compact text (an object) to `out`.
pub fn write_compact_map(map: &Map<String, Value>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_compact_str(key, out);
        out.push(b':');
        write_compact(value, out);
    }
    out.push(b'}');
}

/// Appends a string's compact text (quoted and escaped) to `out`.
pub fn write_compact_str(s: &str, out: &mut Vec<u8>) {
    write_string(s, out);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::write_compact;

    #[test]
    fn the_compact_text_is_serde_jsons() {
        let value = json!({
            "b": [1, -2, 0.5, 1e21, 123456789012u64, null, true, false],
            "a": "quote \" backslash \\ controls \u{1} \u{8} \u{c} \n \r \t \u{1f} del \u{7f} é 🦋",
            "": {"nested": {}, "list": []},
        });
        let mut out = b"kept".to_vec();
        write_compact(&value, &mut out);
        assert_eq!(&out[..4], b"kept");
        assert_eq!(&out[4..], serde_json::to_vec(&value).unwrap());
        assert_eq!(
            String::from_utf8(out[4..].to_vec()).unwrap(),
            "{\"\":{\"list\":[],\"nested\":{}},\"a\":\"quote \\\" backslash \\\\ controls \\u0001 \\b \\f \\n \\r \\t \\u001f del \u{7f} é 🦋\",\"b\":[1,-2,0.5,1e+21,123456789012,null,true,false]}"
        );
    }
}
