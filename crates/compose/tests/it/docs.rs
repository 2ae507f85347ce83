//! Every `kdl` block of docs/compositions.md parses; complete compositions resolve; blocks
//! marked `kdl,fails=FSnnnn` are refused with exactly that code.

use flysim_compose::Input;

use crate::{render, root};

/// The fenced blocks of a Markdown text: (info string, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            out.push((info.trim().to_owned(), body.join("\n") + "\n"));
        }
    }
    out
}

#[test]
fn every_kdl_block_of_the_composition_guide_holds() {
    let text = std::fs::read_to_string(root().join("docs/compositions.md")).unwrap();
    let dir = root().join("compositions");
    let (mut parsed, mut resolved, mut failed) = (0, 0, 0);
    for (info, body) in blocks(&text) {
        let input = Input {
            name: "docs/compositions.md",
            bytes: body.as_bytes(),
            dir: &dir,
        };
        if let Some(code) = info.strip_prefix("kdl,fails=") {
            let diags = flysim_compose::plan(input, None, crate::SPECS).expect_err(&body);
            let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
            assert_eq!(codes, [code], "{body}\n{}", render(&diags));
            failed += 1;
        } else if info == "kdl" {
            assert!(
                kdl::KdlDocument::parse_v2(&body).is_ok(),
                "does not parse:\n{body}"
            );
            parsed += 1;
            // A complete composition has a header and a run; the rest are single-node examples.
            if body.contains("flysim-composition 1") && body.contains("\nrun ") {
                if let Err(diags) = flysim_compose::plan(input, None, crate::SPECS) {
                    panic!("{body}\n{}", render(&diags));
                }
                resolved += 1;
            }
        }
    }
    assert!(
        parsed >= 12 && resolved >= 1 && failed >= 2,
        "{parsed} {resolved} {failed}"
    );
}
