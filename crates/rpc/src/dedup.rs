//! Deduplication of session RPC on the worker side (contracts §4 "Deduplication").
//!
//! Every request is checked for identity first, before any phase check or artifact access:
//!
//! - step operations (`Agent.Prepare`, `Agent.Commit`, `Environment.Advance`) are keyed by the
//!   operation key `(sessionId, epoch, step, method, workerId)`; records of the newest and the
//!   previous step of the current epoch are kept; a request of another epoch runs (the worker
//!   tells a restore's new epoch from an old one), and the window moves to that epoch only once
//!   one of its operations completes, so a stray retry of an old epoch, refused without
//!   mutation, costs the current epoch none of its replies;
//! - lifecycle operations (every other scoped or state-changing method) are keyed by caller and
//!   request id and retained until that caller's `Worker.Acknowledge`; at most 16 may be
//!   unacknowledged (then `BUSY`);
//! - queries (`Worker.Hello`, `Worker.Status`, `Worker.Acknowledge`, `Worker.Shutdown`) keep
//!   their last 16 replies, keyed by caller and request id.
//!
//! Request ids increase per caller (contracts §4), so two callers may use the same serial: a
//! request-id key always includes the caller (its bus client id), and one caller's record never
//! answers, or conflicts with, another caller's request.
//!
//! Same key, same request id, same canonical body: the cached reply (or `IN_PROGRESS` while the
//! original runs). Same key with another id or body: `CONFLICT`. A request naming a step older
//! than the kept window: `RESULT_EXPIRED` if its serial was already seen from that caller (an
//! expired retry), `STALE_STEP` if it is a fresh serial. Cached replies hold their artifacts
//! (explicit holds), so a replay can still attach them after the first caller consumed its copy.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_types::digest::{body_digest, body_digest_of_canonical, operation_key_digest};
use flysim_types::payload::{SessionRpcRequest, to_canonical};
use flysim_types::workers::{DomainErrorCode, Method, Params};
use flysim_types::{ContractError, Digest, DomainRequestId, Id, Scope, U64};

use crate::MAX_UNACKNOWLEDGED;
use crate::outcome::Outcome;

/// Replies of queries kept for replay.
const QUERY_CACHE: usize = 16;

/// The identity of one logical step operation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OperationKey {
    /// The session.
    pub session_id: Id,
    /// The epoch.
    pub epoch: Id,
    /// The step the operation departs from.
    pub step: U64,
    /// The method.
    pub method: Method,
    /// The worker that executes it.
    pub worker_id: Id,
}

impl OperationKey {
    /// The key of `method` at `scope` on `worker_id`.
    #[must_use]
    pub fn new(method: Method, scope: &Scope, worker_id: &Id) -> Self {
        Self {
            session_id: scope.session_id.clone(),
            epoch: scope.epoch.clone(),
            step: scope.step,
            method,
            worker_id: worker_id.clone(),
        }
    }

    /// The operation-key digest of contracts §2.4.
    ///
    /// # Errors
    ///
    /// Never in practice (canonicalisation of ids and a U64 cannot fail).
    pub fn digest(&self) -> Result<Digest, ContractError> {
        let scope = Scope {
            session_id: self.session_id.clone(),
            epoch: self.epoch.clone(),
            step: self.step,
        };
        operation_key_digest(self.method.as_str(), &scope, &self.worker_id)
    }
}

/// How a method's replies are deduplicated and retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MethodClass {
    /// At most one per operation key; kept for the current and previous step.
    Step,
    /// Keyed by request id; kept until acknowledged.
    Lifecycle,
    /// Keyed by request id; the last 16 kept.
    Query,
}

impl MethodClass {
    /// The class's place in a caller's watermarks (an exhaustive match: a new class must
    /// choose one, and the watermark array grows with it).
    fn mark(self) -> usize {
        match self {
            Self::Step => 0,
            Self::Lifecycle => 1,
            Self::Query => 2,
        }
    }
}

/// The class of a method name.
#[must_use]
pub fn method_class(method: Method) -> MethodClass {
    if method.is_step() {
        MethodClass::Step
    } else if method.is_worker_query() {
        MethodClass::Query
    } else {
        MethodClass::Lifecycle
    }
}

/// A request's body as deduplication compares it (contracts §2.4: same key, same request id,
/// same canonical body).
#[derive(Debug, Clone)]
pub enum Body {
    /// Its body digest, already computed (a bus request's JSON params).
    Digest(Digest),
    /// Params built in this process (already checked for bus identities) under their method
    /// and scope: the digest is written from their canonical form only if a second request
    /// meets the same key (then under the table's lock, on that rare path), which on the happy
    /// path never happens, and a retry sharing the same value is the same body without hashing.
    Deferred {
        /// The method.
        method: Method,
        /// The scope.
        scope: Option<Scope>,
        /// The params.
        params: Arc<Params>,
    },
}

impl Body {
    /// The body digest; `None` for params canonical JSON cannot hold (no body equals them).
    fn digest(&self) -> Option<Digest> {
        match self {
            Self::Digest(digest) => Some(*digest),
            Self::Deferred {
                method,
                scope,
                params,
            } => to_canonical(&**params)
                .ok()
                .map(|text| body_digest_of_canonical(method.as_str(), scope.as_ref(), &text)),
        }
    }

    /// Whether two requests carry the same body.
    fn same(&self, other: &Self) -> bool {
        if let (
            Self::Deferred {
                method: m1,
                scope: s1,
                params: p1,
            },
            Self::Deferred {
                method: m2,
                scope: s2,
                params: p2,
            },
        ) = (self, other)
            && Arc::ptr_eq(p1, p2)
            && m1 == m2
            && s1 == s2
        {
            return true;
        }
        match (self.digest(), other.digest()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

/// A terminal reply as cached: the outcome and the artifacts it attaches (holds).
#[derive(Debug)]
pub struct Cached {
    /// The success (its result typed, whichever path asked) or failure.
    pub outcome: Outcome,
    /// The reply's attachments, kept alive by explicit holds for replays.
    pub artifacts: Vec<(Id, Artifact)>,
}

/// What to do with a request.
#[derive(Debug)]
pub enum Admission {
    /// Run it; hand the ticket back with [`DedupTable::complete`] or [`DedupTable::abandon`].
    Execute(Ticket),
    /// Answer with the cached reply (fresh delivery ownership comes with the new bus reply).
    Replay(Arc<Cached>),
    /// Answer with this domain error (mutation `none`), without executing.
    Refuse(DomainErrorCode, String),
}

/// The record slot an admitted request will complete.
#[derive(Debug)]
pub struct Ticket {
    slot: Slot,
}

#[derive(Debug, Clone)]
enum Slot {
    Step(OperationKey),
    Lifecycle(CallerSerial),
    Query(CallerSerial),
}

/// A request-id key: the caller (bus client id) and its request serial.
type CallerSerial = (String, u64);

#[derive(Debug)]
enum State {
    Running,
    Done(Arc<Cached>),
}

#[derive(Debug)]
struct Record {
    request_id: DomainRequestId,
    body: Body,
    state: State,
}

/// The worker-side deduplication state.
#[derive(Debug)]
pub struct DedupTable {
    worker_id: Id,
    steps: StepRecords,
    /// The newest step admitted per (session, epoch); only the current epoch is kept.
    window: Option<((Id, Id), u64)>,
    lifecycle: BTreeMap<CallerSerial, Record>,
    queries: VecDeque<(CallerSerial, Record)>,
    /// The highest admitted request serial per caller, one per method class (at
    /// `MethodClass::mark`): a serial at or below it that has no record is an expired retry,
    /// never a fresh request.
    watermarks: BTreeMap<String, [Option<u64>; 3]>,
    /// Replies that left the window, kept until [`DedupTable::take_evicted`]: releasing their
    /// artifacts then rides on the write of the reply being answered.
    evicted: Vec<Arc<Cached>>,
}

impl DedupTable {
    /// An empty table for `worker_id`.
    #[must_use]
    pub fn new(worker_id: Id) -> Self {
        Self {
            worker_id,
            steps: StepRecords::default(),
            window: None,
            lifecycle: BTreeMap::new(),
            queries: VecDeque::new(),
            watermarks: BTreeMap::new(),
            evicted: Vec::new(),
        }
    }

    /// Replies that left the kept window since the last call; dropping them releases their
    /// artifacts.
    pub fn take_evicted(&mut self) -> Vec<Arc<Cached>> {
        std::mem::take(&mut self.evicted)
    }

    /// Decides what to do with `request` for `method` from `caller` (the bus client id).
    ///
    /// # Errors
    ///
    /// A [`ContractError`] if the params carry a bus identity (no body digest exists then).
    pub fn admit(
        &mut self,
        caller: &str,
        method: Method,
        request: &SessionRpcRequest,
    ) -> Result<Admission, ContractError> {
        let body = body_digest(method.as_str(), request.scope.as_ref(), &request.params)?;
        Ok(self.admit_body(
            caller,
            method,
            request.request_id,
            request.scope.as_ref(),
            Body::Digest(body),
        ))
    }

    /// [`DedupTable::admit`] for a request whose body is already in hand: its digest, or on the
    /// local lane its params ([`Body::Deferred`]).
    pub fn admit_body(
        &mut self,
        caller: &str,
        method: Method,
        request_id: DomainRequestId,
        scope: Option<&Scope>,
        body: Body,
    ) -> Admission {
        let serial = request_id.0;
        let class = method_class(method);
        let seen = self
            .watermarks
            .get(caller)
            .and_then(|marks| marks[class.mark()])
            .is_some_and(|w| serial <= w);
        let slot = match class {
            MethodClass::Step => {
                let Some(scope) = scope else {
                    return Admission::Refuse(
                        DomainErrorCode::InvalidArgument,
                        format!("{method} needs a scope"),
                    );
                };
                let key = OperationKey::new(method, scope, &self.worker_id);
                if let Some(record) = self.steps.get(&key) {
                    return identity(record, request_id, &body, "operation key");
                }
                let epoch = (scope.session_id.clone(), scope.epoch.clone());
                let step = scope.step.get();
                let stale = match &self.window {
                    Some((e, newest)) if *e == epoch => step.saturating_add(1) < *newest,
                    Some(_) => {
                        // Another epoch: the worker decides whether it is the new one (a
                        // restore) or an old one (a stray retry, refused without mutation).
                        // The kept window moves only once an operation of it completes
                        // (`DedupTable::complete`), so a refused stray costs the current
                        // epoch none of its replies.
                        self.steps.insert(key.clone(), running(request_id, body));
                        self.raise_watermark(caller, class, serial);
                        return Admission::Execute(Ticket {
                            slot: Slot::Step(key),
                        });
                    }
                    None => false,
                };
                if stale {
                    return if seen {
                        Admission::Refuse(
                            DomainErrorCode::ResultExpired,
                            format!("the reply of {} is no longer kept", request_id),
                        )
                    } else {
                        Admission::Refuse(
                            DomainErrorCode::StaleStep,
                            format!("step {step} is older than the kept window"),
                        )
                    };
                }
                let previous = self.window.as_ref().map(|(_, n)| *n);
                let newest = previous.map_or(step, |n| n.max(step));
                self.window = Some((epoch, newest));
                // Records fall out of the window only when it moves: every record admitted
                // since it last moved is for `newest - 1` or later (older ones are stale).
                if previous != Some(newest) {
                    let evicted = &mut self.evicted;
                    self.steps.retain(|k, record| {
                        let keep = k.step.get().saturating_add(1) >= newest;
                        if !keep && let State::Done(cached) = &record.state {
                            evicted.push(Arc::clone(cached));
                        }
                        keep
                    });
                }
                self.steps.insert(key.clone(), running(request_id, body));
                Slot::Step(key)
            }
            MethodClass::Lifecycle => {
                let key = (caller.to_owned(), serial);
                if let Some(record) = self.lifecycle.get(&key) {
                    return identity(record, request_id, &body, "request id");
                }
                if seen {
                    return Admission::Refuse(
                        DomainErrorCode::ResultExpired,
                        format!("the reply of {} was acknowledged or never kept", request_id),
                    );
                }
                if self.lifecycle.len() >= MAX_UNACKNOWLEDGED {
                    return Admission::Refuse(
                        DomainErrorCode::Busy,
                        format!("{MAX_UNACKNOWLEDGED} lifecycle replies await Worker.Acknowledge"),
                    );
                }
                self.lifecycle
                    .insert(key.clone(), running(request_id, body));
                Slot::Lifecycle(key)
            }
            MethodClass::Query => {
                let key = (caller.to_owned(), serial);
                if let Some((_, record)) = self.queries.iter().find(|(k, _)| *k == key) {
                    return identity(record, request_id, &body, "request id");
                }
                self.queries
                    .push_back((key.clone(), running(request_id, body)));
                while self.queries.len() > QUERY_CACHE {
                    self.queries.pop_front();
                }
                Slot::Query(key)
            }
        };
        self.raise_watermark(caller, class, serial);
        Admission::Execute(Ticket { slot })
    }

    /// Records that `caller` was admitted with `serial` for a method of `class`.
    fn raise_watermark(&mut self, caller: &str, class: MethodClass, serial: u64) {
        // Looked up before inserting: a caller's name is copied once, not on every request.
        let marks = match self.watermarks.get_mut(caller) {
            Some(marks) => marks,
            None => self.watermarks.entry(caller.to_owned()).or_default(),
        };
        let mark = &mut marks[class.mark()];
        *mark = Some(mark.map_or(serial, |m| m.max(serial)));
    }

    /// The kept window follows a completed step operation of another epoch: the worker ran
    /// it (or failed it after a mutation), so that epoch is now the worker's, and the previous
    /// epoch's records can never be replayed again.
    fn adopt_epoch(&mut self, key: &OperationKey) {
        let same = |k: &OperationKey| k.session_id == key.session_id && k.epoch == key.epoch;
        if let Some(((session, epoch), _)) = &self.window
            && *session == key.session_id
            && *epoch == key.epoch
        {
            return;
        }
        let evicted = &mut self.evicted;
        self.steps.retain(|k, record| {
            let keep = same(k);
            if !keep && let State::Done(cached) = &record.state {
                evicted.push(Arc::clone(cached));
            }
            keep
        });
        let newest = self.steps.0.iter().map(|(k, _)| k.step.get()).max();
        let newest = newest.map_or(key.step.get(), |n| n.max(key.step.get()));
        self.window = Some(((key.session_id.clone(), key.epoch.clone()), newest));
    }

    /// Records the terminal reply of an executed request; returns it for the first answer.
    pub fn complete(&mut self, ticket: Ticket, cached: Cached) -> Arc<Cached> {
        if let Slot::Step(key) = &ticket.slot {
            self.adopt_epoch(key);
        }
        let cached = Arc::new(cached);
        if let Some(record) = self.record_mut(&ticket.slot) {
            record.state = State::Done(Arc::clone(&cached));
        }
        cached
    }

    /// Replaces a completed reply (found by identity) with `replacement`: a reply that turned
    /// out not to be deliverable (a frame whose queued seal the router refused) is kept as the
    /// failure it is, so a retry gets that failure instead of the undeliverable reply. Returns
    /// whether the record was found.
    pub fn replace(&mut self, done: &Arc<Cached>, replacement: Cached) -> bool {
        let replacement = Arc::new(replacement);
        let records = self
            .steps
            .0
            .iter_mut()
            .map(|(_, r)| r)
            .chain(self.lifecycle.values_mut())
            .chain(self.queries.iter_mut().map(|(_, r)| r));
        for record in records {
            if matches!(&record.state, State::Done(c) if Arc::ptr_eq(c, done)) {
                record.state = State::Done(Arc::clone(&replacement));
                return true;
            }
        }
        false
    }

    /// Forgets an admitted request that was refused before any mutation (it never happened).
    pub fn abandon(&mut self, ticket: Ticket) {
        match ticket.slot {
            Slot::Step(key) => {
                self.steps.remove(&key);
            }
            Slot::Lifecycle(key) => {
                self.lifecycle.remove(&key);
            }
            Slot::Query(key) => self.queries.retain(|(k, _)| *k != key),
        }
    }

    /// Releases lifecycle replies `caller` acknowledges; returns the ids released now (unknown,
    /// running or already released ids, and other callers' requests, are left out).
    pub fn acknowledge(&mut self, caller: &str, ids: &[DomainRequestId]) -> Vec<DomainRequestId> {
        let mut released = Vec::new();
        for id in ids {
            let key = (caller.to_owned(), id.0);
            let done = self
                .lifecycle
                .get(&key)
                .is_some_and(|r| matches!(r.state, State::Done(_)));
            if done {
                self.lifecycle.remove(&key);
                released.push(*id);
            }
        }
        released
    }

    /// Lifecycle replies not yet acknowledged (running ones included).
    #[must_use]
    pub fn unacknowledged(&self) -> usize {
        self.lifecycle.len()
    }

    /// Step records kept (current and previous step).
    #[must_use]
    pub fn step_records(&self) -> usize {
        self.steps.len()
    }

    fn record_mut(&mut self, slot: &Slot) -> Option<&mut Record> {
        match slot {
            Slot::Step(key) => self.steps.get_mut(key),
            Slot::Lifecycle(key) => self.lifecycle.get_mut(key),
            Slot::Query(key) => self
                .queries
                .iter_mut()
                .find(|(k, _)| k == key)
                .map(|(_, r)| r),
        }
    }
}

/// The step records: the current and the previous step's of the kept epoch (a stray of another
/// epoch's until the worker decides), so a handful at most. Searched in place: for so few, a
/// scan of one vector costs less than a tree's nodes, and no order is ever read from it.
#[derive(Debug, Default)]
struct StepRecords(Vec<(OperationKey, Record)>);

impl StepRecords {
    fn get(&self, key: &OperationKey) -> Option<&Record> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, r)| r)
    }

    fn get_mut(&mut self, key: &OperationKey) -> Option<&mut Record> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, r)| r)
    }

    /// Adds the record of a key not held (the caller looked it up first).
    fn insert(&mut self, key: OperationKey, record: Record) {
        debug_assert!(self.get(&key).is_none(), "a step record is admitted once");
        self.0.push((key, record));
    }

    fn retain(&mut self, mut keep: impl FnMut(&OperationKey, &mut Record) -> bool) {
        self.0.retain_mut(|(k, r)| keep(k, r));
    }

    fn remove(&mut self, key: &OperationKey) {
        self.0.retain(|(k, _)| k != key);
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

fn running(request_id: DomainRequestId, body: Body) -> Record {
    Record {
        request_id,
        body,
        state: State::Running,
    }
}

fn identity(record: &Record, id: DomainRequestId, body: &Body, keyed_by: &str) -> Admission {
    if record.request_id != id || !record.body.same(body) {
        return Admission::Refuse(
            DomainErrorCode::Conflict,
            format!(
                "the {keyed_by} already holds {} with another {}; the earlier result stands",
                record.request_id,
                if record.request_id == id {
                    "body"
                } else {
                    "request id"
                }
            ),
        );
    }
    match &record.state {
        State::Running => Admission::Refuse(
            DomainErrorCode::InProgress,
            format!("{id} is still running; its original call will complete"),
        ),
        State::Done(cached) => Admission::Replay(Arc::clone(cached)),
    }
}

#[cfg(test)]
#[path = "dedup_tests.rs"]
mod tests;
