//! The generated parts of the docs are what this build renders: `docs/compositions.md`'s
//! components section is `flysim components-doc`'s output.

use crate::{flysim, root};

const BEGIN: &str = "<!-- generated: components -->";
const END: &str = "<!-- /generated -->";

#[test]
fn the_components_section_of_the_composition_guide_is_current() {
    let page = std::fs::read_to_string(root().join("docs/compositions.md")).unwrap();
    let begin = page
        .find(BEGIN)
        .expect("docs/compositions.md has the start marker");
    let end = page[begin..].find(END).expect("and the end marker") + begin + END.len();
    let run = flysim(&["components-doc"], b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert!(
        page[begin..end] == *run.stdout.trim_end(),
        "docs/compositions.md's components section differs from this build's specs; refresh it with\n  cargo run -p flysim -- components-doc --update docs/compositions.md\n--- the file ---\n{}\n--- rendered ---\n{}",
        &page[begin..end],
        run.stdout
    );
    // What the section must say: every task, executor, backend, world and model parameter.
    for word in [
        "`counter-v1`",
        "`fly-arena-score-v1`",
        "`gamecube-pad-echo-v1`",
        "`direct-v1`",
        "`binjgb`",
        "`press-rate`",
        "`warmup-ticks`",
        "`none-v1`",
        // The declared memory task goes exactly with the backends that let tasks read memory.
        "| `binjgb` | `fly-arena-score-v1`, `none-v1`, `memory-v1` |",
        "| `arena` | `counter-v1`, `none-v1` |",
        "| `dolphin` | `gamecube-pad-echo-v1`, `none-v1`, `memory-v1` |",
        "at most 1",
    ] {
        assert!(page[begin..end].contains(word), "{word} is missing");
    }
}

#[test]
fn components_doc_update_rewrites_only_its_section() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("page.md");
    std::fs::write(
        &page,
        format!("# Title\n\nhand-written\n\n{BEGIN}\nstale\n{END}\n\nafter\n"),
    )
    .unwrap();
    let run = flysim(&["components-doc", "--update", page.to_str().unwrap()], b"");
    assert_eq!(run.status, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&page).unwrap();
    let rendered = flysim(&["components-doc"], b"").stdout;
    assert_eq!(
        text,
        format!(
            "# Title\n\nhand-written\n\n{}\n\nafter\n",
            rendered.trim_end()
        )
    );
}
