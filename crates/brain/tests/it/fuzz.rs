//! Fuzzing the `.flycsr` decoder (issue 26): `format::decode` over the shipped connectome files
//! and a tiny one, mutated, each tried as it is and with its trailer digest recomputed (so the
//! mutation reaches the header, table and CSR checks behind the checksum). It must never panic,
//! and a connectome it accepts must be the file's one canonical encoding, with the file's
//! SHA-256 as its digest. The input budget is small and fixed here; CI's fuzzing step sets a
//! time budget instead. A crash is kept under `fixtures/fuzz/flycsr/` and replayed first.

use std::collections::BTreeMap;

use flysim_brain::{Connectome, format};
use flysim_fuzz::{Budget, Campaign, Corpus, has_extension};
use flysim_types::digest::sha256;

use crate::root;

/// Bytes of the trailer digest.
const TRAILER: usize = 32;

fn tiny() -> Connectome {
    let mut meta = BTreeMap::new();
    meta.insert("dataset".to_owned(), "tiny".to_owned());
    Connectome::from_edges(
        4,
        [(0, 1, 3), (0, 3, -2), (1, 2, 7), (3, 0, 1)],
        Some(["a", "b", "c", "d"].map(str::to_owned).to_vec()),
        meta,
        "t",
    )
    .unwrap()
}

fn corpus() -> Corpus {
    let mut corpus = Corpus::new();
    let dir = root().join("fixtures/profiles");
    let added = corpus
        .add_files(&dir, |p| has_extension(p, "flycsr"))
        .unwrap();
    assert!(added >= 3, "the shipped connectomes are missing");
    corpus.add("tiny", format::encode(&tiny()));
    corpus
}

/// The same bytes with the trailer replaced by the SHA-256 of the rest.
fn resealed(bytes: &[u8]) -> Option<Vec<u8>> {
    let body = bytes.len().checked_sub(TRAILER)?;
    let mut out = bytes.to_vec();
    out[body..].copy_from_slice(sha256(&bytes[..body]).as_bytes());
    Some(out)
}

/// The first crash the fuzzer found, kept as a regression: `counter-toy-v1.flycsr` with one
/// indptr byte changed (offset 337, an entry of 1720 where the file has 800 edges) and its
/// trailer recomputed. The decoder once panicked on it (it sliced a row before checking its end
/// against the edge count); it is refused as malformed (`FS0704`).
const INDPTR_PAST_THE_EDGES: &str =
    "a7492d0f85c2b98ed243b5b2831c8c8d8e46a9931ebcbe2e5054a24aaadcc397";

fn check_once(bytes: &[u8]) {
    let Ok(c) = format::decode(bytes) else {
        return;
    };
    assert!(
        format::encode(&c) == bytes,
        "an accepted file is not its canonical encoding"
    );
    assert_eq!(
        c.digest(),
        sha256(bytes),
        "the digest is not the file's hash"
    );
}

fn check(bytes: &[u8]) {
    check_once(bytes);
    if let Some(resealed) = resealed(bytes) {
        check_once(&resealed);
    }
}

#[test]
fn the_flycsr_decoder_survives_mutation() {
    let corpus = corpus();
    // Every corpus file decodes, and decodes to what re-encodes to it.
    for sample in corpus.samples() {
        let c = format::decode(&sample.bytes)
            .unwrap_or_else(|e| panic!("{} does not decode: {e}", sample.name));
        assert_eq!(format::encode(&c), sample.bytes, "{}", sample.name);
    }
    // The crash it found is refused with the connectome's own code.
    let regression = std::fs::read(
        root()
            .join("fixtures/fuzz/flycsr")
            .join(INDPTR_PAST_THE_EDGES),
    )
    .unwrap();
    let refused = format::decode(&regression).expect_err("a row past the edges is malformed");
    assert_eq!(refused.code_str(), "FS0704", "{refused}");

    let report = Campaign::new("flycsr", &corpus)
        .regressions(root().join("fixtures/fuzz/flycsr"))
        .run(Budget::from_env_or(1_500), check);
    assert_eq!(report.corpus, corpus.len());
    assert!(report.skipped.is_empty());
}
