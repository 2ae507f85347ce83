//! The connectome file: round trip, and every corruption refused with its code.

use std::collections::BTreeMap;

use flysim_brain::{Connectome, format};

fn small() -> Connectome {
    let mut meta = BTreeMap::new();
    meta.insert("dataset".to_owned(), "tiny".to_owned());
    Connectome::from_edges(
        5,
        [(0, 1, 3), (0, 4, -2), (1, 2, 7), (3, 0, 1), (4, 4, 2)],
        Some(["a", "b", "c", "d", "e"].map(str::to_owned).to_vec()),
        meta,
        "t",
    )
    .unwrap()
}

/// Replaces the trailer with the SHA-256 of the (edited) body, so only structure is wrong.
fn rehash(mut bytes: Vec<u8>) -> Vec<u8> {
    let body = bytes.len() - 32;
    let d = flysim_types::digest::sha256(&bytes[..body]);
    bytes[body..].copy_from_slice(d.as_bytes());
    bytes
}

#[test]
fn round_trip_is_exact_and_the_digest_is_the_file_hash() {
    let c = small();
    let bytes = format::encode(&c);
    assert_eq!(bytes.len() % 8, 0);
    let back = format::decode(&bytes).unwrap();
    assert_eq!(back, c);
    assert_eq!(c.digest(), flysim_types::digest::sha256(&bytes));
    assert_eq!(format::encode(&back), bytes);
    let no_names = Connectome::from_csr(
        c.indptr().to_vec(),
        c.targets().to_vec(),
        c.weights().to_vec(),
        None,
        BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(
        format::decode(&format::encode(&no_names)).unwrap(),
        no_names
    );
}

#[test]
fn every_flipped_bit_and_every_truncation_is_refused() {
    let bytes = format::encode(&small());
    for at in 0..bytes.len() {
        for bit in [0, 7] {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << bit;
            let err = format::decode(&bad).unwrap_err();
            let code = err.code_str();
            assert!(
                ["FS0701", "FS0702", "FS0703"].contains(&code.as_str()),
                "byte {at}: {code}"
            );
        }
    }
    for len in 0..bytes.len() {
        assert!(format::decode(&bytes[..len]).is_err(), "truncated to {len}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(format::decode(&longer).is_err());
}

#[test]
fn magic_version_and_checksum_have_their_codes() {
    let bytes = format::encode(&small());
    assert_eq!(format::decode(b"").unwrap_err().code_str(), "FS0701");
    assert_eq!(
        format::decode(b"# flysim\n").unwrap_err().code_str(),
        "FS0701"
    );
    let mut v2 = bytes.clone();
    v2[8] = 2;
    assert_eq!(
        format::decode(&rehash(v2)).unwrap_err().code_str(),
        "FS0702"
    );
    let mut flipped = bytes.clone();
    flipped[40] ^= 0x10;
    assert_eq!(format::decode(&flipped).unwrap_err().code_str(), "FS0703");
}

/// An in-place edit of file bytes.
type Edit<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

#[test]
fn structural_corruption_with_a_valid_checksum_is_malformed() {
    let bytes = format::encode(&small());
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    // Section offsets from the table (entry s at 32 + 24 s: kind, reserved, offset, length).
    let offset = |s: usize| u64_at(&bytes, 32 + 24 * s + 8) as usize;
    let cases: Vec<(&str, Edit<'_>)> = vec![
        ("section count", Box::new(|b| b[12] = 9)),
        ("neuron count", Box::new(|b| b[16] = 6)),
        ("edge count", Box::new(|b| b[24] = 9)),
        ("section kind", Box::new(|b| b[32] = 2)),
        ("reserved", Box::new(|b| b[36] = 1)),
        ("section offset", Box::new(|b| b[40] += 8)),
        ("indptr start", Box::new(move |b| b[offset(0)] = 1)),
        ("target out of range", Box::new(move |b| b[offset(1)] = 9)),
        ("row order", Box::new(move |b| b[offset(1) + 4] = 0)),
        (
            "zero weight",
            Box::new(move |b| {
                b[offset(2)] = 0;
                b[offset(2) + 1] = 0;
            }),
        ),
        ("metadata", Box::new(move |b| b[offset(3)] = b'[')),
        (
            "padding",
            Box::new(move |b| {
                let end = offset(4) - 1;
                b[end] = 1;
            }),
        ),
        (
            "name with a line break",
            Box::new(move |b| b[offset(4)] = b'\r'),
        ),
    ];
    for (what, edit) in cases {
        let mut bad = bytes.clone();
        edit(&mut bad);
        assert_ne!(bad, bytes, "{what}: the edit changed nothing");
        let err = format::decode(&rehash(bad)).unwrap_err();
        assert_eq!(err.code_str(), "FS0704", "{what}: {err}");
    }
    assert_eq!(u32_at(&bytes, 8), format::VERSION);
}
