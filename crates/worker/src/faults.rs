//! Faults a test can inject into a worker: a stall, a failure, a restart, each at one method
//! and step, and the broken shell that forwards a duplicate Prepare to its model. A worker runs
//! without any unless its launcher sets them; the `flysim worker` subcommand takes the first
//! three as hidden flags so process-mode tests can inject them too.

use std::time::Duration;

use flysim_types::workers::Method;

/// Which operation a fault fires at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPoint {
    /// The method.
    pub method: Method,
    /// The step of the request scope.
    pub step: u64,
}

impl FaultPoint {
    /// Parses `METHOD@STEP`, e.g. `Agent.Commit@3`.
    ///
    /// # Errors
    ///
    /// A message when the text is not `METHOD@STEP` or names no method.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (method, step) = text
            .split_once('@')
            .ok_or_else(|| format!("{text:?} is not METHOD@STEP"))?;
        let method = Method::parse(method)
            .ok_or_else(|| format!("{text:?}: {method:?} is not a session RPC method"))?;
        let step = step
            .parse()
            .map_err(|_| format!("{text:?}: the step is not a number"))?;
        Ok(Self { method, step })
    }

    /// Whether this point is `method` at `step`.
    #[must_use]
    pub fn matches(&self, method: Method, step: u64) -> bool {
        self.method == method && self.step == step
    }
}

/// The faults of one worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerFaults {
    /// Sleep this long before executing the operation (its reply arrives late).
    pub stall: Option<(FaultPoint, Duration)>,
    /// Answer the operation with `INTERNAL` (mutation unknown) instead of executing it.
    pub fail: Option<FaultPoint>,
    /// After completing the operation, restart: a new incarnation with lost state registers the
    /// service again.
    pub restart_after: Option<FaultPoint>,
    /// The broken shell of the determinism mutant suite: a duplicate `Agent.Prepare` (a request
    /// id the endpoint has admitted already) is still answered by the endpoint, and is also
    /// forwarded to the model, which prepares once more (a sound model then draws its stream
    /// again). In-process and thread modes only; no production launcher sets it.
    pub forward_duplicate_prepares: bool,
}

impl WorkerFaults {
    /// Whether no fault is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
