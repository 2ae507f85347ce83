//! The broken shell of the determinism mutant suite, behind the test-only fault
//! [`WorkerFaults::forward_duplicate_prepares`](crate::faults::WorkerFaults): a duplicate
//! `Agent.Prepare` is answered by the endpoint as always (from its cache, or `IN_PROGRESS`), and
//! is also forwarded to the model, which prepares once more under the retained context. That is
//! the bug the endpoint and the phase machine exist to prevent; the mutant suite shows the
//! determinism tests catch a shell that has it.
//!
//! It knows how to recognise a duplicate Prepare (its request id was admitted before) and how to
//! hand the model one; nothing of how the endpoint answers it.

use flysim_types::DomainRequestId;
use flysim_types::workers::Method;

use super::dispatch::Worker;
use super::lock;
use super::machine::{WorkerPhase, Workload};

impl Worker {
    /// With the fault set, whether `method` with the request id `request` reads is a duplicate
    /// Prepare: one whose request id this worker has met before (the previous Prepare's).
    /// Always `false` without the fault, and then `request` is not called.
    pub(super) fn duplicate_prepare(
        &self,
        method: Method,
        request: impl FnOnce() -> Option<DomainRequestId>,
    ) -> bool {
        if !self.config.faults.forward_duplicate_prepares || method != Method::AgentPrepare {
            return false;
        }
        let Some(request) = request() else {
            return false;
        };
        let mut last = lock(&self.last_prepare);
        let duplicate = *last == Some(request);
        *last = Some(request);
        duplicate
    }

    /// Forwards a duplicate Prepare to the model, after the mutation in progress (the original
    /// Prepare) is done: the prepared model prepares once more, over the original's ticks and
    /// under the retained context, and its decision is thrown away.
    pub(super) async fn forward_duplicate(&self) {
        let Ok(_permit) = self.gate.acquire().await else {
            return;
        };
        let mut machine = lock(&self.machine);
        if !matches!(machine.phase, WorkerPhase::Prepared { .. }) {
            return;
        }
        let Workload::Agent(agent) = &mut machine.workload else {
            return;
        };
        let agent = &mut **agent;
        let ticks = agent.prepared_ticks;
        if let (Some(model), Some((context, _))) = (agent.model.as_mut(), agent.context.as_ref()) {
            let _ = model.prepare(ticks, &[], context);
        }
    }
}
