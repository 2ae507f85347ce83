//! The task of the project's GameCube test program: `gamecube-pad-echo-v1`.
//!
//! The test program copies the serial-interface word of every controller port into RAM on every
//! pass of its main loop (`roms/gc-fieldcount/README.md`), and the backend watches those words.
//! This task checks, step by step, that what each agent's port held in batch `k` is what the
//! console read during field `k+1`, and rewards it:
//!
//! - every agent's decision context offers `idle` and those of `a b x y start d-up d-down d-left
//!   d-right` its port declares (not `z`: while port 1 holds Z the program presents a frame only
//!   every other field, which a step refuses);
//! - for each transition, the buttons of every bound port in the applied batch (A, B, X, Y,
//!   Start, Z and the D-pad) must equal the buttons in the port's SI word of the new inspection;
//!   anything else fails the epoch (the input did not reach the console in its field);
//! - each action button held and read back is one `echo` event, id
//!   `<episode>.s<step>.echo.<ordinal>` (agents in id order), with one reward of `1` (rule
//!   `echo`) to its agent;
//! - progress is `{"echoes": n}`; the ledger (its checkpoint) is `n`, 8 bytes little-endian.
//!
//! Behaviour depends only on the inspection, the applied batch and the bindings.

use std::collections::BTreeMap;

use flysim_session::task::{
    AgentOutcome, Bootstrap, Evaluation, Task, TaskError, TaskEvent, Transition, event_id,
};
use flysim_types::plan::LaunchPlan;
use flysim_types::workers::{PortBinding, PortControl, Reward};
use flysim_types::{Id, TypedValue};
use flysim_worker::schemas::{IDLE, action_context, schema_ref};
use serde_json::{Map, Value, json};

use crate::schema::INSPECTION_SCHEMA_ID;

/// The task's id in compositions.
pub const TASK_ID: &str = "gamecube-pad-echo-v1";
/// The buttons offered as actions, in this order.
pub const ACTIONS: [&str; 9] = [
    "a", "b", "x", "y", "start", "d-up", "d-down", "d-left", "d-right",
];
/// Each checked button's bit in the high SI word: `[buttons, 0x80 | buttons, stick x, stick y]`.
const BITS: [(&str, u32); 10] = [
    ("a", 0x0100_0000),
    ("b", 0x0200_0000),
    ("x", 0x0400_0000),
    ("y", 0x0800_0000),
    ("start", 0x1000_0000),
    ("d-left", 0x0001_0000),
    ("d-right", 0x0002_0000),
    ("d-down", 0x0004_0000),
    ("d-up", 0x0008_0000),
    ("z", 0x0010_0000),
];
/// The bits of [`BITS`].
const CHECKED: u32 = 0x1f1f_0000;

/// The schema of an `echo` event's payload.
#[must_use]
pub fn echo_event() -> flysim_types::SchemaRef {
    schema_ref(
        "gamecube-pad-echo-event",
        1,
        &[("portId", "Id"), ("button", "Id"), ("word", "integer")],
    )
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn id(text: &str) -> Result<Id, TaskError> {
    Id::parse(text).map_err(|e| e.to_string())
}

/// The buttons of `control` as SI word bits.
fn held_bits(control: &PortControl) -> u32 {
    control
        .buttons
        .iter()
        .filter(|b| b.down)
        .filter_map(|b| BITS.iter().find(|(name, _)| *name == b.id.as_str()))
        .fold(0, |bits, (_, bit)| bits | bit)
}

/// The high SI word of `port` (`p1`..`p4`) in a Dolphin watch inspection.
fn pad_word(inspection: &TypedValue, port: &Id) -> Result<u32, TaskError> {
    if inspection.schema.id.as_str() != INSPECTION_SCHEMA_ID {
        return Err(format!(
            "{TASK_ID} reads `{INSPECTION_SCHEMA_ID}` inspections, not `{}`",
            inspection.schema.id
        ));
    }
    let name = port
        .as_str()
        .strip_prefix('p')
        .map(|n| format!("pad{n}-hi"))
        .ok_or_else(|| format!("port `{port}` is not p1 to p4"))?;
    inspection
        .value
        .get("values")
        .and_then(|v| v.get(&name))
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            format!(
                "the inspection has no `{name}`: {TASK_ID} runs on the project's test program (content format `gc-fieldcount`)"
            )
        })
}

/// The pad echo task.
#[derive(Debug, Clone, Default)]
pub struct PadEchoTask {
    /// The actions each port offers, by port id.
    offered: BTreeMap<Id, Vec<Id>>,
    echoes: u64,
}

impl PadEchoTask {
    /// The task for `plan`: each port offers `idle` and the action buttons it declares.
    #[must_use]
    pub fn for_plan(plan: &LaunchPlan) -> Self {
        let offered = plan
            .environment
            .ports
            .iter()
            .map(|port| {
                let actions = std::iter::once(Id::from_static(IDLE))
                    .chain(
                        ACTIONS
                            .iter()
                            .filter_map(|a| port.controls.buttons.iter().find(|b| b.as_str() == *a))
                            .cloned(),
                    )
                    .collect();
                (port.port_id.clone(), actions)
            })
            .collect();
        Self { offered, echoes: 0 }
    }

    fn contexts(&self, bindings: &[PortBinding]) -> Result<BTreeMap<Id, TypedValue>, TaskError> {
        bindings
            .iter()
            .map(|b| {
                let actions = self
                    .offered
                    .get(&b.port_id)
                    .ok_or_else(|| format!("port `{}` is not the plan's", b.port_id))?;
                Ok((
                    b.agent_id.clone(),
                    TypedValue {
                        schema: action_context(),
                        value: object(json!({ "availableActions": actions })),
                    },
                ))
            })
            .collect()
    }
}

impl Task for PadEchoTask {
    fn bootstrap(
        &mut self,
        _episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
    ) -> Result<Bootstrap, TaskError> {
        for binding in bindings {
            pad_word(initial, &binding.port_id)?;
        }
        Ok(Bootstrap {
            contexts: self.contexts(bindings)?,
            progress: json!({"echoes": self.echoes}),
            events: Vec::new(),
        })
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
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
            let word = pad_word(t.new, &binding.port_id)?;
            let held = held_bits(control);
            if word & CHECKED != held {
                return Err(format!(
                    "port {}: the console read the buttons {:08x} in field {next}, the batch of step {} held {held:08x}",
                    binding.port_id,
                    word & CHECKED,
                    t.step
                ));
            }
            let mut outcome = AgentOutcome::default();
            for action in ACTIONS {
                let down = control
                    .buttons
                    .iter()
                    .any(|b| b.down && b.id.as_str() == action);
                if !down {
                    continue;
                }
                let event = event_id(t.episode, next, "echo", events.len() as u64)?;
                outcome.rewards.push(Reward {
                    event_id: event.clone(),
                    rule_id: id("echo")?,
                    value: 1.0,
                });
                events.push(TaskEvent {
                    id: event,
                    kind_id: id("echo")?,
                    source_step: next,
                    agent_id: Some(binding.agent_id.clone()),
                    payload: TypedValue {
                        schema: echo_event(),
                        value: object(
                            json!({"portId": binding.port_id, "button": action, "word": word}),
                        ),
                    },
                });
                self.echoes += 1;
            }
            outcomes.insert(binding.agent_id.clone(), outcome);
        }
        Ok(Evaluation {
            outcomes,
            contexts: self.contexts(t.bindings)?,
            progress: json!({"echoes": self.echoes}),
            events,
            episode_request: None,
        })
    }

    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Ok(self.echoes.to_le_bytes().to_vec())
    }

    fn validate_restore(&self, ledger: &[u8]) -> Result<(), TaskError> {
        if ledger.len() == 8 {
            Ok(())
        } else {
            Err(format!("a {TASK_ID} ledger is 8 bytes"))
        }
    }

    fn install_restore(&mut self, ledger: &[u8]) -> Result<(), TaskError> {
        self.validate_restore(ledger)?;
        let bytes: [u8; 8] = ledger.try_into().map_err(|_| "8 bytes".to_owned())?;
        self.echoes = u64::from_le_bytes(bytes);
        Ok(())
    }
}
