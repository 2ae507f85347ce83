//! Fuzzing the two decoders of the contract (issue 26): the strict JSON reader over mutated
//! payloads, RFC 8785 vectors and schemas, and the FLYSESS1 decoder over mutated checkpoint
//! fixtures. Neither may panic; what they accept must survive its encoder. The input budget
//! is small and fixed here; CI's fuzzing step sets a time budget instead. A crash is kept under
//! `fixtures/fuzz/<target>/` and replayed first.

use flysim_fuzz::{Budget, Campaign, Corpus, has_extension};
use flysim_types::checkpoint::{self, FOOTER_BYTES};
use flysim_types::digest::sha256;
use flysim_types::json::{parse_document, parse_fields, parse_object, to_canonical, write_compact};
use serde_json::Value;

use crate::fixtures;

/// The JSON corpus: payload fixtures (valid and the refused documents), the RFC 8785 vectors
/// and the committed schemas.
fn json_corpus() -> Corpus {
    let mut corpus = Corpus::new();
    let json = |p: &std::path::Path| has_extension(p, "json");
    let root = fixtures().join("..");
    for dir in ["fixtures/payloads", "fixtures/rfc8785", "schemas"] {
        let added = corpus.add_files(&root.join(dir), json).unwrap();
        assert!(added > 0, "no JSON under {dir}");
    }
    let refused = std::fs::read(fixtures().join("payloads/invalid.json")).unwrap();
    let Value::Array(cases) = parse_document(&refused).unwrap() else {
        panic!("payloads/invalid.json is a list");
    };
    for (i, case) in cases.iter().enumerate() {
        let text = to_canonical(&case["document"]).unwrap();
        corpus.add(format!("invalid.json#{i}"), text.into_bytes());
    }
    corpus
}

/// The strict reader never panics; what it reads has a canonical form that reads back as the
/// same value and is its own canonical form, and a compact form that is serde_json's;
/// `parse_object` and `parse_fields` agree with `parse_document`.
fn check_json(bytes: &[u8]) {
    let document = parse_document(bytes);
    let object = parse_object(bytes);
    assert_eq!(
        object.is_ok(),
        matches!(document, Ok(Value::Object(_))),
        "parse_object and parse_document disagree"
    );
    check_fields(bytes, &object);
    let Ok(value) = document else { return };
    let mut compact = Vec::new();
    write_compact(&value, &mut compact);
    assert_eq!(
        compact,
        serde_json::to_vec(&value).unwrap(),
        "the compact text is not serde_json's"
    );
    let canonical = to_canonical(&value).expect("a value the reader produced is canonicalisable");
    let again = parse_document(canonical.as_bytes()).expect("a canonical form reads back");
    assert_eq!(
        again, value,
        "the canonical form reads back as another value"
    );
    assert_eq!(to_canonical(&again).unwrap(), canonical);
}

/// Top-level names `check_fields` asks for: some the corpus has, some it lacks.
const NAMES: [&str; 6] = ["$schema", "type", "properties", "id", "kind", "body"];

/// `parse_fields` refuses what `parse_object` refuses, with the same error, and otherwise gives
/// each name's value and the least other key of `parse_object`'s map.
fn check_fields(
    bytes: &[u8],
    object: &Result<serde_json::Map<String, Value>, flysim_types::json::JsonError>,
) {
    let fields = parse_fields(bytes, &NAMES);
    match (object, fields) {
        (Err(want), Err(got)) => assert_eq!(&got, want, "parse_fields refuses differently"),
        (Ok(map), Ok(got)) => {
            for (name, value) in NAMES.iter().zip(&got.values) {
                assert_eq!(value.as_ref(), map.get(*name), "field {name}");
            }
            let unknown = map.keys().find(|k| !NAMES.contains(&k.as_str()));
            assert_eq!(got.unknown.as_ref(), unknown);
        }
        (want, got) => panic!("parse_object gave {want:?}, parse_fields {got:?}"),
    }
}

#[test]
fn strict_json_survives_mutation() {
    let corpus = json_corpus();
    // Every fixture document is strict JSON as it is (the refused payloads are refused by
    // their schema, not by the reader).
    for sample in corpus.samples() {
        let read = parse_document(&sample.bytes);
        assert!(read.is_ok(), "{} does not read: {read:?}", sample.name);
    }
    let report = Campaign::new("json", &corpus)
        .regressions(fixtures().join("fuzz/json"))
        .run(Budget::from_env_or(4_000), check_json);
    assert_eq!(report.corpus, corpus.len());
}

/// The checkpoint corpus: the valid envelope and one damaged copy per refusal.
fn checkpoint_corpus() -> Corpus {
    let mut corpus = Corpus::new();
    let dir = fixtures().join("checkpoints");
    let added = corpus
        .add_files(&dir, |p| has_extension(p, "flysess"))
        .unwrap();
    assert!(added >= 2, "the checkpoint fixtures are missing");
    corpus
}

/// The same bytes with the footer (file length and digest) made to match them, so mutations
/// reach the regions behind the footer check; `None` when there is no room for a footer.
fn resealed(bytes: &[u8]) -> Option<Vec<u8>> {
    let body = bytes.len().checked_sub(FOOTER_BYTES)?;
    let mut out = bytes.to_vec();
    out[body..body + 8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    out[body + 8..body + 40].copy_from_slice(sha256(&bytes[..body]).as_bytes());
    Some(out)
}

/// The decoder never panics; an envelope it accepts re-encodes to exactly the bytes it came
/// from (the layout admits one encoding per envelope).
fn check_checkpoint_once(bytes: &[u8]) {
    let Ok(envelope) = checkpoint::decode(bytes) else {
        return;
    };
    let again = checkpoint::encode(&envelope.manifest, &envelope.payloads)
        .expect("a decoded envelope re-encodes");
    assert!(
        again == bytes,
        "a decoded envelope re-encodes to other bytes"
    );
}

fn check_checkpoint(bytes: &[u8]) {
    check_checkpoint_once(bytes);
    if let Some(resealed) = resealed(bytes) {
        check_checkpoint_once(&resealed);
    }
}

#[test]
fn checkpoint_envelopes_survive_mutation() {
    let corpus = checkpoint_corpus();
    for sample in corpus.samples() {
        let decoded = checkpoint::decode(&sample.bytes);
        assert_eq!(
            decoded.is_ok(),
            sample.name == "valid.flysess",
            "{}: {decoded:?}",
            sample.name
        );
    }
    let report = Campaign::new("checkpoint", &corpus)
        .regressions(fixtures().join("fuzz/checkpoint"))
        .run(Budget::from_env_or(20_000), check_checkpoint);
    assert_eq!(report.corpus, corpus.len());
}
