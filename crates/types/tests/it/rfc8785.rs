//! The published RFC 8785 vectors (fixtures/rfc8785), reproduced byte for byte.

use flysim_types::json::{parse_document, to_canonical};

#[test]
fn published_vectors_reproduce_byte_for_byte() {
    let dir = crate::fixtures().join("rfc8785");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .unwrap()
                .strip_suffix(".in.json")
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "arrays",
            "french",
            "structures",
            "unicode",
            "values",
            "weird"
        ]
    );
    for name in names {
        let input = std::fs::read(dir.join(format!("{name}.in.json"))).unwrap();
        let want = std::fs::read(dir.join(format!("{name}.out.json"))).unwrap();
        let got = to_canonical(&parse_document(&input).unwrap()).unwrap();
        assert_eq!(got.as_bytes(), want.as_slice(), "{name}: {got}");
    }
}
