//! Tasks and action executors: coordinator-local libraries (workers-v1 §4), not bus services.
//!
//! A [`Task`] bootstraps decision contexts from the initial inspection and evaluates every
//! acknowledged transition exactly once: per-agent outcomes (rewards, stimuli), next contexts,
//! progress, events and an optional episode request. An [`ActionExecutor`] turns one agent's
//! decision into a controller intent for the port the coordinator assigns.
//!
//! Event ids are derived, never drawn: [`event_id`] spells `<episode>.s<step>.<rule>.<ordinal>`
//! (e.g. `ep-0.s12.press.1`). They name the episode, not the epoch, so a run resumed under a new
//! epoch issues the same ids as an uninterrupted one.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_types::trace::EpisodeRequestKind;
use flysim_types::workers::{
    AxisValue, ButtonState, ControllerSchema, PortBinding, PortControl, Reward, Stimulus,
};
use flysim_types::{Id, SchemaRef, TypedValue, U64};
use miette::Diagnostic;
use serde_json::{Map, Value};
use thiserror::Error;

use crate::memory::MemoryView;
use crate::schemas::{IDLE, action_decision};

/// Why a task or an executor refused a transition: the epoch fails with it. The message is what
/// the run's failure reports; the variant says which input was at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error, Diagnostic)]
pub enum TaskError {
    /// The world's inspection, a port binding or a control does not hold what the task reads.
    #[error("{0}")]
    Mismatch(String),
    /// A decision the executor cannot turn into controls.
    #[error("{0}")]
    Decision(String),
    /// A checkpoint ledger that is not this task's, or a task that keeps none.
    #[error("{0}")]
    Ledger(String),
    /// A derived id (an event, rule or reason) that is not a valid `Id`.
    #[error("{0}")]
    Id(#[from] flysim_types::ContractError),
}

impl TaskError {
    /// The refusal of a task that keeps no checkpoint ledger.
    #[must_use]
    pub fn no_checkpoint() -> Self {
        Self::Ledger("this task does not checkpoint".to_owned())
    }
}

/// A task event.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    /// Derived with [`event_id`].
    pub id: Id,
    /// The event kind.
    pub kind_id: Id,
    /// The boundary it belongs to (`k+1`, or 0 for bootstrap).
    pub source_step: u64,
    /// The agent it concerns, if any.
    pub agent_id: Option<Id>,
    /// Its payload.
    pub payload: TypedValue,
}

/// An episode request.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRequest {
    /// Terminal or rollback.
    pub kind: EpisodeRequestKind,
    /// Why.
    pub reason: Id,
    /// The outcome value.
    pub outcome: TypedValue,
}

/// One agent's outcome of a transition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOutcome {
    /// Rewards, in event order.
    pub rewards: Vec<Reward>,
    /// Task stimulations, in event order.
    pub stimuli: Vec<Stimulus>,
}

/// What bootstrap yields.
#[derive(Debug, Clone, PartialEq)]
pub struct Bootstrap {
    /// Every agent's initial decision context.
    pub contexts: BTreeMap<Id, Arc<TypedValue>>,
    /// Task progress.
    pub progress: Value,
    /// Bootstrap events (source step 0).
    pub events: Vec<TaskEvent>,
    /// The task's declared variables at boundary 0, by name, for the trace row (a memory task);
    /// `None` for a task that declares none.
    pub variables: Option<flysim_types::memory::Variables>,
}

/// What one evaluation yields.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Every agent's outcome (explicit, possibly empty).
    pub outcomes: BTreeMap<Id, AgentOutcome>,
    /// Every agent's next decision context (shared: a task that keeps one context hands the
    /// same value on, see [`CommitParams`](flysim_types::workers::CommitParams)).
    pub contexts: BTreeMap<Id, Arc<TypedValue>>,
    /// Task progress.
    pub progress: Value,
    /// Events, in task order.
    pub events: Vec<TaskEvent>,
    /// An episode request, if any.
    pub episode_request: Option<EpisodeRequest>,
    /// The task's declared variables at `k+1`, by name, for the trace row (a memory task);
    /// `None` for a task that declares none.
    pub variables: Option<flysim_types::memory::Variables>,
}

/// The transition a task evaluates.
#[derive(Debug, Clone, Copy)]
pub struct Transition<'a> {
    /// The step departed from, `k`.
    pub step: u64,
    /// The episode.
    pub episode: &'a Id,
    /// The inspection at `k`.
    pub old: &'a TypedValue,
    /// The inspection at `k+1`.
    pub new: &'a TypedValue,
    /// The applied batch, in descriptor port order.
    pub controls: &'a [PortControl],
    /// Which agent drives which port.
    pub bindings: &'a [PortBinding],
    /// The world's memory at `k`, for a task that [reads memory](Task::reads_memory).
    pub old_memory: Option<MemoryView<'a>>,
    /// The world's memory at `k+1`, likewise.
    pub new_memory: Option<MemoryView<'a>>,
}

/// A task: scores transitions, owns a ledger.
pub trait Task: Send {
    /// Initial contexts, progress and events from the boundary-0 inspection (and memory, for a
    /// task that [reads memory](Self::reads_memory)).
    ///
    /// # Errors
    ///
    /// A [`TaskError`] fails the start.
    fn bootstrap(
        &mut self,
        episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
        memory: Option<MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError>;

    /// Whether the task reads the world's memory (its `memory` inspection artifact): the
    /// coordinator then hands it to [`bootstrap`](Self::bootstrap) and every
    /// [`Transition`], and refuses a world that publishes none. By default a task reads only
    /// the inspection value.
    fn reads_memory(&self) -> bool {
        false
    }

    /// Evaluates one acknowledged transition, exactly once.
    ///
    /// # Errors
    ///
    /// A [`TaskError`] fails the epoch.
    fn evaluate_transition(&mut self, transition: &Transition<'_>)
    -> Result<Evaluation, TaskError>;

    /// The schema of the progress value this task's evaluations give (published with every
    /// committed snapshot); by default an object of fields the task does not declare.
    fn progress_schema(&self) -> SchemaRef {
        crate::schemas::task_progress(&[])
    }

    /// The ledger's bytes, for a checkpoint.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint.
    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Err(TaskError::no_checkpoint())
    }

    /// Validates a captured ledger without installing it.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint or the bytes are not its ledger.
    fn validate_restore(&self, _ledger: &[u8]) -> Result<(), TaskError> {
        Err(TaskError::no_checkpoint())
    }

    /// Installs a validated ledger.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint.
    fn install_restore(&mut self, _ledger: &[u8]) -> Result<(), TaskError> {
        Err(TaskError::no_checkpoint())
    }
}

/// The buttons and axes one agent asks of its port (a `PortControl` without the port).
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerIntent {
    /// Every declared button, in schema order.
    pub buttons: Vec<ButtonState>,
    /// Every declared axis, in schema order.
    pub axes: Vec<AxisValue>,
}

impl ControllerIntent {
    /// Every button up and every axis at its neutral value.
    #[must_use]
    pub fn neutral(schema: &ControllerSchema) -> Self {
        Self {
            buttons: schema
                .buttons
                .iter()
                .map(|id| ButtonState {
                    id: id.clone(),
                    down: false,
                })
                .collect(),
            axes: schema
                .axes
                .iter()
                .map(|a| AxisValue {
                    id: a.id.clone(),
                    value: a.neutral,
                })
                .collect(),
        }
    }

    /// The control of `port`.
    #[must_use]
    pub fn on(self, port: Id) -> PortControl {
        PortControl {
            port_id: port,
            buttons: self.buttons,
            axes: self.axes,
        }
    }
}

/// One agent's executor.
pub trait ActionExecutor: Send {
    /// Turns `decision` into an intent for a port with `schema`, against the coherent state of
    /// this boundary and the task's progress.
    ///
    /// # Errors
    ///
    /// A [`TaskError`] fails the epoch.
    fn apply(
        &mut self,
        step: u64,
        decision: &TypedValue,
        schema: &ControllerSchema,
        state: &TypedValue,
        progress: &Value,
    ) -> Result<ControllerIntent, TaskError>;
}

/// The identity executor (`direct-v1`): `{"action": "idle"}` holds nothing, `{"action": B}`
/// holds button `B`; axes stay neutral. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityExecutor;

impl ActionExecutor for IdentityExecutor {
    fn apply(
        &mut self,
        _step: u64,
        decision: &TypedValue,
        schema: &ControllerSchema,
        _state: &TypedValue,
        _progress: &Value,
    ) -> Result<ControllerIntent, TaskError> {
        if decision.schema != action_decision() {
            return Err(TaskError::Decision(format!(
                "the identity executor reads `{}` decisions, not `{}`",
                action_decision().id,
                decision.schema.id
            )));
        }
        let action = decision
            .value
            .get("action")
            .and_then(Value::as_str)
            .ok_or_else(|| TaskError::Decision("the decision names no action".to_owned()))?;
        let mut intent = ControllerIntent::neutral(schema);
        if action != IDLE {
            let button = intent
                .buttons
                .iter_mut()
                .find(|b| b.id.as_str() == action)
                .ok_or_else(|| {
                    TaskError::Decision(format!("action `{action}` is not a button of the port"))
                })?;
            button.down = true;
        }
        Ok(intent)
    }
}

/// Each bound agent's decision context, where a task keeps one per port (`by_port`): the same
/// shared value for every agent of a port, on every step.
///
/// # Errors
///
/// [`TaskError::Mismatch`] for a binding whose port has no context (not the plan's port).
pub fn contexts_by_port(
    bindings: &[PortBinding],
    by_port: &BTreeMap<Id, Arc<TypedValue>>,
) -> Result<BTreeMap<Id, Arc<TypedValue>>, TaskError> {
    bindings
        .iter()
        .map(|b| {
            let context = by_port.get(&b.port_id).ok_or_else(|| {
                TaskError::Mismatch(format!("port `{}` is not the plan's", b.port_id))
            })?;
            Ok((b.agent_id.clone(), Arc::clone(context)))
        })
        .collect()
}

/// Checks the ledger of a task that keeps no state (its capture is empty): only an empty one is
/// `task`'s.
///
/// # Errors
///
/// [`TaskError::Ledger`] for any other bytes.
pub fn empty_ledger(task: &str, ledger: &[u8]) -> Result<(), TaskError> {
    if ledger.is_empty() {
        Ok(())
    } else {
        Err(TaskError::Ledger(format!(
            "the {task} ledger is empty (the task keeps no state), not {} bytes",
            ledger.len()
        )))
    }
}

/// Derives an event id: `<episode>.s<step>.<rule>.<ordinal>`.
///
/// # Errors
///
/// When the spelling is not an `Id` (too long, or a bad rule name).
pub fn event_id(episode: &Id, source_step: u64, rule: &str, ordinal: u64) -> Result<Id, TaskError> {
    // Spelled without the formatting machinery: a task may name events on every step.
    let mut text = String::with_capacity(episode.as_str().len() + rule.len() + 44);
    text.push_str(episode.as_str());
    text.push_str(".s");
    U64(source_step).push_to(&mut text);
    text.push('.');
    text.push_str(rule);
    text.push('.');
    U64(ordinal).push_to(&mut text);
    Ok(Id::parse(&text)?)
}

/// The members of a `json!({..})` object literal, for building typed values and events (any
/// other value has none).
#[must_use]
pub fn json_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// An `Id` for a task's rule, kind or reason, with the parse failure as a [`TaskError`].
///
/// # Errors
///
/// When `text` is not an `Id`.
pub fn task_id(text: &str) -> Result<Id, TaskError> {
    Ok(Id::parse(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An event id is `<episode>.s<step>.<rule>.<ordinal>`, and a spelling that is not an `Id`
    /// (too long here) is the task's error, not a panic.
    #[test]
    fn event_ids_are_spelled_from_their_parts() {
        let episode = Id::from_static("ep-3");
        let id = event_id(&episode, 120, "press", 0).unwrap();
        assert_eq!(id.as_str(), "ep-3.s120.press.0");
        let id = event_id(&episode, u64::MAX, "food", 17).unwrap();
        assert_eq!(id.as_str(), "ep-3.s18446744073709551615.food.17");
        let long = "r".repeat(60);
        assert!(matches!(
            event_id(&episode, 1, &long, 0),
            Err(TaskError::Id(_))
        ));
    }
}
