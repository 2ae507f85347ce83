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
use flysim_types::{Id, TypedValue};
use flysim_worker::schemas::{
    IDLE, action_context, action_decision, counter_event, counter_inspection, episode_outcome,
};
use serde_json::{Map, Value, json};

/// A task or executor refusal: the epoch fails with it.
pub type TaskError = String;

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
}

/// A task: scores transitions, owns a ledger.
pub trait Task: Send {
    /// Initial contexts, progress and events from the boundary-0 inspection.
    ///
    /// # Errors
    ///
    /// A [`TaskError`] fails the start.
    fn bootstrap(
        &mut self,
        episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
    ) -> Result<Bootstrap, TaskError>;

    /// Evaluates one acknowledged transition, exactly once.
    ///
    /// # Errors
    ///
    /// A [`TaskError`] fails the epoch.
    fn evaluate_transition(&mut self, transition: &Transition<'_>)
    -> Result<Evaluation, TaskError>;

    /// The ledger's bytes, for a checkpoint.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint.
    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Err("this task does not checkpoint".into())
    }

    /// Validates a captured ledger without installing it.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint or the bytes are not its ledger.
    fn validate_restore(&self, _ledger: &[u8]) -> Result<(), TaskError> {
        Err("this task does not checkpoint".into())
    }

    /// Installs a validated ledger.
    ///
    /// # Errors
    ///
    /// When the task does not checkpoint.
    fn install_restore(&mut self, _ledger: &[u8]) -> Result<(), TaskError> {
        Err("this task does not checkpoint".into())
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
            return Err(format!(
                "the identity executor reads `{}` decisions, not `{}`",
                action_decision().id,
                decision.schema.id
            ));
        }
        let action = decision
            .value
            .get("action")
            .and_then(Value::as_str)
            .ok_or("the decision names no action")?;
        let mut intent = ControllerIntent::neutral(schema);
        if action != IDLE {
            let button = intent
                .buttons
                .iter_mut()
                .find(|b| b.id.as_str() == action)
                .ok_or_else(|| format!("action `{action}` is not a button of the port"))?;
            button.down = true;
        }
        Ok(intent)
    }
}

/// Derives an event id: `<episode>.s<step>.<rule>.<ordinal>`.
///
/// # Errors
///
/// When the spelling is not an `Id` (too long, or a bad rule name).
pub fn event_id(episode: &Id, source_step: u64, rule: &str, ordinal: u64) -> Result<Id, TaskError> {
    Id::parse(&format!("{episode}.s{source_step}.{rule}.{ordinal}")).map_err(|e| e.to_string())
}

/// The object inside `value` (an empty one for anything else): for building typed values and
/// events with `json!`.
#[must_use]
pub fn object(value: Value) -> Map<String, Value> {
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
    Id::parse(text).map_err(|e| e.to_string())
}

/// The counter task (`counter-v1`) of the counter arena.
///
/// - Rewards come from each agent's own control: an agent whose port's `press` button was down
///   gets the event `press` and a reward of 1 (rule `press`); otherwise nothing.
/// - Contexts mask actions by the agent's counter: `press` is unavailable at 5 and above, `idle`
///   at -5 and below.
/// - Progress counts presses. With a terminal step set, the transition reaching it requests a
///   terminal episode.
#[derive(Debug, Clone, Default)]
pub struct CounterTask {
    presses: u64,
    terminal_at: Option<u64>,
}

/// The counter above which `press` is masked.
const PRESS_CAP: i64 = 5;

impl CounterTask {
    /// A counter task whose episode ends at boundary `terminal_at`, if given.
    #[must_use]
    pub fn new(terminal_at: Option<u64>) -> Self {
        Self {
            presses: 0,
            terminal_at,
        }
    }

    fn counters(inspection: &TypedValue) -> Result<BTreeMap<Id, i64>, TaskError> {
        if inspection.schema != counter_inspection() {
            return Err(format!(
                "the counter task reads `{}` inspections",
                counter_inspection().id
            ));
        }
        let list = inspection
            .value
            .get("counters")
            .and_then(Value::as_array)
            .ok_or("the inspection has no counters")?;
        list.iter()
            .map(|c| {
                let port = c
                    .get("portId")
                    .and_then(Value::as_str)
                    .and_then(|p| Id::parse(p).ok());
                let value = c.get("value").and_then(Value::as_i64);
                port.zip(value)
                    .ok_or_else(|| "a malformed counter".to_owned())
            })
            .collect()
    }

    fn context(counter: i64) -> TypedValue {
        let actions: Vec<&str> = if counter >= PRESS_CAP {
            vec![IDLE]
        } else if counter <= -PRESS_CAP {
            vec!["press"]
        } else {
            vec![IDLE, "press"]
        };
        TypedValue {
            schema: action_context(),
            value: object(json!({ "availableActions": actions })),
        }
    }

    fn contexts(
        counters: &BTreeMap<Id, i64>,
        bindings: &[PortBinding],
    ) -> Result<BTreeMap<Id, Arc<TypedValue>>, TaskError> {
        bindings
            .iter()
            .map(|b| {
                let counter = counters
                    .get(&b.port_id)
                    .ok_or_else(|| format!("no counter for port `{}`", b.port_id))?;
                Ok((b.agent_id.clone(), Arc::new(Self::context(*counter))))
            })
            .collect()
    }
}

impl Task for CounterTask {
    fn bootstrap(
        &mut self,
        _episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
    ) -> Result<Bootstrap, TaskError> {
        let counters = Self::counters(initial)?;
        Ok(Bootstrap {
            contexts: Self::contexts(&counters, bindings)?,
            progress: json!({"presses": self.presses}),
            events: Vec::new(),
        })
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
        let counters = Self::counters(t.new)?;
        let next = t.step + 1;
        let mut bindings = t.bindings.to_vec();
        bindings.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
        let mut outcomes = BTreeMap::new();
        let mut events = Vec::new();
        for binding in &bindings {
            let control = t
                .controls
                .iter()
                .find(|c| c.port_id == binding.port_id)
                .ok_or_else(|| format!("no control for port `{}`", binding.port_id))?;
            let pressed = control
                .buttons
                .iter()
                .any(|b| b.id.as_str() == "press" && b.down);
            let mut outcome = AgentOutcome::default();
            if pressed {
                let ordinal = events.len() as u64;
                let id = event_id(t.episode, next, "press", ordinal)?;
                let counter = counters.get(&binding.port_id).copied().unwrap_or(0);
                events.push(TaskEvent {
                    id: id.clone(),
                    kind_id: task_id("press")?,
                    source_step: next,
                    agent_id: Some(binding.agent_id.clone()),
                    payload: TypedValue {
                        schema: counter_event(),
                        value: object(json!({"portId": binding.port_id, "counter": counter})),
                    },
                });
                outcome.rewards.push(Reward {
                    event_id: id,
                    rule_id: task_id("press")?,
                    value: 1.0,
                });
                self.presses += 1;
            }
            outcomes.insert(binding.agent_id.clone(), outcome);
        }
        let episode_request = match self.terminal_at {
            Some(end) if end == next => Some(EpisodeRequest {
                kind: EpisodeRequestKind::Terminal,
                reason: task_id("step-limit")?,
                outcome: TypedValue {
                    schema: episode_outcome(),
                    value: object(json!({"step": next.to_string()})),
                },
            }),
            _ => None,
        };
        Ok(Evaluation {
            outcomes,
            contexts: Self::contexts(&counters, t.bindings)?,
            progress: json!({"presses": self.presses}),
            events,
            episode_request,
        })
    }

    /// The ledger is the press count: `FLYCTK01` and a little-endian u64.
    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        let mut out = COUNTER_LEDGER_MAGIC.to_vec();
        out.extend_from_slice(&self.presses.to_le_bytes());
        Ok(out)
    }

    fn validate_restore(&self, ledger: &[u8]) -> Result<(), TaskError> {
        Self::ledger(ledger).map(|_| ())
    }

    fn install_restore(&mut self, ledger: &[u8]) -> Result<(), TaskError> {
        self.presses = Self::ledger(ledger)?;
        Ok(())
    }
}

/// The magic of the counter task's ledger.
const COUNTER_LEDGER_MAGIC: &[u8; 8] = b"FLYCTK01";

impl CounterTask {
    fn ledger(bytes: &[u8]) -> Result<u64, TaskError> {
        match bytes.strip_prefix(COUNTER_LEDGER_MAGIC.as_slice()) {
            Some(rest) if rest.len() == 8 => {
                let mut b = [0u8; 8];
                b.copy_from_slice(rest);
                Ok(u64::from_le_bytes(b))
            }
            _ => Err("a counter task ledger is `FLYCTK01` and 8 bytes".into()),
        }
    }
}
