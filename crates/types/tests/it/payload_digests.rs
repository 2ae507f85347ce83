//! The digest of every payload type, written straight from the typed value, equals the digest of
//! `canonical(serde_json::to_value(value))`, on generated values.
//!
//! Values are generated from each kind's valid document (the payload fixtures, a recorded run's
//! plan, manifest and rows): every string and number in it is replaced by a generated one, and
//! every object gains generated members, so free-form maps (decision contexts, inspections,
//! parameters) get keys in any order, characters outside the Basic Multilingual Plane, escapes
//! and doubles. A variant the type refuses (an id that is not an id, an unknown field) is
//! skipped; enough of each kind's variants must be accepted for the property to mean something.
//! The oracle for "canonical" itself is independent of the writer: the text parses back to the
//! same value and holds its object keys in UTF-16 order with no insignificant whitespace.

use std::path::Path;

use flysim_types::digest::sha256;
use flysim_types::json::{parse_document, to_canonical, utf16_cmp};
use flysim_types::payload::PayloadKind;
use proptest::prelude::*;
use proptest::strategy::ValueTree as _;
use proptest::test_runner::{Config, TestRng, TestRunner};
use serde_json::{Number, Value};

/// Generated variants per kind.
const CASES: u32 = 160;

/// A valid document of each kind that has one.
fn documents() -> Vec<(PayloadKind, Value)> {
    let read = |path: &Path| -> Value {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        parse_document(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let mut out = Vec::new();
    let valid = crate::fixtures().join("payloads/valid");
    for kind in flysim_types::schema::kinds() {
        let path = valid.join(format!("{}.json", kind.name));
        if path.exists() {
            out.push((kind, read(&path)));
        }
    }
    // The state methods' payloads: not among the contract's kinds (no schema, no fixture), so
    // their documents are built here from the fixtures of what they hold.
    use flysim_types::workers::{
        ActivateRestoreParams, ActivateRestoreResult, CaptureParams, CaptureResult,
        StageRestoreParams, StageRestoreResult,
    };
    let artifact = read(&valid.join("artifact-ref.json"));
    let observation = read(&valid.join("world-observation.json"));
    let id = serde_json::json!({"checkpointId": "ck-3"});
    for (kind, document) in [
        (
            flysim_types::payload_kind!(CaptureParams, "capture-params"),
            id.clone(),
        ),
        (
            flysim_types::payload_kind!(StageRestoreParams, "stage-restore-params"),
            id.clone(),
        ),
        (
            flysim_types::payload_kind!(ActivateRestoreParams, "activate-restore-params"),
            id,
        ),
        (
            flysim_types::payload_kind!(CaptureResult, "capture-result"),
            serde_json::json!({"checkpointId": "ck-3", "boundary": "12", "payload": artifact}),
        ),
        (
            flysim_types::payload_kind!(StageRestoreResult, "stage-restore-result"),
            serde_json::json!({"checkpointId": "ck-3", "boundary": "12"}),
        ),
        (
            flysim_types::payload_kind!(ActivateRestoreResult, "activate-restore-result"),
            serde_json::json!({"checkpointId": "ck-3", "committedStep": "12", "observation": observation}),
        ),
    ] {
        out.push((kind, document));
    }
    let run = crate::fixtures().join("runs/synthetic-3");
    let named = |name: &str| flysim_types::schema::kind(name).expect(name);
    out.push((named("launch-plan"), read(&run.join("plan.json"))));
    out.push((named("run-manifest"), read(&run.join("manifest.json"))));
    let trace = std::fs::read_to_string(run.join("trace.ndjson")).expect("trace");
    for line in trace.lines().take(3) {
        out.push((
            named("transition-trace"),
            parse_document(line.as_bytes()).expect("row"),
        ));
    }
    out
}

/// A string: an id-like one (which an `Id` field accepts) or any text at all.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9-]{0,12}",
        "req-[1-9][0-9]{0,5}",
        any::<String>(),
        "[\u{e000}-\u{e0ff}\u{1f600}-\u{1f64f}a-z\"\\\\\n\u{1}]{0,6}",
    ]
}

/// A number the contract can hold: a safe integer (often small), or a finite double.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0_i64..64).prop_map(Value::from),
        (-9_007_199_254_740_991_i64..=9_007_199_254_740_991).prop_map(Value::from),
        (-1.0e6_f64..1.0e6).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
    ]
}

/// A small free-form member value.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string().prop_map(Value::String),
    ]
}

/// Where in a document a generated value may go: a string, a number, or an object that may
/// gain members.
fn places(value: &Value, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match value {
        Value::String(_) | Value::Number(_) => out.push(at.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(i);
                places(item, at, out);
                at.pop();
            }
        }
        Value::Object(map) => {
            out.push(at.clone());
            for (i, item) in map.values().enumerate() {
                at.push(i);
                places(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The value at `path` (indices into arrays and into objects' members in their order).
fn at_mut<'v>(value: &'v mut Value, path: &[usize]) -> &'v mut Value {
    path.iter().fold(value, |v, &i| match v {
        Value::Array(items) => &mut items[i],
        Value::Object(map) => map.values_mut().nth(i).expect("a member"),
        _ => panic!("a path into a scalar"),
    })
}

/// Draws one change of `document`: a string or number replaced, or two members added to an
/// object.
fn vary(document: &Value, runner: &mut TestRunner) -> Value {
    fn draw<S: Strategy>(strategy: S, runner: &mut TestRunner) -> S::Value {
        strategy
            .new_tree(runner)
            .map(|tree| tree.current())
            .unwrap_or_else(|e| panic!("a strategy that cannot fail: {e}"))
    }
    let mut all = Vec::new();
    places(document, &mut Vec::new(), &mut all);
    let mut out = document.clone();
    let pick = draw(0..all.len(), runner);
    let place = at_mut(&mut out, &all[pick]);
    match place {
        Value::String(_) => *place = Value::String(draw(string(), runner)),
        Value::Number(_) => *place = draw(number(), runner),
        Value::Object(map) => {
            for _ in 0..2 {
                map.insert(draw(string(), runner), draw(leaf(), runner));
            }
        }
        _ => {}
    }
    out
}

/// A plan variant with its `planDigest` stamped again (the plan refuses a stale one), or the
/// variant as it is when it is no plan.
fn reseal(variant: Value) -> Value {
    serde_json::from_value::<flysim_types::plan::LaunchPlan>(variant.clone())
        .ok()
        .and_then(|plan| plan.into_body().seal().ok())
        .and_then(|plan| serde_json::to_value(plan).ok())
        .unwrap_or(variant)
}

/// The oracle: `text` reads back as `value`, and it is that value's members laid out in UTF-16
/// key order with no whitespace (written here by sorting, not by the writer's re-laying).
fn assert_canonical(text: &str, value: &Value, kind: &str) {
    let back = parse_document(text.as_bytes()).unwrap_or_else(|e| panic!("{kind}: {e}"));
    // In the contract's number model (an integral double is an integer), as the reader gives.
    let value = serde_json::to_vec(value).expect("a value");
    let value = parse_document(&value).unwrap_or_else(|e| panic!("{kind}: {e}"));
    assert_eq!(back, value, "{kind}: the text reads back as another value");
    // The text must be the members laid out in UTF-16 key order, nothing between them.
    fn laid_out(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&to_canonical(&Value::String(k.clone())).expect("a string"));
                    out.push(':');
                    laid_out(v, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    laid_out(v, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&to_canonical(scalar).expect("a scalar")),
        }
    }
    let mut expected = String::new();
    laid_out(&back, &mut expected);
    assert_eq!(text, expected, "{kind}: members out of order or padded");
}

#[test]
fn every_payload_types_digest_from_the_typed_value_is_that_of_its_json_value() {
    let documents = documents();
    assert!(documents.len() >= 44, "{} documents", documents.len());
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let mut thin = Vec::new();
    for (kind, document) in &documents {
        let mut accepted = 0;
        // A walk through the kind's valid documents: each case changes one place of the last
        // accepted variant (the first case is the document itself).
        let mut current = document.clone();
        for case in 0..CASES {
            let variant = if case == 0 {
                document.clone()
            } else {
                vary(&current, &mut runner)
            };
            let variant = if kind.name == "launch-plan" {
                reseal(variant)
            } else {
                variant
            };
            let Ok(bytes) = serde_json::to_vec(&variant) else {
                continue;
            };
            // `check` decodes and validates, then gives `serde_json::to_value` of the typed value;
            // `canonical` writes the typed value straight.
            let Ok(json) = (kind.check)(&bytes) else {
                assert!(case > 0, "{}: the valid document is refused", kind.name);
                continue;
            };
            let typed = (kind.canonical)(&bytes).unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            let through_value =
                to_canonical(&json).unwrap_or_else(|e| panic!("{}: {e}", kind.name));
            assert_eq!(
                sha256(typed.as_bytes()),
                sha256(through_value.as_bytes()),
                "{}: typed {typed}\nthrough a value {through_value}",
                kind.name
            );
            assert_canonical(&typed, &json, kind.name);
            accepted += 1;
            current = variant;
        }
        let mut all = Vec::new();
        places(document, &mut Vec::new(), &mut all);
        // A document with a place or two (`{}`, one flag) has few valid variants to find.
        if all.len() >= 4 && accepted < CASES / 16 {
            thin.push(format!("{}: {accepted} of {CASES}", kind.name));
        }
    }
    assert!(
        thin.is_empty(),
        "too few generated values accepted: {thin:?}"
    );
}
