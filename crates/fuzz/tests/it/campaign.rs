//! A campaign over a toy target that panics on a planted input: the search finds it within its
//! input budget, the failure names it and keeps the input under its SHA-256, a kept regression
//! is replayed first, and a known failure is skipped.

use std::panic::{AssertUnwindSafe, catch_unwind};

use flysim_fuzz::crash::{crash_dir, hex, sha256_hex};
use flysim_fuzz::{Budget, Campaign, Corpus};

/// A toy decoder with a planted bug: it panics on any input that holds `!?` before a `;`
/// (an out-of-bounds index, as a real decoder's bug would be).
fn toy_decode(bytes: &[u8]) {
    let end = bytes.iter().position(|b| *b == b';').unwrap_or(bytes.len());
    if bytes[..end].windows(2).any(|w| w == b"!?") {
        let empty: &[u8] = &[];
        let _ = empty[end];
    }
}

fn corpus() -> Corpus {
    let mut corpus = Corpus::new();
    corpus.add("a", b"hello ?world!;".to_vec());
    corpus.add("b", b"abc!;def?".to_vec());
    corpus
}

/// The panic message of `f`, which must panic.
fn failure_of(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the campaign should fail");
    payload
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted message")
}

#[test]
fn the_planted_bug_is_found_and_its_input_kept() {
    let corpus = corpus();
    let message = failure_of(|| {
        let _ = Campaign::new("toy-planted", &corpus).run(Budget::Inputs(200_000), toy_decode);
    });
    assert!(message.contains("fuzz target `toy-planted` panicked on mutated input #"));
    assert!(message.contains("index out of bounds"), "{message}");
    let hex_line = message
        .lines()
        .find_map(|l| l.strip_prefix("hex: "))
        .unwrap();
    let bytes: Vec<u8> = (0..hex_line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex_line[i..i + 2], 16).unwrap())
        .collect();
    let kept = crash_dir("toy-planted").join(sha256_hex(&bytes));
    assert_eq!(std::fs::read(&kept).unwrap(), bytes);
    assert!(
        catch_unwind(|| toy_decode(&bytes)).is_err(),
        "the kept input must crash"
    );
}

#[test]
fn regressions_are_replayed_first_and_known_failures_skipped() {
    let dir = tempdir();
    std::fs::write(dir.join("fine"), b"no bug here").unwrap();
    std::fs::write(dir.join("crash-1"), b"x!?y").unwrap();
    std::fs::write(dir.join("README.md"), b"not an input").unwrap();
    let corpus = corpus();
    let message = failure_of(|| {
        let _ = Campaign::new("toy-replay", &corpus)
            .regressions(&dir)
            .run(Budget::Inputs(0), toy_decode);
    });
    assert!(
        message.contains("panicked on regression `crash-1`"),
        "{message}"
    );
    assert!(
        message.contains(&format!("hex: {}", hex(b"x!?y"))),
        "{message}"
    );

    let report = Campaign::new("toy-replay", &corpus)
        .regressions(&dir)
        .known_failure("crash-1")
        .run(Budget::Inputs(10), toy_decode);
    assert_eq!(report.replayed, ["fine"]);
    assert_eq!(report.skipped, ["crash-1"]);
    assert_eq!(report.corpus, 2);
    assert_eq!(report.mutated, 10);
}

#[test]
fn a_broken_corpus_input_fails_before_any_mutation() {
    let mut corpus = corpus();
    corpus.add("bad", b"!?".to_vec());
    let message = failure_of(|| {
        let _ = Campaign::new("toy-corpus", &corpus).run(Budget::Inputs(0), toy_decode);
    });
    assert!(
        message.contains("panicked on corpus input `bad`"),
        "{message}"
    );
}

#[test]
fn an_input_budget_is_deterministic() {
    let corpus = corpus();
    let seen = |seed_name: &str| {
        let inputs = std::cell::RefCell::new(Vec::new());
        let _ = Campaign::new(seed_name, &corpus).run(Budget::Inputs(300), |b: &[u8]| {
            inputs.borrow_mut().push(b.to_vec());
        });
        inputs.into_inner()
    };
    assert_eq!(seen("toy-same"), seen("toy-same"));
    assert_ne!(seen("toy-same"), seen("toy-other"));
}

/// A fresh directory under the target's crash area (no extra dependency for one test).
fn tempdir() -> std::path::PathBuf {
    let dir = crash_dir("toy-replay").join("regressions");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
