//! The hand-off of committed rows to the digest thread ([`crate::digests`]) and back: a row is
//! finished (its view and late digests computed into the recorded row, validated, its canonical
//! text written) either on that thread beside the next step or here when it is recorded, and
//! then added to the run digest, in order, whichever side hashed it.
//!
//! It knows nothing of how a row is built (`row`) or when steps run (`running`).

use std::sync::{Arc, Mutex, PoisonError};

use flysim_types::Payload;
use flysim_types::trace::{RowText, RunDigester, TransitionTrace};

use super::Coordinator;
use super::pending::{PendingRow, unfinished};
use crate::digests::FrameDigester;
use crate::error::SessionError;

/// Committed rows the coordinator may hold while the digest thread finishes them: beyond this it
/// waits for the oldest. On a virtual machine that thread's look at its queue is now and then
/// milliseconds late (measured: up to 4.4 ms); 64 Game Boy steps are about 9 ms. A held row
/// keeps no frame alive (its frames' jobs do, until hashed).
pub(super) const MAX_HELD: usize = 64;

/// What the digest thread finishes a row into: the row with its digests and its text, or why
/// it could not.
type FinishedRow = Result<(TransitionTrace, RowText), SessionError>;

/// The run digest as the digest thread carries it forward: the digest state after the first
/// `rows` rows of the run. The thread adds a row it finished when that row is the next one
/// (every row before it already in), and hands the state back with the row; the coordinator
/// adopts it when it records that row, so the row's hashing runs beside the next step. A row
/// the thread could not add (an earlier one was still out) is added by the coordinator, which
/// then puts its own state here. Either way the state only ever moves forward through the same
/// rows in the same order, so the run digest is the same bytes whichever side hashed a row.
struct CarriedRunDigest {
    digester: RunDigester,
    rows: u64,
}

impl CarriedRunDigest {
    /// The run digest before its first row.
    fn new(digester: RunDigester) -> Self {
        Self { digester, rows: 0 }
    }

    /// On the digest thread: adds row `seq` (its canonical behaviour text) if it is the next
    /// one, and returns the state reached.
    fn add_if_next(&mut self, seq: u64, behaviour: &[u8]) -> Option<RunDigester> {
        (self.rows == seq).then(|| {
            self.digester.push_bytes(behaviour);
            self.rows += 1;
            self.digester.clone()
        })
    }
}

/// On the coordinator, recording the row that makes `rows` rows: adopts the state the digest
/// thread `carried` to, or adds the row itself and hands its state to the thread.
fn add_to_run_digest(
    digester: &mut RunDigester,
    rows: u64,
    carried_digest: &Mutex<CarriedRunDigest>,
    carried: Option<RunDigester>,
    behaviour: &[u8],
) {
    if let Some(carried) = carried {
        *digester = carried;
    } else {
        digester.push_bytes(behaviour);
        hand_over_run_digest(digester, rows, carried_digest);
    }
}

/// Puts the run digest after `rows` rows where the digest thread carries it forward.
fn hand_over_run_digest(
    digester: &RunDigester,
    rows: u64,
    carried_digest: &Mutex<CarriedRunDigest>,
) {
    let mut carried = carried_digest
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    carried.digester = digester.clone();
    carried.rows = rows;
}

/// The run's committed rows: how many there are and their run digest, with the digest thread
/// that hashes their frames and may finish them, and the run digest it carries forward.
pub(super) struct RunRecord {
    /// Rows committed so far.
    pub(super) rows: u64,
    /// The run digest of those rows.
    pub(super) digester: RunDigester,
    /// The run digest as the digest thread carries it forward.
    carried: Arc<Mutex<CarriedRunDigest>>,
    /// Hashes in-memory frames for the trace, off the critical path.
    pub(super) frame_digests: FrameDigester,
}

impl RunRecord {
    /// No rows yet: the run digest `digester` starts from.
    pub(super) fn new(digester: RunDigester) -> Self {
        Self {
            rows: 0,
            carried: Arc::new(Mutex::new(CarriedRunDigest::new(digester.clone()))),
            digester,
            frame_digests: FrameDigester::default(),
        }
    }
}

/// A row held while the next step runs (`Coordinator::run`).
pub(super) enum HeldRow {
    /// Its digests are awaited and it is finished here, when it is recorded.
    FinishedHere(Box<PendingRow>),
    /// The digest thread finishes it (digests computed, validated, text written) right after
    /// hashing its frames, beside the next step; recording then only adds it to the run digest.
    FinishedOnDigestThread {
        boundary: u64,
        finished: tokio::sync::oneshot::Receiver<(FinishedRow, Option<RunDigester>)>,
    },
}

impl HeldRow {
    /// Whether recording it now would not wait on the digest thread (a row finished here
    /// awaits its digests as it always has).
    pub(super) fn ready(&self) -> bool {
        match self {
            Self::FinishedHere(_) => true,
            Self::FinishedOnDigestThread { finished, .. } => !finished.is_empty(),
        }
    }
}

/// A row with every digest in (its view digests as the digest thread gave them), validated,
/// its text written.
fn finish(pending: PendingRow) -> FinishedRow {
    let boundary = pending.boundary();
    let row = pending.finish()?;
    let invalid = |e: flysim_types::ContractError| unfinished(boundary, e.to_string());
    row.behaviour.validate().map_err(invalid)?;
    let text = row.text().map_err(invalid)?;
    Ok((row, text))
}

impl Coordinator {
    /// Completes a row with its digests, then commits it.
    pub(super) async fn record(
        &mut self,
        mut pending: PendingRow,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        pending.settle().await;
        let finished = finish(pending);
        self.commit_row(finished, None)
    }

    /// Holds a row while the next step runs: when the digest thread is otherwise idle and every
    /// frame of the row is already queued there, it finishes the row right after them.
    /// `seq` is the row's place in the run (the rows committed and held before it).
    pub(super) fn hold(&mut self, pending: PendingRow, seq: u64) -> HeldRow {
        if !self.run.frame_digests.polling() || !pending.queued() {
            return HeldRow::FinishedHere(Box::new(pending));
        }
        let boundary = pending.boundary();
        let (tx, finished) = tokio::sync::oneshot::channel();
        let carried_digest = Arc::clone(&self.run.carried);
        self.run.frame_digests.then(move || {
            // Queued behind the row's frames: their digests are in.
            let finished = finish(pending);
            let carried = finished.as_ref().ok().and_then(|(_, text)| {
                let mut carried_digest = carried_digest
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                carried_digest.add_if_next(seq, &text.behaviour)
            });
            let _ = tx.send((finished, carried));
        });
        HeldRow::FinishedOnDigestThread { boundary, finished }
    }

    /// Records a held row.
    pub(super) async fn record_held(
        &mut self,
        held: HeldRow,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        let (boundary, finished) = match held {
            HeldRow::FinishedHere(pending) => return self.record(*pending).await,
            HeldRow::FinishedOnDigestThread { boundary, finished } => (boundary, finished),
        };
        let (finished, carried) = finished.await.unwrap_or_else(|_| {
            let reason = "the digest thread ended before the row was finished";
            (Err(unfinished(boundary, reason.into())), None)
        });
        self.commit_row(finished, carried)
    }

    /// Adds a finished row to the run digest (`carried`: the state the digest thread reached by
    /// adding it, [`CarriedRunDigest`]); its canonical text, written once when it was finished,
    /// goes to whoever writes the trace.
    fn commit_row(
        &mut self,
        finished: FinishedRow,
        carried: Option<RunDigester>,
    ) -> Result<(TransitionTrace, RowText), SessionError> {
        let (row, text) = finished?;
        self.run.rows += 1;
        add_to_run_digest(
            &mut self.run.digester,
            self.run.rows,
            &self.run.carried,
            carried,
            &text.behaviour,
        );
        Ok((row, text))
    }

    /// Hands the digest thread the run digest as it stands ([`CarriedRunDigest`]), after rows
    /// were taken over from a checkpoint.
    pub(super) fn hand_over_run_digest(&self) {
        hand_over_run_digest(&self.run.digester, self.run.rows, &self.run.carried);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use flysim_types::Digest;
    use flysim_types::trace::RunDigester;

    use super::{CarriedRunDigest, add_to_run_digest, hand_over_run_digest};

    /// Rows finished on the digest thread in any order the run allows, mixed with rows the
    /// coordinator finishes itself: after every recorded row the run digest is the one of
    /// adding the rows one by one.
    #[test]
    fn the_run_digest_is_the_same_whichever_side_hashed_each_row() {
        let start = RunDigester::new(&Digest::from_bytes([7; 32]));
        let texts: Vec<Vec<u8>> = (0..60)
            .map(|i| format!("{{\"row\":{i}}}").into_bytes())
            .collect();
        let mut expected = Vec::new();
        let mut sequential = start.clone();
        for text in &texts {
            sequential.push_bytes(text);
            expected.push(sequential.digest());
        }
        for seed in 0..200_u64 {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            // A row the coordinator finishes itself, now and then, as a run may have.
            let beside: Vec<bool> = texts.iter().map(|_| next() % 4 != 0).collect();
            let carried_digest = Mutex::new(CarriedRunDigest::new(start.clone()));
            let (mut digester, mut rows) = (start.clone(), 0_u64);
            let mut carried: BTreeMap<usize, Option<RunDigester>> = BTreeMap::new();
            let (mut thread, mut main) = (0, 0);
            while main < texts.len() {
                while thread < texts.len() && !beside[thread] {
                    thread += 1;
                }
                // The thread finishes a row before the coordinator records it; otherwise the
                // two go on in any order.
                let main_may = !beside[main] || carried.contains_key(&main);
                if thread < texts.len() && (!main_may || next() % 2 == 0) {
                    let state = carried_digest
                        .lock()
                        .unwrap()
                        .add_if_next(thread as u64, &texts[thread]);
                    carried.insert(thread, state);
                    thread += 1;
                } else {
                    rows += 1;
                    let state = carried.remove(&main).flatten();
                    add_to_run_digest(&mut digester, rows, &carried_digest, state, &texts[main]);
                    assert_eq!(digester.digest(), expected[main], "seed {seed}, row {main}");
                    main += 1;
                }
            }
        }
        // Taking rows over from elsewhere resets what the thread carries forward.
        let carried_digest = Mutex::new(CarriedRunDigest::new(start.clone()));
        let mut digester = start.clone();
        for text in &texts[..10] {
            digester.push_bytes(text);
        }
        hand_over_run_digest(&digester, 10, &carried_digest);
        assert!(
            carried_digest
                .lock()
                .unwrap()
                .add_if_next(11, &texts[11])
                .is_none()
        );
        let carried = carried_digest
            .lock()
            .unwrap()
            .add_if_next(10, &texts[10])
            .unwrap();
        assert_eq!(carried.digest(), expected[10]);
    }
}
