//! The checklist's "old epoch audio arrives after reset" row, until audio exists: no world of
//! this build declares an audio stream (the session's counter arena included), and the session's
//! observation check refuses an audio chunk of any stream the current descriptor does not
//! declare, so audio of an old descriptor or epoch can never be taken as current. There is no
//! playback and no episode reset yet; when a backend emits audio this row needs a real test of
//! discontinuity handling across a reset.

use flysim_component::EnvironmentBackend;
use flysim_types::digest::sha256;
use flysim_types::workers::EnvironmentInitializeResult;
use serde_json::Value;

use crate::synthetic;

fn fixture() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/payloads/valid/environment-initialize-result.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn no_world_declares_audio_and_a_chunk_of_an_undeclared_stream_is_refused() {
    let plan = synthetic();
    let arena = flysim_arena::CounterArena::new(&plan.environment, sha256(b"cfg")).unwrap();
    assert!(arena.descriptor().audio.is_empty());
    // A descriptor that declares stream `apu`, and an observation whose chunk is of `apu`: valid.
    let value = fixture();
    let result: EnvironmentInitializeResult = serde_json::from_value(value.clone()).unwrap();
    result
        .observation
        .validate_against(&result.descriptor)
        .unwrap();
    // The same chunk against a descriptor without audio (this build's worlds), or of a stream
    // the descriptor does not declare (an old stream), is refused.
    let mut silent = result.descriptor.clone();
    silent.audio.clear();
    let e = result.observation.validate_against(&silent).unwrap_err();
    assert!(
        e.to_string()
            .contains("audio stream `apu` is not declared by the descriptor"),
        "{e}"
    );
    let mut old = value;
    old["observation"]["audio"][0]["streamId"] = "apu-old".into();
    let old: EnvironmentInitializeResult = serde_json::from_value(old).unwrap();
    let e = old
        .observation
        .validate_against(&old.descriptor)
        .unwrap_err();
    assert!(e.to_string().contains("`apu-old` is not declared"), "{e}");
}
