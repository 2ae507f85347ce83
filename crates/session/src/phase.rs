//! The coordinator's phase machine (contracts §5.2) as an explicit edge table. Any edge not in
//! [`EDGES`] is `INVALID_PHASE`.

use crate::error::SessionError;

/// Where the session stands. Steps are carried beside the phase by the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Workers are being launched, greeted and initialised (bootstrap, warm-up).
    Starting,
    /// At a committed boundary `Ready(k)`.
    Ready,
    /// Prepare is out to every agent.
    Preparing,
    /// Executors run and the one batch is sent (`Environment.Advance`).
    Applying,
    /// The step result is checked and the task evaluates the transition once.
    Observing,
    /// Commit is out to every agent.
    Committing,
    /// Paused at a committed boundary.
    Paused,
    /// Capturing every participant at a committed boundary.
    Capturing,
    /// The epoch failed; no step runs.
    Failed,
    /// Restoring a checkpoint under a new epoch.
    Restoring,
    /// Resetting to a new episode under a new epoch.
    Resetting,
    /// Rolling back under a declared rollback policy.
    RollingBack,
    /// Workers were shut down.
    Stopped,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

use Phase::{
    Applying, Capturing, Committing, Failed, Observing, Paused, Preparing, Ready, Resetting,
    Restoring, RollingBack, Starting, Stopped,
};

/// Every edge of the step protocol.
pub const EDGES: &[(Phase, Phase)] = &[
    (Starting, Ready),
    // The transaction.
    (Ready, Preparing),
    (Preparing, Applying),
    (Applying, Observing),
    (Observing, Committing),
    (Committing, Ready),
    // Pause (a pause requested mid-step takes Committing -> Ready -> Paused).
    (Ready, Paused),
    (Paused, Ready),
    // Capture at a committed boundary returns to it.
    (Ready, Capturing),
    (Paused, Capturing),
    (Capturing, Ready),
    (Capturing, Paused),
    // Failure, from any phase that has work outstanding or may find it broken.
    (Starting, Failed),
    (Ready, Failed),
    (Preparing, Failed),
    (Applying, Failed),
    (Observing, Failed),
    (Committing, Failed),
    (Paused, Failed),
    (Capturing, Failed),
    (Failed, Restoring),
    // A resumed session restores before its first step (workers brought up, nothing played).
    (Starting, Restoring),
    (Restoring, Paused),
    (Restoring, Failed),
    // Episodes: a terminal episode pauses, then the episode policy resets under a new epoch.
    (Paused, Resetting),
    (Resetting, Ready),
    (Resetting, Failed),
    // A declared rollback policy.
    (Ready, RollingBack),
    (RollingBack, Ready),
    (RollingBack, Failed),
    // Shutdown.
    (Ready, Stopped),
    (Paused, Stopped),
    (Failed, Stopped),
    (Starting, Stopped),
];

/// The current phase and its only way to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseMachine {
    phase: Phase,
}

impl Default for PhaseMachine {
    fn default() -> Self {
        Self { phase: Starting }
    }
}

impl PhaseMachine {
    /// The current phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether `from -> to` is an edge.
    #[must_use]
    pub fn allowed(from: Phase, to: Phase) -> bool {
        EDGES.contains(&(from, to))
    }

    /// Takes the edge to `to`.
    ///
    /// # Errors
    ///
    /// [`SessionError::InvalidPhase`] for an edge the table does not have.
    pub fn go(&mut self, to: Phase) -> Result<(), SessionError> {
        if Self::allowed(self.phase, to) {
            self.phase = to;
            Ok(())
        } else {
            Err(SessionError::InvalidPhase {
                from: self.phase,
                to,
            })
        }
    }
}
