//! Integration tests of flysim-types: one binary, one module per concern.

mod digests;
mod json;
mod rational;
mod rfc8785;
mod roundtrip;
mod scalars;
mod schemas;
mod seed;

/// The repository's `fixtures/` directory.
pub(crate) fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

#[test]
fn no_test_module_is_forgotten() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "main") {
            assert!(
                main.contains(&format!("mod {module};")),
                "tests/it/{name} is not included in main.rs"
            );
        }
    }
}
