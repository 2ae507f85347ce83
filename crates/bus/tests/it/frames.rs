//! Property tests: arbitrary bytes never panic the frame decoder or the envelope reader, and the
//! decoder never reserves more than one envelope.

use flysim_bus::frame::{FrameDecoder, encode};
use flysim_bus::wire::Envelope;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_in_arbitrary_chunks(bytes in proptest::collection::vec(any::<u8>(), 0..2048), cut in 1usize..64) {
        let mut decoder = FrameDecoder::new();
        for chunk in bytes.chunks(cut) {
            let mut rest = chunk;
            while !rest.is_empty() {
                match decoder.feed(rest) {
                    Ok((used, frame)) => {
                        prop_assert!(used > 0 && used <= rest.len());
                        prop_assert!(decoder.buffered_capacity() <= 65_536);
                        if let Some(frame) = frame {
                            prop_assert!(!frame.is_empty() && frame.len() <= 65_536);
                            let _ = Envelope::parse(&frame);
                        }
                        rest = &rest[used..];
                    }
                    Err(_) => return Ok(()),
                }
            }
        }
    }

    #[test]
    fn arbitrary_envelope_bodies(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Envelope::parse(&body);
    }

    #[test]
    fn valid_frames_survive_any_split(payloads in proptest::collection::vec("[a-z]{1,40}", 1..8), cut in 1usize..17) {
        let mut wire = Vec::new();
        let bodies: Vec<Vec<u8>> = payloads.iter().map(|p| format!("{{\"k\":\"{p}\"}}").into_bytes()).collect();
        for b in &bodies {
            encode(b, &mut wire);
        }
        let mut decoder = FrameDecoder::new();
        let mut out = Vec::new();
        for chunk in wire.chunks(cut) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let (used, frame) = decoder.feed(rest).unwrap();
                out.extend(frame);
                rest = &rest[used..];
            }
        }
        prop_assert_eq!(out, bodies);
    }
}
