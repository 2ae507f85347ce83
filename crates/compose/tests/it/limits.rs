//! The bounds on what a composition makes flysim read: an included file's size is checked
//! before it is read.

use crate::plan_at;

#[test]
fn an_oversized_include_is_refused_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("main.kdl");
    std::fs::write(&root, "flysim-composition 1\ninclude \"big.kdl\"\n").unwrap();
    // A sparse file: over the limit by its length, never written.
    let big = std::fs::File::create(tmp.path().join("big.kdl")).unwrap();
    big.set_len((16 << 20) + 1).unwrap();
    let diags = plan_at(&root, "main.kdl").unwrap_err();
    let codes: Vec<String> = diags.iter().map(flysim_compose::Diag::code).collect();
    assert!(codes.contains(&"FS0229".to_owned()), "{codes:?}");
    let text = crate::render(&diags);
    assert!(
        text.contains("larger than the limit of 16777216 bytes"),
        "{text}"
    );
}
