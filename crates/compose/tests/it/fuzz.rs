//! Fuzzing the KDL decoder (issue 26): `load` over mutated shipped and fixture compositions must
//! return diagnostics, never panic, and every diagnostic must be one of this crate's codes with
//! labels that lie inside the source they point into (so the binary can always render it). The
//! input budget is small and fixed here; CI's fuzzing step sets a time budget instead. A crash
//! is kept under `fixtures/fuzz/kdl/` and replayed first.

use std::path::{Path, PathBuf};

use flysim_compose::{Diag, Input};
use flysim_fuzz::{Budget, Campaign, Corpus, has_extension};
use miette::Diagnostic;

use crate::root;

/// The directories compositions are read from: a mutated input is loaded from one of them
/// (chosen by its length), so the includes of each kind of fixture can resolve.
fn dirs() -> [PathBuf; 3] {
    let root = root();
    [
        root.join("compositions"),
        root.join("fixtures/compositions/ok"),
        root.join("fixtures/compositions/err"),
    ]
}

fn corpus() -> Corpus {
    let mut corpus = Corpus::new();
    let kdl = |p: &Path| has_extension(p, "kdl");
    for dir in [
        root().join("compositions"),
        root().join("fixtures/compositions"),
    ] {
        assert!(corpus.add_files(&dir, kdl).unwrap() > 0);
    }
    corpus
}

/// What every diagnostic must satisfy: a composition code, and labels the source can show.
fn check_diag(d: &Diag) {
    let code = d.code();
    assert!(
        code.starts_with("FS02"),
        "a compose diagnostic with code `{code}`"
    );
    let Some(src) = d.source_code() else { return };
    for label in d.labels().into_iter().flatten() {
        assert!(
            src.read_span(label.inner(), 0, 0).is_ok(),
            "{code}: label {:?} lies outside its source",
            label.inner()
        );
    }
}

fn check(bytes: &[u8]) {
    let dirs = dirs();
    let dir = &dirs[bytes.len() % dirs.len()];
    let (_, diags) = flysim_compose::load(Input {
        name: "fuzzed.kdl",
        bytes,
        dir,
    });
    diags.iter().for_each(check_diag);
}

#[test]
fn the_kdl_decoder_survives_mutation() {
    let corpus = corpus();
    // The shipped and well-formed compositions load without a diagnostic where they live.
    let clean = [
        root().join("compositions/synthetic.kdl"),
        root().join("compositions/gameboy.kdl"),
        root().join("fixtures/compositions/ok/four-flies.kdl"),
    ];
    for path in &clean {
        let bytes = std::fs::read(path).unwrap();
        let (_, diags) = flysim_compose::load(Input {
            name: "clean.kdl",
            bytes: &bytes,
            dir: path.parent().unwrap(),
        });
        assert!(
            diags.is_empty(),
            "{}: {}",
            path.display(),
            crate::render(&diags)
        );
    }
    // A syntax fixture is refused with its two syntax errors, whose labels the checks accept.
    let path = root().join("fixtures/compositions/err/two-syntax-errors.kdl");
    let bytes = std::fs::read(&path).unwrap();
    let (_, diags) = flysim_compose::load(Input {
        name: "two-syntax-errors.kdl",
        bytes: &bytes,
        dir: path.parent().unwrap(),
    });
    assert_eq!(
        diags.iter().map(Diag::code).collect::<Vec<_>>(),
        ["FS0201"; 2]
    );
    diags.iter().for_each(check_diag);

    let report = Campaign::new("kdl", &corpus)
        .regressions(root().join("fixtures/fuzz/kdl"))
        .run(Budget::from_env_or(60), check);
    assert_eq!(report.corpus, corpus.len());
}
