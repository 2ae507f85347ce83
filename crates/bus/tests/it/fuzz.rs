//! Fuzzing the frame decoder (issue 26): byte streams of framed envelopes, mutated, fed to
//! [`FrameDecoder`] in chunks. It must never panic, never reserve more than one envelope, give
//! the same frames and the same refusal however the stream is split, and every envelope read
//! from a frame must re-encode to bytes that read back as the same envelope. The input budget is
//! small and fixed here; CI's fuzzing step sets a time budget instead. A crash is kept under
//! `fixtures/fuzz/frame/` and replayed first.

use flysim_bus::frame::{FrameDecoder, encode};
use flysim_bus::wire::Envelope;
use flysim_fuzz::{Budget, Campaign, Corpus};
use flysim_types::limits::MAX_ENVELOPE_BYTES;

/// A few envelopes of each kind, one with an attachment, as the wire spells them.
const ENVELOPES: [&str; 5] = [
    r#"{"protocol":"flybus","major":1,"minor":0,"id":"msg-1","replyTo":null,"kind":"command","op":"hello","body":{"name":"agent-a","roles":["agent"]},"attachments":[]}"#,
    r#"{"protocol":"flybus","major":1,"minor":0,"id":"bus-1","replyTo":"msg-1","kind":"reply","op":"hello","body":{"connectionId":"c-1"},"attachments":[]}"#,
    r#"{"protocol":"flybus","major":1,"minor":0,"id":"bus-2","replyTo":null,"kind":"delivery","op":"topic.message","body":{"topic":"t.x","seq":"7","payload":{"a":[1,2.5,"\u00e9"]}},"attachments":[{"name":"frame","ref":{"storeId":"s-1","artifactId":"a-1","generation":"1","byteLength":"16","contentType":"application/octet-stream","digest":null},"ownerId":"own-1"}]}"#,
    r#"{"protocol":"flybus","major":1,"minor":0,"id":"bus-3","replyTo":null,"kind":"notice","op":"connection.closing","body":{"reason":"shutdown"},"attachments":[]}"#,
    r#"{"protocol":"flybus","major":1,"minor":0,"id":"msg-2","replyTo":null,"kind":"command","op":"rpc.call","body":{"service":"env","method":"advance","params":{"k":"3"}},"attachments":[]}"#,
];

fn envelopes() -> Vec<Envelope> {
    ENVELOPES
        .iter()
        .map(|text| Envelope::parse(text.as_bytes()).expect("a corpus envelope reads"))
        .collect()
}

/// Each envelope framed alone, and all of them in one stream.
fn corpus(envelopes: &[Envelope]) -> Corpus {
    let mut corpus = Corpus::new();
    let mut all = Vec::new();
    for (i, e) in envelopes.iter().enumerate() {
        let mut one = Vec::new();
        encode(&e.to_bytes(), &mut one);
        all.extend_from_slice(&one);
        corpus.add(format!("frame-{i}"), one);
    }
    corpus.add("stream", all);
    corpus
}

/// The frames of `bytes` fed in chunks of `cut` bytes, and whether the decoder refused.
fn frames(bytes: &[u8], cut: usize) -> (Vec<Vec<u8>>, bool) {
    let mut decoder = FrameDecoder::new();
    let mut out = Vec::new();
    for chunk in bytes.chunks(cut) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let Ok((used, frame)) = decoder.feed(rest) else {
                return (out, true);
            };
            assert!(
                used > 0 && used <= rest.len(),
                "fed {} bytes, used {used}",
                rest.len()
            );
            assert!(decoder.buffered_capacity() <= MAX_ENVELOPE_BYTES);
            if let Some(frame) = frame {
                assert!(!frame.is_empty() && frame.len() <= MAX_ENVELOPE_BYTES);
                assert!(decoder.at_boundary(), "a frame completed mid-frame");
                out.push(frame);
            }
            rest = &rest[used..];
        }
    }
    (out, false)
}

fn check(bytes: &[u8]) {
    let whole = frames(bytes, bytes.len().max(1));
    let cut = 1 + bytes.len() % 13;
    assert_eq!(
        frames(bytes, cut),
        whole,
        "splitting at {cut} bytes changed the frames"
    );
    for frame in &whole.0 {
        let Ok(envelope) = Envelope::parse(frame) else {
            continue;
        };
        let again = envelope.to_bytes();
        assert_eq!(again.len(), envelope.encoded_len());
        assert_eq!(Envelope::parse(&again).as_ref(), Ok(&envelope));
    }
}

#[test]
fn the_frame_decoder_survives_mutation() {
    let envelopes = envelopes();
    let corpus = corpus(&envelopes);
    // The unmutated stream splits back into exactly its envelopes.
    let stream = &corpus.samples().last().unwrap().bytes;
    let (read, refused) = frames(stream, 5);
    assert!(!refused);
    let read: Vec<Envelope> = read.iter().map(|f| Envelope::parse(f).unwrap()).collect();
    assert_eq!(read, envelopes);

    let report = Campaign::new("frame", &corpus)
        .regressions(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/fuzz/frame"
        ))
        .run(Budget::from_env_or(10_000), check);
    assert_eq!(report.corpus, corpus.len());
}
