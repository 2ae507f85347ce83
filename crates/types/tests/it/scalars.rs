//! Scalar boundary vectors (contracts §2.1).

use flysim_types::limits::MAX_TYPED_VALUE_BYTES;
use flysim_types::{
    BusCallId, ContractError, DeliveryToken, Digest, DomainRequestId, HoldToken, Id, OwnerToken,
    Payload, TypedValue, U64, parse_payload,
};

/// Why `text` is not an `Id`; `Id::is_valid` says the same as `Id::parse` for every text here.
fn id_reason(text: &str) -> Option<&'static str> {
    let reason = match Id::parse(text) {
        Ok(_) => None,
        Err(ContractError::InvalidId { reason, .. }) => Some(reason),
        Err(other) => panic!("unexpected {other:?}"),
    };
    assert_eq!(Id::is_valid(text), reason.is_none(), "{text:?}");
    reason
}

/// Ids are equal by their text, whether they share it (a clone) or not (parsed twice).
#[test]
fn ids_are_equal_by_their_text() {
    let a = Id::parse("fly-a").unwrap();
    assert_eq!(a, a.clone());
    assert_eq!(a, Id::parse("fly-a").unwrap());
    assert_ne!(a, Id::parse("fly-b").unwrap());
    assert_ne!(a, Id::parse("fly-a2").unwrap());
    assert_eq!(
        a.cmp(&Id::parse("fly-a").unwrap()),
        std::cmp::Ordering::Equal
    );
}

#[test]
fn id_boundaries() {
    let max = "a".repeat(64);
    assert_eq!(Id::parse(&max).unwrap().as_str(), max);
    assert_eq!(
        id_reason(&"a".repeat(65)),
        Some("it is longer than 64 characters")
    );
    assert_eq!(id_reason("Fly-a"), Some("it contains an uppercase letter"));
    assert_eq!(id_reason(""), Some("it is empty"));
    assert_eq!(
        id_reason("-fly"),
        Some("it does not start with a letter or digit")
    );
    assert_eq!(
        id_reason(".fly"),
        Some("it does not start with a letter or digit")
    );
    assert_eq!(
        id_reason("fly a"),
        Some("it contains a character outside a-z, 0-9, `.`, `_`, `-`")
    );
    assert_eq!(
        id_reason("flyé"),
        Some("it contains a character outside a-z, 0-9, `.`, `_`, `-`")
    );
    for ok in ["0", "a", "fly-a", "a.b_c-d", "9lives"] {
        assert_eq!(id_reason(ok), None, "{ok}");
    }
    assert_eq!(Id::parse("Fly").unwrap_err().code_str(), "FS0101");
}

/// Ids order as their text, whether two are clones of one id or separately parsed equal texts.
#[test]
fn ids_order_as_their_text() {
    let texts = ["b", "a.b", "a", "a-b", "ab", "a0", "9z"];
    let mut ids: Vec<Id> = texts.iter().map(|t| Id::parse(t).unwrap()).collect();
    ids.sort();
    let mut sorted = texts.to_vec();
    sorted.sort_unstable();
    assert_eq!(ids.iter().map(Id::as_str).collect::<Vec<_>>(), sorted);
    let one = Id::parse("episode-1").unwrap();
    let clone = one.clone();
    let separate = Id::parse("episode-1").unwrap();
    let other = Id::parse("episode-2").unwrap();
    assert_eq!(one.cmp(&clone), std::cmp::Ordering::Equal);
    assert_eq!(one.cmp(&separate), std::cmp::Ordering::Equal);
    assert_eq!(one.partial_cmp(&other), Some(std::cmp::Ordering::Less));
    assert_eq!(other.cmp(&clone), std::cmp::Ordering::Greater);
    assert_eq!(one, separate);
}

#[test]
fn u64_digits_are_appended_as_display_writes_them() {
    for n in [0, 7, 10, 99, 1_000_000, u64::from(u32::MAX) + 1, u64::MAX] {
        let mut text = String::from("a-");
        U64(n).push_to(&mut text);
        assert_eq!(text, format!("a-{n}"));
        assert_eq!(U64::parse(&text[2..]).unwrap().get(), n);
    }
}

#[test]
fn u64_boundaries() {
    assert_eq!(U64::parse("18446744073709551615").unwrap().get(), u64::MAX);
    assert_eq!(U64::parse("0").unwrap().get(), 0);
    for bad in [
        "18446744073709551616",
        "01",
        "-1",
        "1e3",
        " 1",
        "1 ",
        "+1",
        "",
        "0x10",
        "1.0",
        "00",
    ] {
        let err = U64::parse(bad).unwrap_err();
        assert_eq!(err.code_str(), "FS0102", "{bad:?}");
    }
}

#[test]
fn u64_is_a_json_string_and_never_a_number() {
    assert_eq!(serde_json::to_string(&U64(7)).unwrap(), "\"7\"");
    assert!(serde_json::from_str::<U64>("7").is_err());
    assert_eq!(
        serde_json::from_str::<U64>("\"9007199254740993\"")
            .unwrap()
            .get(),
        9_007_199_254_740_993
    );
}

#[test]
fn digest_boundaries() {
    let good = "a".repeat(64);
    assert_eq!(Digest::parse(&good).unwrap().hex(), good);
    for bad in [
        "A".repeat(64),
        "a".repeat(63),
        "a".repeat(65),
        "g".repeat(64),
        format!("sha256:{}", "a".repeat(57)),
    ] {
        assert_eq!(
            Digest::parse(&bad).unwrap_err().code_str(),
            "FS0103",
            "{bad}"
        );
    }
}

#[test]
fn identity_spellings_are_four_distinct_types() {
    assert_eq!(BusCallId::parse("call-0").unwrap(), BusCallId(0));
    assert_eq!(BusCallId::parse("call-102").unwrap(), BusCallId(102));
    assert_eq!(
        DomainRequestId::parse("req-41").unwrap(),
        DomainRequestId(41)
    );
    assert_eq!(DeliveryToken::parse("dlv-7").unwrap(), DeliveryToken(7));
    assert_eq!(HoldToken::parse("own-9").unwrap(), HoldToken(9));
    assert_eq!(
        OwnerToken::parse("dlv-7").unwrap(),
        OwnerToken::Delivery(DeliveryToken(7))
    );
    assert_eq!(
        OwnerToken::parse("own-9").unwrap(),
        OwnerToken::Hold(HoldToken(9))
    );
    // None of these is any of the four.
    for bad in [
        "req-041",
        "dlv-07",
        "call-",
        "call",
        "callid-1",
        "request-1",
        "REQ-1",
        "sub-1",
        "svc-1",
    ] {
        assert!(BusCallId::parse(bad).is_err(), "{bad}");
        assert!(DomainRequestId::parse(bad).is_err(), "{bad}");
        assert!(OwnerToken::parse(bad).is_err(), "{bad}");
        assert_eq!(
            DomainRequestId::parse(bad).unwrap_err().code_str(),
            "FS0106"
        );
    }
    // And they are not interchangeable.
    assert!(DomainRequestId::parse("call-1").is_err());
    assert!(BusCallId::parse("req-1").is_err());
    assert!(HoldToken::parse("dlv-1").is_err());
    assert_eq!(BusCallId(3).to_string(), "call-3");
}

fn typed_value_with_string(len: usize) -> String {
    format!(
        r#"{{"schema":{{"id":"x","version":1,"digest":"{}"}},"value":{{"s":"{}"}}}}"#,
        "0".repeat(64),
        "a".repeat(len)
    )
}

#[test]
fn a_typed_value_counts_its_canonical_length_exactly() {
    for (id, version) in [("x", 1), ("fly-arena.score_v1", 65_535), ("a", 10)] {
        let value = TypedValue {
            schema: flysim_types::SchemaRef {
                id: Id::parse(id).unwrap(),
                version,
                digest: flysim_types::Digest::from_bytes([0xa5; 32]),
            },
            value: serde_json::json!({"é": [1, "\"q\"", null], "b": {"c": 2.5}})
                .as_object()
                .unwrap()
                .clone(),
        };
        let canonical = flysim_types::payload::to_canonical(&value).unwrap();
        assert_eq!(
            value.canonical_len().unwrap(),
            canonical.len(),
            "{canonical}"
        );
    }
}

#[test]
fn typed_value_over_32_kib_is_refused() {
    // The envelope around the string is fixed; find the string length that lands exactly on the limit.
    let overhead = typed_value_with_string(0).len();
    let at_limit = typed_value_with_string(MAX_TYPED_VALUE_BYTES - overhead);
    assert_eq!(at_limit.len(), MAX_TYPED_VALUE_BYTES);
    let ok: TypedValue = parse_payload(at_limit.as_bytes()).unwrap();
    assert_eq!(ok.canonical_len().unwrap(), MAX_TYPED_VALUE_BYTES);
    let over = typed_value_with_string(MAX_TYPED_VALUE_BYTES - overhead + 1);
    let err = parse_payload::<TypedValue>(over.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        ContractError::TypedValueTooLarge {
            path: String::new(),
            bytes: 32_769,
            limit: 32_768
        }
    );
    assert_eq!(err.code_str(), "FS0107");
}

#[test]
fn the_size_check_agrees_with_the_exact_length_on_either_side_of_its_shortcut() {
    let typed = |value: serde_json::Value| TypedValue {
        schema: flysim_types::SchemaRef {
            id: Id::parse("x").unwrap(),
            version: 1,
            digest: flysim_types::Digest::from_bytes([0; 32]),
        },
        value: value.as_object().unwrap().clone(),
    };
    // Small whatever their escapes; plain text long enough that only an exact count admits it;
    // escapes that make a short string too long.
    let cases = [
        typed(serde_json::json!({"s": "\u{1}".repeat(1000), "n": [1, -2.5, null, true]})),
        typed(serde_json::json!({"s": "a".repeat(30_000)})),
        typed(serde_json::json!({"s": "\u{1}".repeat(6_000)})),
        typed(serde_json::json!({"é": {"k": ["ü".repeat(16_000)]}})),
    ];
    for value in &cases {
        let exact = value.canonical_len().unwrap();
        assert_eq!(
            value.validate().is_ok(),
            exact <= MAX_TYPED_VALUE_BYTES,
            "exact length {exact}"
        );
    }
    assert!(cases[1].validate().is_ok() && cases[2].validate().is_err());
    // An integer canonical JSON cannot hold is refused however small the value.
    assert!(
        typed(serde_json::json!({"n": 1_u64 << 60}))
            .validate()
            .is_err()
    );
}

#[test]
fn typed_value_value_must_be_an_object_and_version_in_range() {
    let bad_value = format!(
        r#"{{"schema":{{"id":"x","version":1,"digest":"{}"}},"value":[1]}}"#,
        "0".repeat(64)
    );
    let err = parse_payload::<TypedValue>(bad_value.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, ContractError::Shape { path, .. } if path == "value"),
        "{err:?}"
    );
    let bad_version = format!(
        r#"{{"schema":{{"id":"x","version":0,"digest":"{}"}},"value":{{}}}}"#,
        "0".repeat(64)
    );
    let err = parse_payload::<TypedValue>(bad_version.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        ContractError::rule("schema.version", "a schema version is between 1 and 65535")
    );
    let bad_digest = r#"{"schema":{"id":"x","version":1,"digest":"AB"},"value":{}}"#;
    let err = parse_payload::<TypedValue>(bad_digest.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, ContractError::InvalidDigest { path, .. } if path == "schema.digest"),
        "{err:?}"
    );
    let bad_id = format!(
        r#"{{"schema":{{"id":"X","version":1,"digest":"{}"}},"value":{{}}}}"#,
        "0".repeat(64)
    );
    let err = parse_payload::<TypedValue>(bad_id.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, ContractError::InvalidId { path, .. } if path == "schema.id"),
        "{err:?}"
    );
}

#[test]
fn session_request_refuses_bus_identities_at_any_depth() {
    use flysim_types::payload::SessionRpcRequest;
    let doc = r#"{"requestId":"req-1","scope":null,"params":{"frame":{"ownerId":"own-1"}}}"#;
    let err = parse_payload::<SessionRpcRequest>(doc.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, ContractError::Rule { path, .. } if path == "params.frame.ownerId"),
        "{err:?}"
    );
    let ok: SessionRpcRequest =
        parse_payload(br#"{"requestId":"req-1","scope":null,"params":{"frame":{}}}"#).unwrap();
    ok.validate().unwrap();
    let err =
        parse_payload::<SessionRpcRequest>(br#"{"requestId":"call-41","scope":null,"params":{}}"#)
            .unwrap_err();
    assert!(
        matches!(&err, ContractError::InvalidIdSpelling { path, .. } if path == "requestId"),
        "{err:?}"
    );
    let err =
        parse_payload::<SessionRpcRequest>(br#"{"requestId":"req-1","params":{}}"#).unwrap_err();
    assert!(
        matches!(&err, ContractError::Shape { path, .. } if path.is_empty()),
        "missing scope: {err:?}"
    );
}

#[test]
fn scalars_written_from_the_stack_read_back_at_their_extremes() {
    for n in [0, 1, 9, 10, 4_294_967_296, u64::MAX] {
        let text = serde_json::to_string(&U64(n)).unwrap();
        assert_eq!(text, format!("\"{n}\""));
        assert_eq!(serde_json::from_str::<U64>(&text).unwrap(), U64(n));
        let id = DomainRequestId(n);
        assert_eq!(id.to_string(), format!("req-{n}"));
        assert_eq!(DomainRequestId::parse(&id.to_string()).unwrap(), id);
        assert_eq!(BusCallId(n).to_string(), format!("call-{n}"));
        assert_eq!(
            serde_json::to_string(&HoldToken(n)).unwrap(),
            format!("\"own-{n}\"")
        );
    }
    let digest = flysim_types::Digest::from_bytes(std::array::from_fn(|i| (i * 37) as u8));
    assert_eq!(digest.to_string(), digest.hex());
    assert_eq!(
        serde_json::to_string(&digest).unwrap(),
        format!("\"{}\"", digest.hex())
    );
    assert_eq!(format!("{digest:>70}").len(), 70, "padding still applies");
}
