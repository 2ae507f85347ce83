//! Tests of the envelope, its reader and writer, and the wire vocabulary (`wire.rs`).

use serde::Serialize;

use super::*;

/// The envelope as serde writes it, the wire's form since the first version: the oracle for
/// [`Envelope::write_to`].
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Out<'a> {
    protocol: &'static str,
    major: u32,
    minor: u32,
    id: &'a str,
    reply_to: Option<&'a str>,
    kind: &'static str,
    op: &'a str,
    body: &'a Map<String, Value>,
    attachments: Vec<Value>,
}

fn serde_text(env: &Envelope) -> Vec<u8> {
    serde_json::to_vec(&Out {
        protocol: PROTOCOL,
        major: MAJOR,
        minor: MINOR,
        id: &env.id,
        reply_to: env.reply_to.as_deref(),
        kind: env.kind.as_str(),
        op: &env.op,
        body: &env.body,
        attachments: env.attachments.iter().map(Attachment::to_value).collect(),
    })
    .unwrap()
}

fn sample() -> Envelope {
    let mut body = Map::new();
    body.insert("x".into(), Value::from(1));
    Envelope {
        id: "msg-1".into(),
        reply_to: None,
        kind: Kind::Command,
        op: "bus.hello".into(),
        body,
        attachments: Vec::new(),
    }
}

/// The bytes `write_to` appends are serde_json's of [`Out`] (the form the wire has always
/// had), and `encoded_len` counts them, with and without `replyTo`, escapes and attachments.
#[test]
fn an_envelope_is_written_as_serde_json_writes_it() {
    let plain = sample();
    let mut full = sample();
    full.reply_to = Some("msg-\"7\"".into());
    full.kind = Kind::Delivery;
    full.body.insert(
        "payload".into(),
        serde_json::json!({"b": [1.5, -3, null], "a": {"t\u{1}": true}}),
    );
    full.attachments = (1..=2)
        .map(|n| Attachment {
            name: Id::parse(&format!("frame{n}")).unwrap(),
            reference: ArtifactRef {
                store_id: Id::parse("store-1").unwrap(),
                artifact_id: Id::parse(&format!("a-{n}")).unwrap(),
                generation: U64(1),
                byte_length: U64(92_160),
                content_type: "image/x-rgba8".into(),
                digest: Some(sha256(b"frame")),
            },
            owner_id: OwnerToken::parse(&format!("own-{n}")).unwrap(),
        })
        .collect();
    for env in [plain, full] {
        let mut out = b"xy".to_vec();
        env.write_to(&mut out);
        let want = serde_text(&env);
        assert_eq!(
            String::from_utf8_lossy(&out[2..]),
            String::from_utf8_lossy(&want)
        );
        assert_eq!(env.to_bytes(), want);
        assert_eq!(env.encoded_len(), want.len());
        assert_eq!(Envelope::parse(&want).unwrap(), env);
    }
}

#[test]
fn an_envelope_round_trips() {
    let env = sample();
    assert_eq!(Envelope::parse(&env.to_bytes()).unwrap(), env);
}

#[test]
fn an_unknown_envelope_field_is_refused() {
    let mut v: Value = serde_json::from_slice(&sample().to_bytes()).unwrap();
    v["extra"] = Value::from(1);
    let err = Envelope::parse(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(err.to_string().contains("unknown envelope field"), "{err}");
}

/// What parsing `sample()` with `change` applied to its JSON says.
fn refusal(change: impl FnOnce(&mut Map<String, Value>)) -> String {
    let Value::Object(mut v) = serde_json::from_slice(&sample().to_bytes()).unwrap() else {
        unreachable!("an envelope is an object")
    };
    change(&mut v);
    Envelope::parse(&serde_json::to_vec(&v).unwrap())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_refusal_names_the_first_wrong_field() {
    // An unknown field before a missing one; the first unknown in key order.
    let both = refusal(|v| {
        v.remove("op");
        v.insert("zeta".into(), Value::Null);
        v.insert("alpha".into(), Value::Null);
    });
    assert!(both.contains("unknown envelope field `alpha`"), "{both}");
    // Missing fields in the envelope's field order.
    let missing = refusal(|v| {
        v.remove("attachments");
        v.remove("kind");
    });
    assert!(
        missing.contains("missing envelope field `kind`"),
        "{missing}"
    );
    // Then each field's type, in that order.
    let protocol = refusal(|v| {
        v.insert("protocol".into(), Value::from("flybus2"));
        v.insert("id".into(), Value::from(7));
    });
    assert!(protocol.contains("`protocol` must be"), "{protocol}");
    let id = refusal(|v| {
        v.insert("id".into(), Value::from(7));
        v.insert("op".into(), Value::from(""));
    });
    assert!(id.contains("`id` must be a string"), "{id}");
    let reply = refusal(|v| {
        v.insert("replyTo".into(), Value::from(1));
    });
    assert!(
        reply.contains("`replyTo` must be a string or null"),
        "{reply}"
    );
    let kind = refusal(|v| {
        v.insert("kind".into(), Value::from("shout"));
    });
    assert!(kind.contains("unknown envelope kind `shout`"), "{kind}");
    let op = refusal(|v| {
        v.insert("op".into(), Value::from(""));
    });
    assert!(op.contains("`op` must be 1..=128 bytes"), "{op}");
    let body = refusal(|v| {
        v.insert("body".into(), Value::from(1));
        v.insert("attachments".into(), Value::Null);
    });
    assert!(body.contains("`body` must be an object"), "{body}");
    let attachments = refusal(|v| {
        v.insert("attachments".into(), Value::Null);
    });
    assert!(
        attachments.contains("`attachments` must be an array"),
        "{attachments}"
    );
    // A reply names its command; `replyTo` null is no reply.
    let mut reply = sample();
    reply.reply_to = Some("msg-0".into());
    assert_eq!(Envelope::parse(&reply.to_bytes()).unwrap(), reply);
}

#[test]
fn duplicate_keys_and_wrong_versions_are_refused() {
    let text = br#"{"protocol":"flybus","protocol":"flybus"}"#;
    assert!(Envelope::parse(text).is_err());
    let mut v: Value = serde_json::from_slice(&sample().to_bytes()).unwrap();
    v["major"] = Value::from(2);
    assert!(Envelope::parse(&serde_json::to_vec(&v).unwrap()).is_err());
}

#[test]
fn every_error_code_round_trips_and_the_contract_names_it() {
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        assert!(CONTRACT.contains(code.as_str()));
    }
    assert_eq!(contract_digest(), sha256(CONTRACT.as_bytes()));
}

#[test]
fn names_follow_the_rule() {
    assert!(check_name("session.coordinator").is_ok());
    assert!(check_name("a..b").is_err());
    assert!(check_name("Upper").is_err());
    assert!(check_name(&"a".repeat(193)).is_err());
}
