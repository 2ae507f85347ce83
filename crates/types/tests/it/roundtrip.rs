//! Property tests over the strict reader and the canonical writer: no panic on any input, and
//! `parse(canonical(x)) == x` for every value the reader can produce.

use flysim_types::json::{parse_document, to_canonical};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-9_007_199_254_740_991_i64..=9_007_199_254_740_991).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite, and not an integer between 2^53 and 1e21", |f| {
                f.is_finite()
                    && !(f.fract() == 0.0 && f.abs() > 9_007_199_254_740_991.0 && f.abs() < 1e21)
            })
            .prop_map(
                |f| parse_document(to_canonical(&Value::from(f)).unwrap().as_bytes()).unwrap()
            ),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        any::<String>().prop_map(Value::String)
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn canonical_round_trips(v in value()) {
        let text = to_canonical(&v).unwrap();
        let back = parse_document(text.as_bytes()).unwrap();
        prop_assert_eq!(&back, &v);
        // Canonical form is a fixed point.
        prop_assert_eq!(to_canonical(&back).unwrap(), text);
    }

    #[test]
    fn reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_document(&bytes);
    }

    #[test]
    fn reader_never_panics_on_json_like_text(text in "[\\[\\]{}\":,0-9eE.+\\-a-z\\\\ ]{0,200}") {
        if let Ok(v) = parse_document(text.as_bytes()) {
            let canonical = to_canonical(&v).unwrap();
            prop_assert_eq!(parse_document(canonical.as_bytes()).unwrap(), v);
        }
    }

    #[test]
    fn pretty_printed_documents_canonicalise_like_compact_ones(v in value()) {
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let compact = to_canonical(&v).unwrap();
        prop_assert_eq!(to_canonical(&parse_document(pretty.as_bytes()).unwrap()).unwrap(), compact);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, .. ProptestConfig::default() })]

    /// The direct writer (straight from `Serialize`) gives the reference bytes for any value,
    /// here a `serde_json::Value`'s own `Serialize` impl.
    #[test]
    fn the_direct_writer_matches_the_reference(v in value()) {
        prop_assert_eq!(
            flysim_types::payload::to_canonical(&v).unwrap(),
            to_canonical(&v).unwrap()
        );
    }
}
