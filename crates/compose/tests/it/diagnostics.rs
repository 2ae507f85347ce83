//! Every malformed composition under `fixtures/compositions/err/` is refused, with the codes its
//! first-line comment names, and renders exactly as its committed snapshot.

use crate::{plan_at, render};

/// The `FSnnnn` codes named in a fixture's first line.
fn announced(text: &str) -> Vec<String> {
    let first = text.lines().next().unwrap_or_default();
    let mut codes: Vec<String> = first
        .match_indices("FS")
        .filter_map(|(i, _)| first.get(i..i + 6))
        .filter(|c| flysim_codes::is_well_formed(c))
        .map(str::to_owned)
        .collect();
    codes.dedup();
    codes
}

#[test]
fn malformed() {
    let mut count = 0;
    insta::glob!("../../../../fixtures/compositions", "err/*.kdl", |path| {
        count += 1;
        let name = format!("err/{}", path.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(path).unwrap();
        let diags = match plan_at(path, &name) {
            Ok(_) => panic!("{name} resolved, but it is a malformed composition"),
            Err(diags) => diags,
        };
        let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
        for code in announced(&text) {
            assert!(
                codes.contains(&code),
                "{name} announces {code} but reported {codes:?}"
            );
        }
        for code in &codes {
            assert!(
                flysim_codes::lookup(code).is_some(),
                "{name}: {code} is not registered"
            );
        }
        insta::assert_snapshot!(render(&diags));
    });
    assert!(
        count >= 30,
        "at least 30 malformed compositions, found {count}"
    );
}
