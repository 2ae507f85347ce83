//! Checkpoint generations: durable commits, rotation, sweeping, verification, and the bounded
//! writer under a stalled and a failing disk.

use std::sync::mpsc;

use flysim_store::StoreError;
use flysim_store::generations::{
    CheckpointWriter, Generation, GenerationSink, GenerationStore, KEEP,
};
use flysim_types::Id;
use flysim_types::checkpoint::{Payload, encode};

fn envelope(boundary: u64) -> Vec<u8> {
    let manifest = serde_json::json!({"checkpointId": format!("ckpt-{boundary}")});
    encode(
        manifest.as_object().unwrap(),
        &[Payload {
            name: Id::parse("world").unwrap(),
            bytes: boundary.to_le_bytes().to_vec(),
        }],
    )
    .unwrap()
}

fn ckpt(boundary: u64) -> Id {
    Id::parse(&format!("ckpt-{boundary}")).unwrap()
}

#[test]
fn commits_rotate_and_every_named_generation_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let store = GenerationStore::of_run(tmp.path());
    assert!(store.list().unwrap().generations.is_empty());
    for k in 1..=5 {
        let g = store
            .commit(k * 10, &ckpt(k * 10), &envelope(k * 10))
            .unwrap();
        assert_eq!(g.generation.get(), k);
    }
    let list = store.list().unwrap();
    assert_eq!(list.high_water.get(), 5);
    let kept: Vec<u64> = list
        .generations
        .iter()
        .map(|g| g.generation.get())
        .collect();
    assert_eq!(kept, (6 - KEEP as u64..=5).collect::<Vec<_>>());
    // Files no longer named are gone; every named one verifies.
    let mut files: Vec<String> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), KEEP + 1, "{files:?}");
    for g in &list.generations {
        let (_, env) = store.verify(g).unwrap();
        assert_eq!(
            env.payload("world").unwrap().bytes,
            g.boundary.get().to_le_bytes()
        );
    }
}

#[test]
fn leftovers_of_an_interrupted_commit_are_swept_and_never_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = GenerationStore::of_run(tmp.path());
    store.commit(10, &ckpt(10), &envelope(10)).unwrap();
    // A kill between the generation's rename and the manifest's: a file nobody named, and a
    // half-written temporary.
    std::fs::write(store.dir().join("gen-00000002.flysess"), envelope(20)).unwrap();
    std::fs::write(
        store.dir().join(".gen-00000003.flysess.tmp"),
        b"FLYSESS1 half",
    )
    .unwrap();
    assert_eq!(store.list().unwrap().generations.len(), 1);
    assert_eq!(store.sweep().unwrap(), 2);
    // The next commit does not reuse a number the manifest may have seen.
    let g = store.commit(20, &ckpt(20), &envelope(20)).unwrap();
    assert_eq!(g.generation.get(), 2);
    store.verify(&g).unwrap();
}

#[test]
fn a_replaced_file_is_refused_against_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let store = GenerationStore::of_run(tmp.path());
    let first = store.commit(10, &ckpt(10), &envelope(10)).unwrap();
    let second = store.commit(20, &ckpt(20), &envelope(20)).unwrap();
    std::fs::copy(
        store.dir().join(&first.file),
        store.dir().join(&second.file),
    )
    .unwrap();
    let e = store.verify(&second).unwrap_err();
    assert_eq!(e.code_str(), "FS0405", "{e}");
    // A flipped byte is the envelope's own refusal, naming the region.
    let mut bytes = envelope(10);
    let last = bytes.len() - 60;
    bytes[last] ^= 1;
    std::fs::write(store.dir().join(&first.file), &bytes).unwrap();
    assert!(
        store
            .verify(&first)
            .unwrap_err()
            .code_str()
            .starts_with("FS044")
    );
}

/// A disk that commits only when the test lets it, and can fail.
struct Gated {
    go: mpsc::Receiver<bool>,
    store: GenerationStore,
}

impl GenerationSink for Gated {
    fn commit(&mut self, boundary: u64, id: &Id, bytes: &[u8]) -> Result<Generation, StoreError> {
        match self.go.recv() {
            Ok(true) => self.store.commit(boundary, id, bytes),
            _ => Err(StoreError::NoCheckpoint {
                path: self.store.dir().to_owned(),
                reason: " (the disk said no)".into(),
            }),
        }
    }
}

/// A writer over a gated disk in `dir`: the sender opens the gate once per commit (`true`) or
/// makes that commit fail (`false`).
fn gated_writer(dir: &std::path::Path) -> (CheckpointWriter, mpsc::Sender<bool>, GenerationStore) {
    let (go, gate) = mpsc::channel();
    let store = GenerationStore::of_run(dir);
    let sink = Gated {
        go: gate,
        store: store.clone(),
    };
    (CheckpointWriter::start(sink, 2).unwrap(), go, store)
}

#[test]
fn a_stalled_writer_keeps_memory_bounded_and_reports_honestly() {
    let tmp = tempfile::tempdir().unwrap();
    let (writer, go, store) = gated_writer(tmp.path());
    let big = |k: u64| {
        let mut e = envelope(k);
        e.resize(1 << 20, 0);
        e
    };
    for k in 1..=50 {
        writer.submit(k, ckpt(k), big(k));
    }
    // Wait until the writer holds the first capture (blocked on the disk).
    while !writer.status().writing {
        std::thread::yield_now();
    }
    let stalled = writer.status();
    assert_eq!(stalled.captured, 50);
    assert!(stalled.queued <= 2, "{stalled:?}");
    assert!(stalled.queued_bytes <= 2 << 20, "{stalled:?}");
    assert_eq!(stalled.committed, 0);
    assert_eq!(
        stalled.durable, None,
        "nothing is durable while the disk stalls"
    );
    assert_eq!(stalled.superseded + stalled.queued + 1, 50, "{stalled:?}");
    // The disk comes back: what was waiting is written, the newest capture last.
    for _ in 0..3 {
        go.send(true).unwrap();
    }
    let done = writer.finish();
    assert_eq!(done.committed, 1 + stalled.queued);
    assert_eq!(done.durable.as_ref().unwrap().boundary.get(), 50);
    assert_eq!(store.list().unwrap().newest().unwrap().boundary.get(), 50);
}

#[test]
fn a_failing_disk_is_reported_and_never_counted_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let (writer, go, store) = gated_writer(tmp.path());
    go.send(true).unwrap();
    writer.submit(10, ckpt(10), envelope(10));
    let first = writer.flush();
    assert_eq!(first.durable.as_ref().unwrap().boundary.get(), 10);
    go.send(false).unwrap();
    writer.submit(20, ckpt(20), envelope(20));
    let status = writer.finish();
    assert_eq!((status.committed, status.failed), (1, 1));
    // The durable mark stays at the last commit that reached the disk (FS0407 is how the CLI
    // reports the failure).
    assert_eq!(status.durable.unwrap().boundary.get(), 10);
    assert!(status.last_error.unwrap().contains("the disk said no"));
    assert_eq!(store.list().unwrap().newest().unwrap().boundary.get(), 10);
}
