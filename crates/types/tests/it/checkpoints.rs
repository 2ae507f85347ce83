//! The checkpoint-envelope fixtures (fixtures/checkpoints/): a valid FLYSESS1 file and one damaged
//! copy per refusal, each rebuilt here byte for byte from the encoder. The explain pages of the
//! envelope codes run `flysim checkpoint verify` on them. Regenerate with
//! `FLYSIM_BLESS=1 cargo nextest run -p flysim-types checkpoints`.

use flysim_types::Id;
use flysim_types::checkpoint::{EnvelopeError, FOOTER_BYTES, Payload, decode, encode};
use serde_json::json;

fn valid() -> Vec<u8> {
    let manifest = json!({
        "checkpointId": "fixture-1",
        "schedulerId": "lockstep-v1",
        "sourceScope": {"sessionId": "demo", "epoch": "e0", "step": "3"},
    });
    let payloads = [
        ("agent-fly-a", &b"synthetic agent state"[..]),
        ("world", &b"counter arena state"[..]),
    ]
    .into_iter()
    .map(|(n, b)| Payload {
        name: Id::parse(n).unwrap(),
        bytes: b.to_vec(),
    })
    .collect::<Vec<_>>();
    encode(manifest.as_object().unwrap(), &payloads).unwrap()
}

/// Each damaged fixture: name, how it is made from the valid bytes, the code it must give.
fn damaged() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let ok = valid();
    let manifest_len = u32::from_le_bytes(ok[16..20].try_into().unwrap()) as usize;
    let table = u32::from_le_bytes(ok[24..28].try_into().unwrap()) as usize;
    let first_payload = (table + 2 * 112).div_ceil(8) * 8;
    let footer = ok.len() - FOOTER_BYTES;
    let flip = |at: usize, to: u8| {
        let mut b = ok.clone();
        b[at] = to;
        b
    };
    let manifest = std::str::from_utf8(&ok[32..32 + manifest_len]).unwrap();
    let length_at =
        32 + manifest.find("\"byteLength\":\"21\"").unwrap() + "\"byteLength\":\"2".len();
    vec![
        ("truncated", ok[..60].to_vec(), "FS0440"),
        (
            "legacy-magic",
            {
                let mut b = ok.clone();
                b[..8].copy_from_slice(b"FLYSIM01");
                b
            },
            "FS0441",
        ),
        ("version-2", flip(8, 2), "FS0442"),
        ("footer-magic", flip(ok.len() - 1, b'X'), "FS0443"),
        ("manifest-not-json", flip(32, b'x'), "FS0444"),
        ("table-bad-name", flip(table, b'A'), "FS0445"),
        (
            "payload-flipped",
            flip(first_payload, ok[first_payload] ^ 1),
            "FS0446",
        ),
        ("manifest-length", flip(length_at, b'2'), "FS0447"),
        (
            "footer-digest",
            flip(footer + 8, ok[footer + 8] ^ 1),
            "FS0448",
        ),
    ]
}

#[test]
fn fixtures_are_the_encoder_output_and_each_gives_its_code() {
    let dir = crate::fixtures().join("checkpoints");
    let bless = std::env::var_os("FLYSIM_BLESS").is_some();
    let mut files = vec![("valid".to_owned(), valid(), None)];
    files.extend(
        damaged()
            .into_iter()
            .map(|(n, b, c)| (n.to_owned(), b, Some(c))),
    );
    for (name, bytes, code) in files {
        let path = dir.join(format!("{name}.flysess"));
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path)
            .unwrap_or_else(|_| panic!("{} is missing; run with FLYSIM_BLESS=1", path.display()));
        assert!(
            committed == bytes,
            "{} differs from the encoder's output; run with FLYSIM_BLESS=1",
            path.display()
        );
        match (decode(&bytes), code) {
            (Ok(_), None) => {}
            (Err(e), Some(code)) => {
                assert_eq!(
                    miette::Diagnostic::code(&e).unwrap().to_string(),
                    code,
                    "{name}: {e}"
                );
            }
            (result, code) => panic!("{name}: expected {code:?}, got {result:?}"),
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 10, "no stray fixture: {names:?}");
}

#[test]
fn the_valid_fixture_decodes_to_its_payloads() {
    let env = decode(&valid()).unwrap();
    assert_eq!(env.payload("world").unwrap().bytes, b"counter arena state");
    assert_eq!(env.manifest["sourceScope"]["step"], "3");
    assert!(matches!(
        decode(&valid()[..100]),
        Err(EnvelopeError::Truncated { .. }) | Err(EnvelopeError::BadFooter { .. })
    ));
}
