//! The refusals and failures of a session, each with a registered code (`FS03xx`). Every
//! failure that concerns a worker names it, the method, the step and the request id.

use flysim_bus::{BusError, ErrorCode};
use flysim_rpc::RpcError;
use flysim_types::workers::{DomainErrorCode, Method, Mutation};
use flysim_types::{DomainRequestId, Id};
use miette::Diagnostic;
use thiserror::Error;

use crate::phase::Phase;

/// What a session can end with besides committing its steps.
#[derive(Debug, Error, Diagnostic)]
pub enum SessionError {
    /// A worker answered a step or lifecycle request with a domain error: the epoch fails.
    #[error(
        "{participant} refused {method} {request_id} at step {step}: {code:?} (mutation {mutation:?}): {message}"
    )]
    #[diagnostic(
        code("FS0301"),
        help(
            "the epoch failed at the last committed boundary; no fly is skipped and no step continues half-committed"
        )
    )]
    Refused {
        /// The worker.
        participant: String,
        /// The method.
        method: Method,
        /// The step of the request scope.
        step: u64,
        /// The domain request id.
        request_id: DomainRequestId,
        /// The domain code.
        code: DomainErrorCode,
        /// Mutation certainty.
        mutation: Mutation,
        /// The worker's message.
        message: String,
    },
    /// No terminal reply arrived within the deadline, even after resending the same request.
    #[error(
        "{participant} gave no terminal reply to {method} {request_id} at step {step} within {budget_ms} ms: {reason}"
    )]
    #[diagnostic(
        code("FS0302"),
        help(
            "the outcome is uncertain, so the epoch failed; the same request id was resent and never a new one, so nothing ran twice"
        )
    )]
    Uncertain {
        /// The worker.
        participant: String,
        /// The method.
        method: Method,
        /// The step of the request scope.
        step: u64,
        /// The domain request id every attempt carried.
        request_id: DomainRequestId,
        /// The budget that ran out.
        budget_ms: u64,
        /// The last thing known.
        reason: String,
    },
    /// A worker's Hello does not prove the identity the plan requires.
    #[error("{participant} refused at Hello: {reason}")]
    #[diagnostic(
        code("FS0303"),
        help(
            "every worker must be the configured id and role, of this build and contract, with its role's capability"
        )
    )]
    Identity {
        /// The worker.
        participant: String,
        /// What did not match.
        reason: String,
    },
    /// The agents' threads exceed the thread budget: refused before anything starts.
    #[error("BUSY: the agents ask for {requested} worker threads, the thread budget is {budget}")]
    #[diagnostic(
        code("FS0304"),
        help(
            "lower the threads per agent worker (the agents' `threads`), or raise `max-threads` in the composition's `run`"
        )
    )]
    ThreadBudget {
        /// Threads the agents ask for.
        requested: u64,
        /// The plan's budget.
        budget: u32,
    },
    /// The plan names a model, backend, task or executor this build cannot run.
    #[error("{what} is not available in this build: {reason}")]
    #[diagnostic(
        code("FS0305"),
        help("this build does not link that model, backend, task or executor")
    )]
    Unavailable {
        /// The component.
        what: String,
        /// Why.
        reason: String,
    },
    /// The environment's backend cannot start here and said why with its own code (e.g.
    /// `FS0601`, `FS0811`), passed through whole.
    #[error(transparent)]
    #[diagnostic(transparent)]
    BackendRefused(flysim_component::Refusal),
    /// The coordinator was asked to take a phase edge its edge table does not have.
    #[error("INVALID_PHASE: the session cannot go from {from} to {to}")]
    #[diagnostic(
        code("FS0306"),
        help(
            "only the edges of the step protocol exist (contracts §5.2); this is a coordinator bug"
        )
    )]
    InvalidPhase {
        /// The current phase.
        from: Phase,
        /// The requested phase.
        to: Phase,
    },
    /// A worker's incarnation changed under the session: the epoch is invalid.
    #[error("{participant} changed incarnation during {method} at step {step}: {detail}")]
    #[diagnostic(
        code("FS0307"),
        help(
            "a restarted worker lost its state; the epoch is invalid and every participant must be restored or reset together"
        )
    )]
    IncarnationChanged {
        /// The worker.
        participant: String,
        /// The method.
        method: Method,
        /// The step.
        step: u64,
        /// What the bus or the reply said.
        detail: String,
    },
    /// A worker or the router went away during a call.
    #[error("{participant} was lost during {method} at step {step}: {reason}")]
    #[diagnostic(
        code("FS0308"),
        help(
            "the worker's process or connection ended, or the router restarted; the epoch failed at the last committed boundary"
        )
    )]
    ParticipantLost {
        /// The worker.
        participant: String,
        /// The method.
        method: Method,
        /// The step.
        step: u64,
        /// What the bus said.
        reason: String,
    },
    /// A worker could not be started, or did not register its service in time.
    #[error("worker {participant} could not be started: {reason}")]
    #[diagnostic(
        code("FS0309"),
        help("the worker process or thread ended before it answered Hello; check the build")
    )]
    Launch {
        /// The worker.
        participant: String,
        /// Why.
        reason: String,
    },
    /// A result broke the contract, or the task or an executor failed: the epoch fails.
    #[error("{participant} broke the step at {step}: {reason}")]
    #[diagnostic(
        code("FS0310"),
        help(
            "a result was malformed or did not match its request, or the task or executor refused the transition; the epoch failed"
        )
    )]
    Contract {
        /// The worker, `task` or `executor`.
        participant: String,
        /// The step.
        step: u64,
        /// What was wrong.
        reason: String,
    },
    /// Process mode with the in-memory transport.
    #[error("mode \"process\" cannot use transport \"memory\"")]
    #[diagnostic(
        code("FS0311"),
        help(
            "workers in separate processes share no memory: use the Unix-socket transport, or run the workers in-process or in threads"
        )
    )]
    ModeTransport,
    /// A checkpoint could not be taken, or does not fit this session, or a participant refused
    /// its state at staging: nothing was installed.
    #[error("checkpoint refused by {participant}: {reason}")]
    #[diagnostic(
        code("FS0312"),
        help(
            "a checkpoint resumes only the plan and build that wrote it, with every participant able to checkpoint; nothing was changed"
        )
    )]
    Checkpoint {
        /// The worker, `task` or `coordinator`.
        participant: String,
        /// Why.
        reason: String,
    },
    /// A participant failed while installing its staged state: the session is fenced and plays
    /// no step.
    #[error("restore failed while activating {participant}: {reason}; the session is fenced")]
    #[diagnostic(
        code("FS0313"),
        help(
            "some participants may hold the restored state and others not; start again from the checkpoint"
        )
    )]
    Fenced {
        /// The participant that failed.
        participant: String,
        /// Why.
        reason: String,
    },
    /// The digest of a live view, hashed for the behaviour row off the step's path, never came:
    /// the frame could not be read, or the digest thread ended first. The row is refused rather
    /// than recorded without it.
    #[error(
        "the digest of view `{view_id}` at boundary {boundary} was never computed: its frame could not be read to hash it for the trace"
    )]
    #[diagnostic(
        code("FS0314"),
        help(
            "the boundary was committed but its row cannot be recorded, so the epoch failed; the rows before it stand"
        )
    )]
    ViewDigestMissing {
        /// The committed boundary whose row it is.
        boundary: u64,
        /// The view whose digest is missing.
        view_id: Id,
    },
    /// The run's sink (the run directory, for a recorded run) refused a row or a checkpoint,
    /// with its own coded diagnostic.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Sink(flysim_component::Refusal),
}

impl SessionError {
    /// The registered diagnostic code.
    #[must_use]
    pub fn code_str(&self) -> String {
        Diagnostic::code(self)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    /// Classifies a failed call to `participant`.
    pub(crate) fn from_rpc(
        e: RpcError,
        participant: &str,
        method: Method,
        step: u64,
        request_id: DomainRequestId,
        budget_ms: u64,
    ) -> Self {
        let bus = |b: &BusError| -> Option<Self> {
            match b.bus_code() {
                Some(ErrorCode::TargetChanged) => Some(Self::IncarnationChanged {
                    participant: participant.to_owned(),
                    method,
                    step,
                    detail: b.to_string(),
                }),
                Some(ErrorCode::NoService | ErrorCode::RouterLost) => Some(Self::ParticipantLost {
                    participant: participant.to_owned(),
                    method,
                    step,
                    reason: b.to_string(),
                }),
                _ => None,
            }
        };
        let uncertain = |reason: String| Self::Uncertain {
            participant: participant.to_owned(),
            method,
            step,
            request_id,
            budget_ms,
            reason,
        };
        match e {
            RpcError::Bus(b) => bus(&b).unwrap_or_else(|| uncertain(b.to_string())),
            RpcError::Uncertain { last, .. } => {
                bus(&last).unwrap_or_else(|| uncertain(last.to_string()))
            }
            RpcError::ReplyMismatch {
                field: "incarnationId",
                expected,
                found,
            } => Self::IncarnationChanged {
                participant: participant.to_owned(),
                method,
                step,
                detail: format!("a reply from incarnation {found}, expected {expected}"),
            },
            RpcError::NewIdRefused { .. } => uncertain(e.to_string()),
            other => Self::Contract {
                participant: participant.to_owned(),
                step,
                reason: other.to_string(),
            },
        }
    }
}
