//! The value, request-body and operation-key digests of contracts §2.4.

use flysim_types::digest::{
    body_digest, lower_hex, operation_key_digest, parse_lower_hex_into, payload_digest, sha256,
    value_digest,
};
use flysim_types::json::to_canonical;
use flysim_types::{Id, Scope, U64};
use serde_json::{Map, Value, json};

fn scope(step: u64) -> Scope {
    Scope {
        session_id: Id::parse("demo").unwrap(),
        epoch: Id::parse("e0").unwrap(),
        step: U64(step),
    }
}

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn value_digest_is_sha256_of_the_canonical_form() {
    let v = json!({"b": [1, 2.5, "x"], "a": null});
    assert_eq!(
        value_digest(&v).unwrap(),
        sha256(br#"{"a":null,"b":[1,2.5,"x"]}"#)
    );
    // Spelling does not matter, content does.
    let respelled: Value =
        flysim_types::json::parse_document(b"{ \"a\" : null, \"b\" : [1.0, 25e-1, \"x\"] }")
            .unwrap();
    assert_eq!(value_digest(&respelled).unwrap(), value_digest(&v).unwrap());
    assert_ne!(
        value_digest(&json!({"a": 1})).unwrap(),
        value_digest(&json!({"a": 2})).unwrap()
    );
}

#[test]
fn body_digest_covers_method_scope_and_params_only() {
    let p = params(
        json!({"agentId": "fly-a", "interval": {"numerator": "50000000", "denominator": "3"}}),
    );
    let d = body_digest("Agent.Prepare", Some(&scope(3)), &p).unwrap();
    let expected = json!({"method": "Agent.Prepare", "scope": scope(3), "params": p});
    assert_eq!(d, sha256(to_canonical(&expected).unwrap().as_bytes()));
    assert_ne!(
        d,
        body_digest("Agent.Commit", Some(&scope(3)), &p).unwrap(),
        "method"
    );
    assert_ne!(
        d,
        body_digest("Agent.Prepare", Some(&scope(4)), &p).unwrap(),
        "scope"
    );
    assert_ne!(
        d,
        body_digest("Agent.Prepare", None, &p).unwrap(),
        "null scope"
    );
    // The digest is written straight from the parts: it equals the generic canonical form for
    // keys that sort differently in UTF-16 and byte order, escapes, and a null scope.
    let odd =
        params(json!({"\u{e000}": "a\"b\\c\n\u{1}", "\u{1F600}": [1.5, -0.0, 1e21], "z": {}}));
    for s in [None, Some(scope(u64::MAX))] {
        let expected = json!({"method": "X.\u{e9}", "scope": s, "params": odd});
        assert_eq!(
            body_digest("X.\u{e9}", s.as_ref(), &odd).unwrap(),
            sha256(to_canonical(&expected).unwrap().as_bytes())
        );
    }
    let mut other = p.clone();
    other.insert("agentId".into(), json!("fly-b"));
    assert_ne!(
        d,
        body_digest("Agent.Prepare", Some(&scope(3)), &other).unwrap(),
        "params"
    );
}

#[test]
fn body_digest_refuses_bus_identities_at_any_depth() {
    for field in ["callId", "deliveryId", "ownerId", "expectedIncarnation"] {
        let p = params(json!({"frame": {"pixels": [{ field: "x" }]}}));
        let err = body_digest("Agent.Commit", Some(&scope(0)), &p).unwrap_err();
        assert_eq!(err.code_str(), "FS0122");
        assert!(
            err.to_string()
                .contains(&format!("params.frame.pixels[0].{field}")),
            "{err}"
        );
    }
}

#[test]
fn operation_key_names_one_logical_operation() {
    let w = Id::parse("agent.fly-a").unwrap();
    let k = operation_key_digest("Agent.Prepare", &scope(7), &w).unwrap();
    let expected = json!({"method": "Agent.Prepare", "scope": {"sessionId": "demo", "epoch": "e0", "step": "7"}, "workerId": "agent.fly-a"});
    assert_eq!(k, sha256(to_canonical(&expected).unwrap().as_bytes()));
    assert_ne!(
        k,
        operation_key_digest("Agent.Prepare", &scope(8), &w).unwrap()
    );
    assert_ne!(
        k,
        operation_key_digest(
            "Agent.Prepare",
            &scope(7),
            &Id::parse("agent.fly-b").unwrap()
        )
        .unwrap()
    );
}

/// The moving decoders of the RPC envelopes agree with `from_value`, refusals included, and
/// `SessionRpcRequest::to_map` is what serialising the request gives.
#[test]
fn moving_decoders_agree_with_from_value() {
    use flysim_types::payload::{SessionRpcRequest, from_value};
    use flysim_types::workers::SessionRpcSuccess;
    let requests = [
        json!({"requestId": "req-7", "scope": null, "params": {"a": [1, {"b": null}]}}),
        json!({"requestId": "req-7", "scope": scope(3), "params": {}}),
        json!({"requestId": "req-07", "scope": null, "params": {}}),
        json!({"requestId": "req-7", "scope": {"sessionId": "demo", "epoch": "e0"}, "params": {}}),
        json!({"requestId": "req-7", "params": {}}),
        json!({"requestId": "req-7", "scope": null, "params": {"x": {"ownerId": "own-1"}}}),
        json!({"requestId": "req-7", "scope": null, "params": [1]}),
        json!({"requestId": "req-7", "scope": null, "params": {}, "extra": 1}),
    ];
    for r in requests {
        let map = r.as_object().unwrap().clone();
        let general = from_value::<SessionRpcRequest>(r.clone()).map_err(|e| e.to_string());
        let moving = SessionRpcRequest::from_map(map).map_err(|e| e.to_string());
        assert_eq!(moving, general, "{r}");
        if let Ok(request) = general {
            assert_eq!(
                Value::Object(request.to_map()),
                serde_json::to_value(&request).unwrap()
            );
        }
    }
    let outcomes = [
        json!({"type": "result", "requestId": "req-1", "workerId": "fly-a", "incarnationId": "inc-1",
               "scope": scope(0), "result": {"k": "v"}}),
        json!({"type": "result", "requestId": "req-1", "workerId": "fly-a", "incarnationId": "inc-1",
               "scope": null, "result": {}}),
        json!({"type": "error", "requestId": "req-1", "workerId": "fly-a", "incarnationId": "inc-1",
               "scope": null, "result": {}}),
        json!({"type": "result", "requestId": "req-1", "workerId": "Fly", "incarnationId": "inc-1",
               "scope": null, "result": {}}),
        json!({"type": "result", "requestId": "req-1", "workerId": "fly-a", "incarnationId": "inc-1",
               "result": {}}),
    ];
    for o in outcomes {
        let map = o.as_object().unwrap().clone();
        let general = from_value::<SessionRpcSuccess>(o.clone()).map_err(|e| e.to_string());
        let moving = SessionRpcSuccess::from_map(map).map_err(|e| e.to_string());
        assert_eq!(moving, general, "{o}");
    }
}

#[test]
fn a_payload_digest_is_the_value_digest_of_its_json() {
    let values = [
        json!({"b": [1, 2.5, "é\u{1f600}", null], "a": {"z": "quote \" and \\ backslash"}}),
        json!([]),
        json!("text"),
        json!(-17),
    ];
    for value in values {
        assert_eq!(
            payload_digest(&value).unwrap(),
            value_digest(&value).unwrap(),
            "{value}"
        );
    }
    let scope = scope(7);
    assert_eq!(
        payload_digest(&scope).unwrap(),
        value_digest(&serde_json::to_value(&scope).unwrap()).unwrap()
    );
    // The same refusal: an integer canonical JSON cannot hold.
    assert!(payload_digest(&json!(9_007_199_254_740_993u64)).is_err());
}

#[test]
fn lowercase_hex_reads_back_every_byte_and_nothing_else() {
    let bytes: Vec<u8> = (0..=255).collect();
    let text = lower_hex(&bytes);
    let mut back = vec![0; 256];
    assert!(parse_lower_hex_into(&text, &mut back));
    assert_eq!(back, bytes);
    let mut two = [0; 2];
    for bad in ["0A0b", "0a0", "0a0b0c", "0g0b", "+a0b", " a0b"] {
        assert!(!parse_lower_hex_into(bad, &mut two), "{bad:?}");
    }
    assert!(parse_lower_hex_into("ff00", &mut two));
    assert_eq!(two, [0xff, 0x00]);
}
