//! The session RPC methods a worker answers (contracts §4, §6, §7), as one enum: a method's name
//! is a string only on the wire (`Request.method` of the bus) and in what people read.
//!
//! It knows the names and which worker role serves each; it does not know how a method is
//! deduplicated, retried or executed.

use std::fmt;

/// A session RPC method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// `Worker.Hello`: identity and limits, before anything else.
    WorkerHello,
    /// `Worker.Status`: the worker's phase and boundary.
    WorkerStatus,
    /// `Worker.Acknowledge`: replies the caller no longer needs replayed.
    WorkerAcknowledge,
    /// `Worker.Shutdown`: stop after the current request.
    WorkerShutdown,
    /// `Agent.Initialize`: an agent's boundary 0.
    AgentInitialize,
    /// `Agent.Prepare`: an agent's decision for the step.
    AgentPrepare,
    /// `Agent.Commit`: an agent's consequences of the step.
    AgentCommit,
    /// `Environment.Initialize`: the world's boundary 0.
    EnvironmentInitialize,
    /// `Environment.Advance`: the world's one advance per step.
    EnvironmentAdvance,
    /// `State.Capture`: the worker's state at a committed boundary.
    StateCapture,
    /// `State.StageRestore`: a captured state checked and staged.
    StateStageRestore,
    /// `State.ActivateRestore`: the staged state made current.
    StateActivateRestore,
}

impl Method {
    /// Every method, in the order above.
    pub const ALL: [Self; 12] = [
        Self::WorkerHello,
        Self::WorkerStatus,
        Self::WorkerAcknowledge,
        Self::WorkerShutdown,
        Self::AgentInitialize,
        Self::AgentPrepare,
        Self::AgentCommit,
        Self::EnvironmentInitialize,
        Self::EnvironmentAdvance,
        Self::StateCapture,
        Self::StateStageRestore,
        Self::StateActivateRestore,
    ];

    /// The name the wire carries, e.g. `Agent.Prepare`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::WorkerHello => "Worker.Hello",
            Self::WorkerStatus => "Worker.Status",
            Self::WorkerAcknowledge => "Worker.Acknowledge",
            Self::WorkerShutdown => "Worker.Shutdown",
            Self::AgentInitialize => "Agent.Initialize",
            Self::AgentPrepare => "Agent.Prepare",
            Self::AgentCommit => "Agent.Commit",
            Self::EnvironmentInitialize => "Environment.Initialize",
            Self::EnvironmentAdvance => "Environment.Advance",
            Self::StateCapture => "State.Capture",
            Self::StateStageRestore => "State.StageRestore",
            Self::StateActivateRestore => "State.ActivateRestore",
        }
    }

    /// The method a wire name names, if any.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// Whether it is a step operation (`Agent.Prepare`, `Agent.Commit`, `Environment.Advance`):
    /// scoped at a step, never re-issued under a new id once its outcome is uncertain.
    #[must_use]
    pub const fn is_step(self) -> bool {
        matches!(
            self,
            Self::AgentPrepare | Self::AgentCommit | Self::EnvironmentAdvance
        )
    }

    /// Whether it is one of the common worker methods (`Worker.*`), which change no model or
    /// world state.
    #[must_use]
    pub const fn is_worker_query(self) -> bool {
        matches!(
            self,
            Self::WorkerHello | Self::WorkerStatus | Self::WorkerAcknowledge | Self::WorkerShutdown
        )
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn every_name_parses_back_to_its_method_and_nothing_else_parses() {
        for method in Method::ALL {
            assert_eq!(Method::parse(method.as_str()), Some(method));
            assert_eq!(method.to_string(), method.as_str());
        }
        for name in [
            "",
            "Agent.prepare",
            "Agent.Prepare ",
            "Agent",
            "Nope.Prepare",
        ] {
            assert_eq!(Method::parse(name), None, "{name:?}");
        }
        let step: Vec<&str> = Method::ALL
            .into_iter()
            .filter(|m| m.is_step())
            .map(Method::as_str)
            .collect();
        assert_eq!(
            step,
            ["Agent.Prepare", "Agent.Commit", "Environment.Advance"]
        );
    }
}
