//! Tests of the canonical writer (`writer.rs`): against the reference form through a
//! `serde_json::Value`, its refusals, key order, and the buffers it keeps between writes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use super::{Error, key_cmp, write};
use crate::json::{JsonError, to_canonical};

/// The direct form, and the reference form through a `serde_json::Value`.
fn both<T: Serialize>(value: &T) -> (String, String) {
    let mut direct = String::new();
    write(value, &mut direct).expect("the direct writer accepts it");
    let reference = to_canonical(&serde_json::to_value(value).expect("to_value accepts it"))
        .expect("canonical");
    (direct, reference)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutOfOrder {
    zeta: u8,
    alpha: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<u8>,
    middle: Vec<Shape>,
    #[serde(flatten)]
    extra: BTreeMap<String, i64>,
}

#[derive(Serialize)]
enum Shape {
    Unit,
    Newtype(f64),
    Tuple(i8, char),
    Struct { b: bool, a: () },
}

#[test]
fn structs_enums_and_flattened_maps_match_the_reference() {
    let value = OutOfOrder {
        zeta: 7,
        alpha: None,
        skipped: None,
        middle: vec![
            Shape::Unit,
            Shape::Newtype(-0.5e-7),
            Shape::Tuple(-3, '\u{1F600}'),
            Shape::Struct { b: true, a: () },
        ],
        // "alpha" again: the flattened entry comes last and wins, as in a `Map`.
        extra: BTreeMap::from([("alpha".into(), 1), ("\u{e000}".into(), 2), ("b".into(), 3)]),
    };
    let (direct, reference) = both(&value);
    assert_eq!(direct, reference);
    assert!(direct.starts_with(r#"{"alpha":1,"b":3,"middle":["Unit",{"Newtype":"#));
}

#[test]
fn keys_sort_by_utf16_code_units_and_integer_keys_become_strings() {
    // U+1F600 is a surrogate pair (0xD83D..) and sorts before U+E000 in UTF-16, after it
    // by code point.
    let map = BTreeMap::from([("\u{1F600}", 1), ("\u{E000}", 2), ("a", 3)]);
    let (direct, reference) = both(&map);
    assert_eq!(direct, reference);
    assert_eq!(direct, "{\"a\":3,\"\u{1F600}\":1,\"\u{E000}\":2}");
    let numbered = BTreeMap::from([(10_u32, "ten"), (9, "nine")]);
    let (direct, reference) = both(&numbered);
    assert_eq!(direct, reference);
    assert_eq!(direct, r#"{"10":"ten","9":"nine"}"#);
}

#[test]
fn values_bytes_and_non_finite_doubles_match_the_reference() {
    let value = json!({"n": [1, -2, 1.5, 1e21, "x\u{7}\"\\"], "o": {"b": null, "a": {}}});
    let (direct, reference) = both(&value);
    assert_eq!(direct, reference);
    let (direct, reference) = both(&(f64::NAN, f32::INFINITY, &b"\x00\xff"[..]));
    assert_eq!(direct, reference);
    assert_eq!(direct, "[null,null,[0,255]]");
}

#[test]
fn what_canonical_json_cannot_hold_is_refused() {
    let mut out = String::new();
    assert!(matches!(
        write(&9_007_199_254_740_992_u64, &mut out),
        Err(Error::Json(JsonError::UnsafeInteger { .. }))
    ));
    assert!(matches!(write(&u128::MAX, &mut out), Err(Error::Shape(_))));
    assert!(matches!(
        write(&BTreeMap::from([(vec![1], 1)]), &mut out),
        Err(Error::Shape(m)) if m == "key must be a string"
    ));
}

#[test]
fn key_order_is_utf16_order() {
    let keys = [
        "",
        "a",
        "ab",
        "abc",
        "b",
        "B",
        "~",
        "\u{7f}",
        "é",
        "\u{7ff}",
        "\u{800}",
        "\u{d7ff}",
        "\u{e000}",
        "\u{fb33}",
        "\u{ffff}",
        "\u{10000}",
        "\u{1f600}",
        "\u{10ffff}",
        "a\u{e000}",
        "a\u{1f600}",
        "a\u{fb33}b",
        "a\u{1f600}b",
        "\u{1f600}a",
        "\u{e000}a",
        "é\u{e000}",
        "é\u{10000}",
    ];
    for a in keys {
        for b in keys {
            assert_eq!(
                key_cmp(a, b),
                a.encode_utf16().cmp(b.encode_utf16()),
                "{a:?} against {b:?}"
            );
        }
    }
}

/// A value whose `Serialize` writes canonical JSON itself: its child's text, as a string.
struct Quoting(serde_json::Value);

impl Serialize for Quoting {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut inner = String::new();
        write(&self.0, &mut inner).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(&inner)
    }
}

#[test]
fn a_write_inside_a_write_and_a_write_after_a_refusal_are_whole() {
    // The kept buffers are taken by the outer write: the inner one writes with its own.
    let value = BTreeMap::from([("z", Quoting(json!({"b": 1, "a": [2, {"d": 3, "c": 4}]})))]);
    let mut out = String::new();
    write(&value, &mut out).unwrap();
    assert_eq!(out, r#"{"z":"{\"a\":[2,{\"c\":4,\"d\":3}],\"b\":1}"}"#);
    // A write refused half way, inside an object out of order, leaves nothing behind for the
    // next one on this thread.
    #[derive(Serialize)]
    struct Refused {
        y: [u8; 2],
        x: u64,
    }
    let refused = Refused {
        y: [1, 2],
        x: 9_007_199_254_740_993,
    };
    assert!(matches!(
        write(&refused, &mut String::new()),
        Err(Error::Json(JsonError::UnsafeInteger { .. }))
    ));
    let (direct, reference) = both(&json!({"q": {"p": [1, 2], "o": "n"}, "m": null}));
    assert_eq!(direct, r#"{"m":null,"q":{"o":"n","p":[1,2]}}"#);
    assert_eq!(direct, reference);
}
