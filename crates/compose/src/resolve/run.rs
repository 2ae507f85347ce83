//! The run: the thread budget the agents' `threads` must fit, the mode and transport that go
//! together, and the run's plan entry with its defaults (the transport derived from the mode).
//!
//! The budget is a constant of the language or the composition's `max-threads`, never the
//! machine's core count. It does not know what the agents run or where.

use flysim_types::U64;
use flysim_types::plan::{PlanRun, RunMode, Transport};

use super::Resolver;
use crate::DEFAULT_MAX_THREADS;
use crate::diag::Problem;
use crate::model::Run;

/// The run's thread budget; the first agent whose threads take the total over it is reported.
pub(super) fn thread_budget(r: &mut Resolver<'_>, run: &Run) -> u32 {
    let comp = r.comp;
    let budget = run
        .max_threads
        .as_ref()
        .map_or(DEFAULT_MAX_THREADS, |m| m.value);
    let mut total: u64 = 0;
    let mut over = false;
    for agent in &comp.agents {
        let threads = agent.threads.as_ref().map_or(1, |t| t.value);
        total += u64::from(threads);
        if total > u64::from(budget) && !over {
            over = true;
            let at = agent.threads.as_ref().map_or(agent.id.span, |t| t.span);
            let whence = if run.max_threads.is_some() {
                "the run's `max-threads`"
            } else {
                "the default budget (no `max-threads` in `run`)"
            };
            let problem = Problem::ThreadBudget {
                src: r.src(at),
                total: comp
                    .agents
                    .iter()
                    .map(|a| u64::from(a.threads.as_ref().map_or(1, |t| t.value)))
                    .sum(),
                budget,
                at: at.at,
                help: Some(format!(
                    "the agents' threads add up to at most {budget}, {whence}; lower `threads` or raise `max-threads` in `run` (the budget is part of the plan, never read from the machine)"
                )),
            };
            r.push(at, problem);
        }
    }
    budget
}

/// Refuses the process mode over the in-memory transport, when both are in one file.
pub(super) fn mode_and_transport(r: &mut Resolver<'_>, run: &Run) {
    if let (Some(mode), Some(transport)) = (&run.mode, &run.transport)
        && mode.value == RunMode::Process
        && transport.value == Transport::Memory
        && mode.span.file == transport.span.file
    {
        let problem = Problem::ModeTransport {
            src: r.src(transport.span),
            at: transport.span.at,
            mode: mode.span.at,
        };
        r.push(transport.span, problem);
    }
}

/// The run's plan entry: the defaults filled in, and the thread budget. Without a transport,
/// the process mode takes the Unix-socket one (the only one it can use), the others memory.
pub(super) fn plan_run(run: &Run, budget: u32) -> PlanRun {
    let mode = run.mode.as_ref().map_or(RunMode::InProcess, |m| m.value);
    let derived = match mode {
        RunMode::Process => Transport::Unix,
        _ => Transport::Memory,
    };
    PlanRun {
        steps: U64(run.steps.value),
        mode,
        transport: run.transport.as_ref().map_or(derived, |t| t.value),
        checkpoint_every: run.checkpoint_every.as_ref().map(|c| U64(c.value)),
        max_threads: budget,
    }
}
