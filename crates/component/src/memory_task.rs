//! The declared memory task (`memory-v1`): a game's variables read from the world's memory at
//! the addresses the composition declares, rewards as weighted changes of them or paid when a
//! condition starts to hold, and the episode's end on a condition (the declaration's shape and
//! its reading rules are [`flysim_types::memory`]).
//!
//! On every boundary it reads each variable from the [`MemoryView`] the coordinator hands it
//! (boundary 0 in `bootstrap`, `k` and `k+1` in each transition), so it keeps no state of its
//! own and its ledger is empty. A transition then yields, rule by rule in declaration order:
//!
//! - a rule without a condition: when its variable changed, one event (kind = the rule, id
//!   `<episode>.s<k+1>.<rule>.0`, payload `{variable, from, to}`) and a reward of
//!   `weight × (to − from)` to each agent it pays (with `on`, only rises, or only drops by
//!   their size);
//! - a rule with a condition: when the condition holds at `k+1` and did not at `k`, the same
//!   event and a reward of `weight`;
//! - a rule pays the agents bound to its `port`, or every bound agent when it names none.
//!
//! A variable behind a pointer chain is read where the chain leads ([`follow`]); where a pointer
//! is null or leads to bytes the world does not publish, or a float is not finite, the variable
//! has no value at that boundary: it is left out of the row, is null in the progress, pays no
//! change and satisfies no condition. A plain variable whose bytes the world does not publish
//! is an error: the backend promised them.
//!
//! The episode ends (a terminal request, reason `done`) at the first boundary where a done
//! condition holds after not holding at the boundary before, so a value that starts at 0 while
//! the game boots ends nothing. Progress and the trace row carry every variable by name. The
//! decision contexts are the no-reward task's: `idle` and the port's buttons.
//!
//! It knows the declaration and memory views. It does not know any backend, address map or game.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_types::memory::{
    MEMORY_TASK, MemoryTaskPlan, MemoryType, MemoryVariable, Variables, follow,
};
use flysim_types::plan::LaunchPlan;
use flysim_types::spec::TaskSpec;
use flysim_types::trace::EpisodeRequestKind;
use flysim_types::workers::{PortBinding, Reward};
use flysim_types::{Id, SchemaRef, TypedValue};
use serde_json::{Map, Value, json};

use crate::memory::MemoryView;
use crate::no_reward::port_contexts;
use crate::schemas::{episode_outcome, schema_ref, task_progress};
use crate::task::{
    AgentOutcome, Bootstrap, EpisodeRequest, Evaluation, Task, TaskError, TaskEvent, Transition,
    contexts_by_port, empty_ledger, event_id, json_object, task_id,
};

/// The task's name in compositions and plans.
pub const TASK_ID: &str = MEMORY_TASK;

/// What the task declares: it reads memory, so it goes with every backend that lets tasks read
/// memory, whatever the content.
pub const SPEC: TaskSpec = TaskSpec {
    name: TASK_ID,
    summary: "Declared in the composition: variables at memory addresses, rewards as their weighted changes or on conditions, the episode's end on a condition (any game; see docs/tasks.md).",
    backends: &[],
    content: None,
    reads_memory: true,
};

/// The schema of a memory task's reward event: `{variable, from, to}` (`from` is null when a
/// condition starts to hold on a variable that had no value at the boundary before).
#[must_use]
pub fn reward_event() -> SchemaRef {
    static SCHEMA: std::sync::OnceLock<SchemaRef> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            schema_ref(
                "memory-reward-event",
                1,
                &[
                    ("variable", "Id"),
                    ("from", "nullable<number>"),
                    ("to", "number"),
                ],
            )
        })
        .clone()
}

/// The memory task of one plan.
#[derive(Debug, Clone)]
pub struct MemoryTask {
    /// The plan's declaration (`None` only for a plan that is not a memory task's, which
    /// validation refuses: every call then fails with that reason).
    declaration: Option<MemoryTaskPlan>,
    /// Each port's decision context.
    contexts: BTreeMap<Id, Arc<TypedValue>>,
    /// The progress schema: one number (or null) field per variable.
    progress: SchemaRef,
}

impl MemoryTask {
    /// The task `plan` declares.
    #[must_use]
    pub fn for_plan(plan: &LaunchPlan) -> Self {
        Self::new(plan.memory_task.clone(), port_contexts(plan))
    }

    fn new(declaration: Option<MemoryTaskPlan>, contexts: BTreeMap<Id, Arc<TypedValue>>) -> Self {
        let fields: Vec<(&str, &str)> = declaration
            .iter()
            .flat_map(|d| {
                d.variables
                    .iter()
                    .map(|v| (v.name.as_str(), "nullable<number>"))
            })
            .collect();
        let progress = task_progress(&fields);
        Self {
            declaration,
            contexts,
            progress,
        }
    }

    fn declaration(&self) -> Result<&MemoryTaskPlan, TaskError> {
        self.declaration.as_ref().ok_or_else(|| {
            TaskError::Mismatch(format!(
                "the plan names {TASK_ID} but declares no memory task"
            ))
        })
    }

    /// Every declared variable that has a value in `memory`, by name.
    ///
    /// # Errors
    ///
    /// [`TaskError::Mismatch`] when there is no memory, or a plain variable's bytes are not in
    /// it.
    pub fn values(
        declaration: &MemoryTaskPlan,
        memory: Option<MemoryView<'_>>,
        boundary: u64,
    ) -> Result<Variables, TaskError> {
        let memory = memory.ok_or_else(|| {
            TaskError::Mismatch(format!(
                "the world published no memory at boundary {boundary}"
            ))
        })?;
        let mut values = Variables::new();
        for v in &declaration.variables {
            if let Some(value) = read(v, declaration.pointer, memory, boundary)? {
                values.insert(v.name.clone(), value);
            }
        }
        Ok(values)
    }
}

/// One variable's value, or `None` where it has none (see the module's header).
fn read(
    variable: &MemoryVariable,
    pointer: Option<MemoryType>,
    memory: MemoryView<'_>,
    boundary: u64,
) -> Result<Option<f64>, TaskError> {
    let width = variable.width();
    let bytes = if variable.offsets.is_empty() {
        Some(memory.read(variable.address, width).ok_or_else(|| {
            TaskError::Mismatch(format!(
                "variable `{}`: the world's memory at boundary {boundary} has no {width} byte(s) at {:#x}",
                variable.name, variable.address
            ))
        })?)
    } else {
        follow(variable, pointer, |a, w| memory.read(a, w)).and_then(|at| memory.read(at, width))
    };
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let value = variable
        .read(bytes)
        .map_err(|e| TaskError::Mismatch(e.to_string()))?;
    Ok(value.is_finite().then_some(value))
}

/// The progress value: every declared variable by name, null where it has no value.
fn progress(declaration: &MemoryTaskPlan, values: &Variables) -> Value {
    Value::Object(
        declaration
            .variables
            .iter()
            .map(|v| (v.name.to_string(), json!(values.get(&v.name))))
            .collect::<Map<_, _>>(),
    )
}

impl Task for MemoryTask {
    fn progress_schema(&self) -> SchemaRef {
        self.progress.clone()
    }

    fn reads_memory(&self) -> bool {
        true
    }

    fn bootstrap(
        &mut self,
        _episode: &Id,
        _initial: &TypedValue,
        bindings: &[PortBinding],
        memory: Option<MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError> {
        let declaration = self.declaration()?;
        let values = Self::values(declaration, memory, 0)?;
        Ok(Bootstrap {
            contexts: contexts_by_port(bindings, &self.contexts)?,
            progress: progress(declaration, &values),
            events: Vec::new(),
            variables: Some(values),
        })
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
        let declaration = self.declaration()?;
        let next = t.step + 1;
        let old = Self::values(declaration, t.old_memory, t.step)?;
        let new = Self::values(declaration, t.new_memory, next)?;
        let mut outcomes: BTreeMap<Id, AgentOutcome> = t
            .bindings
            .iter()
            .map(|b| (b.agent_id.clone(), AgentOutcome::default()))
            .collect();
        let mut events = Vec::new();
        for rule in &declaration.rewards {
            let (from, to) = (old.get(&rule.variable), new.get(&rule.variable));
            let Some(paid) = rule.pays(from.copied(), to.copied()) else {
                continue;
            };
            let id = event_id(t.episode, next, rule.rule.as_str(), 0)?;
            let paid_to: Vec<&PortBinding> = t
                .bindings
                .iter()
                .filter(|b| rule.port.as_ref().is_none_or(|p| p == &b.port_id))
                .collect();
            for binding in &paid_to {
                if let Some(outcome) = outcomes.get_mut(&binding.agent_id) {
                    outcome.rewards.push(Reward {
                        event_id: id.clone(),
                        rule_id: rule.rule.clone(),
                        value: paid,
                    });
                }
            }
            events.push(TaskEvent {
                id,
                kind_id: rule.rule.clone(),
                source_step: next,
                agent_id: rule
                    .port
                    .as_ref()
                    .and(paid_to.first().map(|b| b.agent_id.clone())),
                payload: TypedValue {
                    schema: reward_event(),
                    value: json_object(json!({"variable": rule.variable, "from": from, "to": to})),
                },
            });
        }
        let mut ended = false;
        for done in &declaration.done {
            let (from, to) = (old.get(&done.variable), new.get(&done.variable));
            ended |= done.holds(to.copied()) && !done.holds(from.copied());
        }
        let episode_request = if ended {
            Some(EpisodeRequest {
                kind: EpisodeRequestKind::Terminal,
                reason: task_id("done")?,
                outcome: TypedValue {
                    schema: episode_outcome(),
                    value: json_object(json!({"step": next.to_string()})),
                },
            })
        } else {
            None
        };
        Ok(Evaluation {
            outcomes,
            contexts: contexts_by_port(t.bindings, &self.contexts)?,
            progress: progress(declaration, &new),
            events,
            episode_request,
            variables: Some(new),
        })
    }

    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Ok(Vec::new())
    }

    fn validate_restore(&self, ledger: &[u8]) -> Result<(), TaskError> {
        empty_ledger(TASK_ID, ledger)
    }

    fn install_restore(&mut self, ledger: &[u8]) -> Result<(), TaskError> {
        empty_ledger(TASK_ID, ledger)
    }
}

#[cfg(test)]
#[path = "memory_task_tests.rs"]
mod tests;
