//! The counter task (`counter-v1`): rewards each press of an agent's own `press` button and
//! masks the actions its counter may no longer take.
//!
//! **Invariant:** it reads only the counter arena's inspection (`counter-inspection`); any other
//! world's inspection is refused, never guessed at.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use flysim_component::schemas::{IDLE, action_context, episode_outcome};
use flysim_component::task::{
    AgentOutcome, Bootstrap, EpisodeRequest, Evaluation, Task, TaskError, TaskEvent, Transition,
    event_id, json_object,
};
use flysim_types::spec::TaskSpec;
use flysim_types::trace::EpisodeRequestKind;
use flysim_types::workers::{PortBinding, Reward};
use flysim_types::{Id, TypedValue};
use serde_json::{Value, json};

use crate::schemas::{counter_event, counter_inspection};

/// What the counter task declares: it reads the counter arena's inspection, whatever its
/// (compiled-in) world.
pub const SPEC: TaskSpec = TaskSpec {
    name: "counter-v1",
    summary: "A reward for every press of an agent's own port.",
    backends: &[crate::SPEC.name],
    content: None,
    reads_memory: false,
};

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

    /// Each port's counter, by port id, read from the counter arena's inspection (borrowed from
    /// it: the task reads them every step).
    fn counters(inspection: &TypedValue) -> Result<BTreeMap<&str, i64>, TaskError> {
        if inspection.schema != counter_inspection() {
            return Err(TaskError::Mismatch(format!(
                "the counter task reads `{}` inspections",
                counter_inspection().id
            )));
        }
        let list = inspection
            .value
            .get("counters")
            .and_then(Value::as_array)
            .ok_or_else(|| TaskError::Mismatch("the inspection has no counters".to_owned()))?;
        list.iter()
            .map(|c| {
                let port = c
                    .get("portId")
                    .and_then(Value::as_str)
                    .filter(|p| Id::is_valid(p));
                let value = c.get("value").and_then(Value::as_i64);
                port.zip(value)
                    .ok_or_else(|| TaskError::Mismatch("a malformed counter".to_owned()))
            })
            .collect()
    }

    /// The decision context of an agent whose counter is `counter`: one of three values, made
    /// once and shared.
    fn context(counter: i64) -> Arc<TypedValue> {
        static CONTEXTS: OnceLock<[Arc<TypedValue>; 3]> = OnceLock::new();
        let [capped, floored, free] = CONTEXTS.get_or_init(|| {
            let of = |actions: &[&str]| {
                Arc::new(TypedValue {
                    schema: action_context(),
                    value: json_object(json!({ "availableActions": actions })),
                })
            };
            [of(&[IDLE]), of(&["press"]), of(&[IDLE, "press"])]
        });
        let shared = if counter >= PRESS_CAP {
            capped
        } else if counter <= -PRESS_CAP {
            floored
        } else {
            free
        };
        Arc::clone(shared)
    }

    fn contexts(
        counters: &BTreeMap<&str, i64>,
        bindings: &[PortBinding],
    ) -> Result<BTreeMap<Id, Arc<TypedValue>>, TaskError> {
        bindings
            .iter()
            .map(|b| {
                let counter = counters.get(b.port_id.as_str()).ok_or_else(|| {
                    TaskError::Mismatch(format!("no counter for port `{}`", b.port_id))
                })?;
                Ok((b.agent_id.clone(), Self::context(*counter)))
            })
            .collect()
    }
}

/// The ids of the task's rule and event kind `press`, and of its terminal reason, made once.
fn rule_ids() -> &'static (Id, Id) {
    static IDS: OnceLock<(Id, Id)> = OnceLock::new();
    IDS.get_or_init(|| (Id::from_static("press"), Id::from_static("step-limit")))
}

impl Task for CounterTask {
    fn progress_schema(&self) -> flysim_types::SchemaRef {
        flysim_component::schemas::task_progress(&[("presses", "integer")])
    }

    fn bootstrap(
        &mut self,
        _episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
        _memory: Option<flysim_component::MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError> {
        let counters = Self::counters(initial)?;
        Ok(Bootstrap {
            contexts: Self::contexts(&counters, bindings)?,
            progress: json!({"presses": self.presses}),
            events: Vec::new(),
            variables: None,
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
                .ok_or_else(|| {
                    TaskError::Mismatch(format!("no control for port `{}`", binding.port_id))
                })?;
            let pressed = control
                .buttons
                .iter()
                .any(|b| b.id.as_str() == "press" && b.down);
            let mut outcome = AgentOutcome::default();
            if pressed {
                let ordinal = events.len() as u64;
                let id = event_id(t.episode, next, "press", ordinal)?;
                let counter = counters.get(binding.port_id.as_str()).copied().unwrap_or(0);
                events.push(TaskEvent {
                    id: id.clone(),
                    kind_id: rule_ids().0.clone(),
                    source_step: next,
                    agent_id: Some(binding.agent_id.clone()),
                    payload: TypedValue {
                        schema: counter_event(),
                        value: json_object(json!({"portId": binding.port_id, "counter": counter})),
                    },
                });
                outcome.rewards.push(Reward {
                    event_id: id,
                    rule_id: rule_ids().0.clone(),
                    value: 1.0,
                });
                self.presses = self.presses.saturating_add(1);
            }
            outcomes.insert(binding.agent_id.clone(), outcome);
        }
        let episode_request = match self.terminal_at {
            Some(end) if end == next => Some(EpisodeRequest {
                kind: EpisodeRequestKind::Terminal,
                reason: rule_ids().1.clone(),
                outcome: TypedValue {
                    schema: episode_outcome(),
                    value: json_object(json!({"step": next.to_string()})),
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
            variables: None,
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
            _ => Err(TaskError::Ledger(
                "a counter task ledger is `FLYCTK01` and 8 bytes".to_owned(),
            )),
        }
    }
}
