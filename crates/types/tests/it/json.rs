//! Strict reader refusals and canonical number/string forms (contracts §2.3).

use flysim_types::json::{JsonError, parse_document, parse_fields, parse_object, to_canonical};
use serde_json::{Value, json};

/// Parses `input` and returns the refusal's code and byte offset.
fn refusal(input: &[u8]) -> (String, usize) {
    let err = parse_document(input).expect_err("must be refused");
    let code = miette::Diagnostic::code(&err).unwrap().to_string();
    (code, err.span().offset())
}

#[test]
fn every_strict_refusal_has_its_code_and_position() {
    let cases: &[(&[u8], &str, usize)] = &[
        (b"", "FS0110", 0),
        (b"  \n\t ", "FS0110", 5),
        (b"{\"a\":\"\xff\"}", "FS0111", 6),
        (b"{\"k\xc3\":1}", "FS0111", 3),
        (br#"{"a":"\ud800"}"#, "FS0111", 6),
        (br#"{"a":"\udc00\ud800"}"#, "FS0111", 6),
        (br#"{"a" 1}"#, "FS0112", 5),
        (br#"{"a":01}"#, "FS0112", 5),
        (br#"{'a':1}"#, "FS0112", 1),
        (br#"{"a":1,}"#, "FS0112", 7),
        (b"{\"a\":\"tab\there\"}", "FS0112", 9),
        (br#"{"a":tru}"#, "FS0112", 5),
        (br#"{"a":"\x41"}"#, "FS0112", 6),
        (br#"{"a": [1, 2"#, "FS0113", 11),
        (br#"{"a":"abc"#, "FS0113", 9),
        (br#"{"a":1.5e"#, "FS0113", 9),
        (br#"{"a":tr"#, "FS0113", 7),
        (br#"{"a":1,"b":{"a":2,"a":3}}"#, "FS0114", 18),
        (br#"{"a":1,"a":1}"#, "FS0114", 7),
        (br#"[{"x":[{"k":1,"k":2}]}]"#, "FS0114", 14),
        (br#"{"a":NaN}"#, "FS0115", 5),
        (br#"{"a":Infinity}"#, "FS0115", 5),
        (br#"{"a":-Infinity}"#, "FS0115", 5),
        (br#"{"a":1e999}"#, "FS0115", 5),
        (br#"{"a":-1e400}"#, "FS0115", 5),
        (br#"{"a":9007199254740992}"#, "FS0116", 5),
        (br#"{"a":-9007199254740993}"#, "FS0116", 5),
        (br#"{"a":18446744073709551616}"#, "FS0116", 5),
        (br#"{"a":1} x"#, "FS0117", 8),
        (br#"{"a":1}{"a":2}"#, "FS0117", 7),
        (br#"[1]]"#, "FS0117", 3),
        // Integral doubles whose canonical text would be a bare integer above 2^53 - 1.
        (br#"{"a":1e20}"#, "FS0116", 5),
        (br#"{"a":9007199254740992.0}"#, "FS0116", 5),
    ];
    for (input, code, offset) in cases {
        let got = refusal(input);
        assert_eq!(
            got,
            ((*code).to_owned(), *offset),
            "input {:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn nesting_limit_is_128() {
    let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
    assert!(parse_document(ok.as_bytes()).is_ok());
    let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
    assert_eq!(refusal(deep.as_bytes()), ("FS0118".to_owned(), 128));
    let mixed = format!("{}{}", r#"{"a":["#.repeat(65), "]}".repeat(65));
    assert_eq!(refusal(mixed.as_bytes()).0, "FS0118");
    // A very deep document is refused without exhausting the stack.
    let huge = "[".repeat(1_000_000);
    assert_eq!(refusal(huge.as_bytes()).0, "FS0118");
}

#[test]
fn payloads_must_be_objects() {
    for (input, found) in [
        ("[1]", "an array"),
        ("\"x\"", "a string"),
        ("1", "a number"),
        ("null", "null"),
        (" true ", "a boolean"),
    ] {
        let err = parse_object(input.as_bytes()).unwrap_err();
        assert!(
            matches!(err, JsonError::NotAnObject { found: f, .. } if f == found),
            "{input}"
        );
    }
    assert!(parse_object(b" {} ").is_ok());
}

#[test]
fn fields_are_read_by_name_and_the_least_other_key_is_named() {
    let got = parse_fields(
        br#" {"zeta": 1, "id": "a", "alpha": [true], "body": {"k": null}} "#,
        &["id", "body", "kind"],
    )
    .unwrap();
    assert_eq!(
        got.values,
        [Some(json!("a")), Some(json!({"k": null})), None]
    );
    assert_eq!(got.unknown.as_deref(), Some("alpha"));
    let none = parse_fields(b"{}", &["id"]).unwrap();
    assert_eq!((none.values, none.unknown), ([None], None));
}

#[test]
fn fields_refuse_duplicates_and_non_objects_as_the_map_reader_does() {
    // A named field twice, once spelled with an escape: refused at the second key.
    let err = parse_fields(br#"{"id": 1, "\u0069d": 2}"#, &["id"]).unwrap_err();
    assert!(
        matches!(&err, JsonError::DuplicateKey { key, .. } if key == "id"),
        "{err:?}"
    );
    assert_eq!(err.span().offset(), 10);
    // Another key twice.
    let err = parse_fields(br#"{"x": 1, "id": 0, "x": 2}"#, &["id"]).unwrap_err();
    assert!(
        matches!(&err, JsonError::DuplicateKey { key, .. } if key == "x"),
        "{err:?}"
    );
    assert_eq!(err.span().offset(), 18);
    // A syntax error inside the duplicate's value comes first, as in the map reader.
    let text = br#"{"id": 1, "id": [1,]}"#;
    assert_eq!(
        parse_fields(text, &["id"]).unwrap_err(),
        parse_object(text).unwrap_err()
    );
    for text in [&b"[1]"[..], b" 7 ", b"", b"  ", b"{} x", b"{\"id\": 1"] {
        assert_eq!(
            parse_fields(text, &["id"]).unwrap_err(),
            parse_object(text).unwrap_err(),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn safe_integer_boundary() {
    assert_eq!(
        parse_document(b"9007199254740991").unwrap(),
        json!(9_007_199_254_740_991_u64)
    );
    assert_eq!(
        parse_document(b"-9007199254740991").unwrap(),
        json!(-9_007_199_254_740_991_i64)
    );
    // As a U64 string the same magnitude is fine.
    assert_eq!(
        parse_document(br#""9007199254740993""#).unwrap(),
        json!("9007199254740993")
    );
    // The writer refuses what the reader would.
    assert!(to_canonical(&json!(9_007_199_254_740_992_u64)).is_err());
    assert!(to_canonical(&json!(1e20)).is_err());
    assert_eq!(to_canonical(&json!(1e21)).unwrap(), "1e+21");
}

fn canon(input: &str) -> String {
    to_canonical(&parse_document(input.as_bytes()).unwrap()).unwrap()
}

#[test]
fn canonical_numbers_follow_ecmascript() {
    let cases = [
        ("0", "0"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0.0", "0"),
        ("1.0", "1"),
        ("1e21", "1e+21"),
        ("1e-7", "1e-7"),
        ("0.000001", "0.000001"),
        ("5e-324", "5e-324"),
        ("0.30000000000000004", "0.30000000000000004"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("9007199254740991", "9007199254740991"),
        ("-9007199254740991", "-9007199254740991"),
        ("1e21", "1e+21"),
        ("1.5e300", "1.5e+300"),
        ("333333333.33333329", "333333333.3333333"),
        ("4.50", "4.5"),
        ("2e-3", "0.002"),
        ("1E30", "1e+30"),
        ("-1.5E-10", "-1.5e-10"),
    ];
    for (input, want) in cases {
        assert_eq!(canon(input), want, "{input}");
    }
}

#[test]
fn canonical_string_escapes_are_minimal() {
    assert_eq!(
        canon(r#""\u0000\u0008\u0009\u000a\u000c\u000d\u001f""#),
        r#""\u0000\b\t\n\f\r\u001f""#
    );
    assert_eq!(canon(r#""\"\\\/""#), r#""\"\\/""#);
    assert_eq!(
        canon(r#""\u007f\u2028\u00e9\ud83d\ude00""#),
        "\"\u{7f}\u{2028}é😀\""
    );
    assert_eq!(canon(r#""<\/script>""#), r#""</script>""#);
}

#[test]
fn canonical_keys_sort_by_utf16_code_units() {
    // U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 but after it in UTF-8 and
    // in code-point order.
    let value: Value =
        parse_document("{\"\u{fb33}\":1,\"\u{1f600}\":2,\"a\":3,\"\u{e9}\":4,\"B\":5}".as_bytes())
            .unwrap();
    assert_eq!(
        to_canonical(&value).unwrap(),
        "{\"B\":5,\"a\":3,\"\u{e9}\":4,\"\u{1f600}\":2,\"\u{fb33}\":1}"
    );
    assert!(flysim_types::json::utf16_cmp("\u{1f600}", "\u{fb33}").is_lt());
    assert!(
        "\u{1f600}" > "\u{fb33}",
        "byte order disagrees, which is the point of the test"
    );
}

#[test]
fn canonical_form_has_no_whitespace_and_keeps_array_order() {
    assert_eq!(
        canon("{ \"b\" : [ 3 , 1 , 2 ] ,\n \"a\" : { } }"),
        r#"{"a":{},"b":[3,1,2]}"#
    );
}
