//! The trace's appender: a thread that hashes rows into the run digest and writes them, so the
//! step's thread only hands each row over.
//!
//! A row costs the thread that commits it a lock and a push; the thread here is woken once
//! [`BATCH`] rows wait (one futex call per batch rather than per row) or when the writer asks
//! for the rows so far ([`Appender::drain`]: a manifest, a checkpoint, the run's end). Rows
//! were never durable before a sync: a batch waiting here is what a filled buffer was before.
//!
//! The store's own check stays whole: the run digest a manifest must name is computed here,
//! over exactly the bytes written, never taken from the caller.
//!
//! A write that fails (a full disk) leaves the trace as it was after the last write the file
//! took whole: the rows buffered since are dropped, and the file is cut back to that length,
//! so the trace [`Appender::held`] describes is the file's, and a failed run's manifest can say
//! exactly what the trace holds.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use flysim_types::trace::{RowText, RunDigester};

use crate::StoreError;

/// Rows that wait before the thread is woken (about 40 KiB of Game Boy rows).
const BATCH: usize = 32;
/// Rows that may wait at all: a caller that finds this many (a disk slower than the steps)
/// waits until the thread has taken them, as it would have waited on a full buffer's write.
const MAX_WAITING: usize = 8 * BATCH;
/// Bytes of written rows buffered before a system call.
const TRACE_BUFFER: usize = 64 * 1024;

/// What the thread writes to, and where a resumed trace is cut first.
pub(crate) struct Target {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    /// The length a resumed trace keeps, cut (durably) before anything else is written.
    pub(crate) cut_at: Option<u64>,
}

/// Rows handed over, and the thread that writes them.
pub(crate) struct Appender {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Rows handed over so far, counting those a resumed trace kept.
    rows: u64,
    path: PathBuf,
}

struct Shared {
    state: Mutex<State>,
    /// Rows are waiting, or a drain was asked for, or the writer is closing.
    work: Condvar,
    /// A drain was served, or the thread took the waiting rows.
    served: Condvar,
}

struct State {
    queue: Vec<RowText>,
    /// Drains asked for, counted; the thread has served the first `served` of them.
    asked: u64,
    served: u64,
    /// The last drain that must also `fsync`.
    sync_asked: u64,
    /// The run digest as of the last drain served.
    digester: RunDigester,
    /// The rows the file holds whole, as of the last drain served.
    held: RunDigester,
    /// The first failure; nothing is written after it.
    failed: Option<(&'static str, std::io::Error)>,
    closed: bool,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Appender {
    /// Starts the thread, continuing `digester` (the rows a resumed trace kept, or none).
    pub(crate) fn start(target: Target, digester: RunDigester) -> Result<Self, StoreError> {
        let rows = digester.rows();
        let path = target.path.clone();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Vec::with_capacity(BATCH),
                asked: 0,
                served: 0,
                sync_asked: 0,
                digester: digester.clone(),
                held: digester.clone(),
                failed: None,
                closed: false,
            }),
            work: Condvar::new(),
            served: Condvar::new(),
        });
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("flysim-trace".into())
            .spawn(move || Writer::new(target, digester).serve(&serving))
            .map_err(|e| StoreError::write("start the writer of", &path, e))?;
        Ok(Self {
            shared,
            thread: Some(thread),
            rows,
            path,
        })
    }

    /// Rows handed over so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Hands one row over. Fails with the first earlier failure of the thread.
    pub(crate) fn push(&mut self, text: RowText) -> Result<(), StoreError> {
        let mut state = lock(&self.shared);
        if let Some((action, e)) = &state.failed {
            return Err(again(action, e, &self.path));
        }
        state.queue.push(text);
        self.rows += 1;
        if state.queue.len() < BATCH {
            return Ok(());
        }
        self.shared.work.notify_one();
        while state.queue.len() >= MAX_WAITING {
            state = self
                .shared
                .served
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        Ok(())
    }

    /// Waits until every row handed over is hashed and written to the file (and `fsync`ed, with
    /// `sync`); returns the run digest of those rows (each row handed over is hashed, written
    /// or not) and the thread's first failure, if any.
    pub(crate) fn drain(&self, sync: bool) -> (RunDigester, Result<(), StoreError>) {
        let mut state = lock(&self.shared);
        state.asked += 1;
        let ticket = state.asked;
        if sync {
            state.sync_asked = ticket;
        }
        self.shared.work.notify_one();
        while state.served < ticket {
            state = self
                .shared
                .served
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        let result = match &state.failed {
            Some((action, e)) => Err(again(action, e, &self.path)),
            None => Ok(()),
        };
        (state.digester.clone(), result)
    }

    /// The rows the file holds whole, after every row handed over was written or refused: all
    /// of them, unless a write failed; then those written before the failure.
    pub(crate) fn held(&self) -> RunDigester {
        let _ = self.drain(false);
        lock(&self.shared).held.clone()
    }
}

impl Drop for Appender {
    /// Writes what is waiting (to the file, not durably: as a buffer's drop did) and ends the
    /// thread.
    fn drop(&mut self) {
        lock(&self.shared).closed = true;
        self.shared.work.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A failure reported again (an `io::Error` is not `Clone`).
fn again(action: &'static str, e: &std::io::Error, path: &std::path::Path) -> StoreError {
    StoreError::write(action, path, std::io::Error::new(e.kind(), e.to_string()))
}

/// The thread's side: the file, the digest, the cut still to make.
struct Writer {
    /// The trace; gone after a failure (with the rows it buffered).
    trace: Option<BufWriter<File>>,
    cut_at: Option<u64>,
    digester: RunDigester,
    /// The rows the file holds whole (as of the last flush that succeeded), and their length.
    held: RunDigester,
    held_len: u64,
    /// The length the file has once the rows written since that flush are flushed too.
    written_len: u64,
    /// A failure not yet reported to the shared state (nothing is written after a failure).
    failed: Option<(&'static str, std::io::Error)>,
}

impl Writer {
    fn new(target: Target, digester: RunDigester) -> Self {
        // A fresh trace is empty; a resumed one holds its kept rows once it is cut.
        let len = target.cut_at.unwrap_or(0);
        Self {
            trace: Some(BufWriter::with_capacity(TRACE_BUFFER, target.file)),
            cut_at: target.cut_at,
            held: digester.clone(),
            digester,
            held_len: len,
            written_len: len,
            failed: None,
        }
    }

    /// Records the first failure, drops the rows buffered since the last flush and cuts the
    /// file back to the rows it held whole then (best effort: a file that cannot be cut keeps
    /// a torn tail, which a resume cuts off).
    fn fail(&mut self, failure: (&'static str, std::io::Error)) {
        self.failed = Some(failure);
        if let Some(trace) = self.trace.take() {
            let (file, _dropped) = trace.into_parts();
            let _ = file.set_len(self.held_len).and_then(|()| file.sync_all());
        }
    }

    fn serve(mut self, shared: &Shared) {
        let mut rows = Vec::with_capacity(BATCH);
        loop {
            let mut state = lock(shared);
            while state.queue.len() < BATCH && state.asked == state.served && !state.closed {
                state = shared
                    .work
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            std::mem::swap(&mut rows, &mut state.queue);
            let asked = state.asked;
            let drain = asked > state.served || state.closed;
            let sync = state.sync_asked > state.served;
            drop(state);
            // A caller held back by a full queue may go on.
            shared.served.notify_all();

            for text in rows.drain(..) {
                self.write(&text);
            }
            if drain {
                self.flush(sync);
            }

            let mut state = lock(shared);
            if state.failed.is_none() {
                state.failed = self.failed.take();
            }
            state.digester = self.digester.clone();
            state.held = self.held.clone();
            let done = state.served < asked;
            state.served = asked;
            let end = state.closed && state.queue.is_empty();
            drop(state);
            if done {
                shared.served.notify_all();
            }
            if end {
                return;
            }
        }
    }

    /// Hashes and writes one row (after the cut, if one is due); after a failure, only hashes.
    fn write(&mut self, text: &RowText) {
        self.digester.push_bytes(&text.behaviour);
        self.cut();
        let Some(trace) = self.trace.as_mut() else {
            return;
        };
        let line = text.line();
        match trace.write_all(&line) {
            Ok(()) => self.written_len += line.len() as u64,
            Err(e) => self.fail(("append to", e)),
        }
    }

    /// Writes the buffer out (and `fsync`s, with `sync`), after the cut if one is due.
    fn flush(&mut self, sync: bool) {
        self.cut();
        let Some(trace) = self.trace.as_mut() else {
            return;
        };
        let result = trace.flush().map_err(|e| ("flush", e)).and_then(|()| {
            if sync {
                trace.get_ref().sync_all().map_err(|e| ("sync", e))
            } else {
                Ok(())
            }
        });
        match result {
            Ok(()) => {
                self.held = self.digester.clone();
                self.held_len = self.written_len;
            }
            Err(failure) => self.fail(failure),
        }
    }

    /// Cuts a resumed trace after its kept rows, durably, once.
    fn cut(&mut self) {
        let Some(trace) = self.trace.as_ref() else {
            return;
        };
        if let Some(len) = self.cut_at.take() {
            let file = trace.get_ref();
            let result = file
                .set_len(len)
                .map_err(|e| ("truncate", e))
                .and_then(|()| file.sync_all().map_err(|e| ("sync", e)));
            if let Err(failure) = result {
                self.fail(failure);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flysim_types::Digest;

    fn row(i: usize) -> RowText {
        RowText {
            behaviour: format!(r#"{{"boundary":"{i}"}}"#).into_bytes(),
            operational: format!(r#"{{"step":"{i}"}}"#),
        }
    }

    fn digest_of(rows: usize) -> Digest {
        let mut d = RunDigester::new(&Digest::from_bytes([7; 32]));
        (0..rows).for_each(|i| d.push_bytes(&row(i).behaviour));
        d.digest()
    }

    fn start(file: File, path: PathBuf) -> Appender {
        let target = Target {
            path,
            file,
            cut_at: None,
        };
        Appender::start(target, RunDigester::new(&Digest::from_bytes([7; 32]))).unwrap()
    }

    #[test]
    fn rows_handed_over_are_hashed_and_written_in_order_even_without_a_sync() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("trace.ndjson");
        let mut appender = start(File::create(&path).unwrap(), path.clone());
        // Fewer than a batch, then a drain: all of them, without waiting for a batch.
        (0..5).for_each(|i| appender.push(row(i)).unwrap());
        let (digester, written) = appender.drain(false);
        written.unwrap();
        assert_eq!(digester.digest(), digest_of(5));
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 5);
        // More rows than may wait (the caller is held back, never refused), then the writer
        // goes away: nothing is lost.
        let total = 5 + 2 * MAX_WAITING + 7;
        (5..total).for_each(|i| appender.push(row(i)).unwrap());
        assert_eq!(appender.rows(), total as u64);
        drop(appender);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), total);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(
                *line,
                format!(r#"{{"behaviour":{{"boundary":"{i}"}},"operational":{{"step":"{i}"}}}}"#)
            );
        }
    }

    #[test]
    fn a_failed_write_is_reported_by_the_next_drain_and_every_later_append() {
        let Ok(full) = File::options().write(true).open("/dev/full") else {
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!("skipped: this machine has no /dev/full to fail writes with");
            }
            return;
        };
        let mut appender = start(full, PathBuf::from("/dev/full"));
        (0..BATCH + 1).for_each(|i| appender.push(row(i)).unwrap());
        let (digester, written) = appender.drain(true);
        let e = written.unwrap_err();
        assert!(e.to_string().contains("/dev/full"), "{e}");
        assert_eq!(miette::Diagnostic::code(&e).unwrap().to_string(), "FS0401");
        // Every row handed over still counts in the digest (a manifest is refused anyway).
        assert_eq!(digester.digest(), digest_of(BATCH + 1));
        assert!(
            appender.push(row(BATCH + 1)).is_err(),
            "a later append fails too"
        );
        assert!(appender.drain(true).1.is_err(), "and so does a later sync");
        // The file took no row whole: the trace it holds is the empty one.
        let held = appender.held();
        assert_eq!(held.rows(), 0);
        assert_eq!(held.digest(), digest_of(0));
    }
}
