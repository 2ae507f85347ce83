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
use std::sync::Arc;

use flysim_component::schemas::{IDLE, action_context, schema_ref};
use flysim_component::task::{
    AgentOutcome, Bootstrap, Evaluation, Task, TaskError, TaskEvent, Transition, contexts_by_port,
    event_id, json_object, task_id,
};
use flysim_types::plan::{LaunchPlan, PlanPort};
use flysim_types::spec::TaskSpec;
use flysim_types::workers::{PortBinding, PortControl, Reward};
use flysim_types::{Id, TypedValue};
use serde_json::{Value, json};

use crate::schema::INSPECTION_SCHEMA_ID;

/// The task's id in compositions.
pub const TASK_ID: &str = "gamecube-pad-echo-v1";
/// What the task declares: it reads the test program's SI words from a Dolphin inspection (the
/// content's format tells the backend which words to watch, so no digest is pinned here).
pub const SPEC: TaskSpec = TaskSpec {
    name: TASK_ID,
    summary: "A reward for every pad button the test program reads back.",
    backends: &[crate::SPEC.name],
    content: None,
    reads_memory: false,
};
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

/// The schema of an `echo` event's payload (its digest is computed once).
#[must_use]
pub fn echo_event() -> flysim_types::SchemaRef {
    static SCHEMA: std::sync::OnceLock<flysim_types::SchemaRef> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            schema_ref(
                "gamecube-pad-echo-event",
                1,
                &[("portId", "Id"), ("button", "Id"), ("word", "integer")],
            )
        })
        .clone()
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
        return Err(TaskError::Mismatch(format!(
            "{TASK_ID} reads `{INSPECTION_SCHEMA_ID}` inspections, not `{}`",
            inspection.schema.id
        )));
    }
    let name = port
        .as_str()
        .strip_prefix('p')
        .map(|n| format!("pad{n}-hi"))
        .ok_or_else(|| TaskError::Mismatch(format!("port `{port}` is not p1 to p4")))?;
    inspection
        .value
        .get("values")
        .and_then(|v| v.get(&name))
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            TaskError::Mismatch(format!(
                "the inspection has no `{name}`: {TASK_ID} runs on the project's test program (content format `gc-fieldcount`)"
            ))
        })
}

/// The pad echo task.
#[derive(Debug, Clone, Default)]
pub struct PadEchoTask {
    /// Each port's decision context (`idle` and its action buttons), by port id.
    offered: BTreeMap<Id, Arc<TypedValue>>,
    echoes: u64,
}

impl PadEchoTask {
    /// The task for `plan`: each port offers `idle` and the action buttons it declares.
    #[must_use]
    pub fn for_plan(plan: &LaunchPlan) -> Self {
        Self::for_ports(&plan.environment.ports)
    }

    /// The task for an environment with `ports`.
    #[must_use]
    pub fn for_ports(ports: &[PlanPort]) -> Self {
        let offered = ports
            .iter()
            .map(|port| {
                let actions = std::iter::once(Id::from_static(IDLE))
                    .chain(
                        ACTIONS
                            .iter()
                            .filter_map(|a| port.controls.buttons.iter().find(|b| b.as_str() == *a))
                            .cloned(),
                    )
                    .collect::<Vec<Id>>();
                let context = TypedValue {
                    schema: action_context(),
                    value: json_object(json!({ "availableActions": actions })),
                };
                (port.port_id.clone(), Arc::new(context))
            })
            .collect();
        Self { offered, echoes: 0 }
    }
}

impl Task for PadEchoTask {
    fn bootstrap(
        &mut self,
        _episode: &Id,
        initial: &TypedValue,
        bindings: &[PortBinding],
        _memory: Option<flysim_component::MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError> {
        for binding in bindings {
            pad_word(initial, &binding.port_id)?;
        }
        Ok(Bootstrap {
            contexts: contexts_by_port(bindings, &self.offered)?,
            progress: json!({"echoes": self.echoes}),
            events: Vec::new(),
            variables: None,
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
                .ok_or_else(|| {
                    TaskError::Mismatch(format!("no control for port `{}`", binding.port_id))
                })?;
            let word = pad_word(t.new, &binding.port_id)?;
            let held = held_bits(control);
            if word & CHECKED != held {
                return Err(TaskError::Mismatch(format!(
                    "port {}: the console read the buttons {:08x} in field {next}, the batch of step {} held {held:08x}",
                    binding.port_id,
                    word & CHECKED,
                    t.step
                )));
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
                    rule_id: task_id("echo")?,
                    value: 1.0,
                });
                events.push(TaskEvent {
                    id: event,
                    kind_id: task_id("echo")?,
                    source_step: next,
                    agent_id: Some(binding.agent_id.clone()),
                    payload: TypedValue {
                        schema: echo_event(),
                        value: json_object(
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
            contexts: contexts_by_port(t.bindings, &self.offered)?,
            progress: json!({"echoes": self.echoes}),
            events,
            episode_request: None,
            variables: None,
        })
    }

    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Ok(self.echoes.to_le_bytes().to_vec())
    }

    fn validate_restore(&self, ledger: &[u8]) -> Result<(), TaskError> {
        if ledger.len() == 8 {
            Ok(())
        } else {
            Err(TaskError::Ledger(format!("a {TASK_ID} ledger is 8 bytes")))
        }
    }

    fn install_restore(&mut self, ledger: &[u8]) -> Result<(), TaskError> {
        self.validate_restore(ledger)?;
        let bytes: [u8; 8] = ledger
            .try_into()
            .map_err(|_| TaskError::Ledger("8 bytes".to_owned()))?;
        self.echoes = u64::from_le_bytes(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use flysim_component::schemas::action_decision;
    use flysim_types::workers::{ButtonState, ControllerSchema};

    use super::*;
    use crate::config::Mode;
    use crate::fieldcount;

    fn id(text: &str) -> Id {
        Id::parse(text).unwrap()
    }

    fn port(port_id: &str, buttons: &[&str]) -> PlanPort {
        PlanPort {
            port_id: id(port_id),
            controls: ControllerSchema {
                schema: action_decision(),
                buttons: buttons.iter().map(|b| id(b)).collect(),
                axes: Vec::new(),
            },
        }
    }

    fn ports() -> Vec<PlanPort> {
        vec![
            port("p1", &["z", "d-up", "a", "l"]),
            port("p2", &["a", "b", "start"]),
        ]
    }

    fn bindings() -> Vec<PortBinding> {
        vec![
            PortBinding {
                port_id: id("p2"),
                agent_id: id("fly-b"),
            },
            PortBinding {
                port_id: id("p1"),
                agent_id: id("fly-a"),
            },
        ]
    }

    /// A test-program inspection with the given high SI words of ports 1 and 2.
    fn inspection(p1: u32, p2: u32) -> TypedValue {
        let config = fieldcount::config(
            Path::new("/usr/games/dolphin-emu"),
            crate::config::PINNED_VERSION,
            Some(Path::new("/usr/bin/Xvfb")),
            Path::new("/tmp/fieldcount.elf"),
            flysim_types::digest::sha256(b"elf"),
            vec![1, 2],
            Mode::Qt,
        );
        let mut values = vec![0u32; config.watches.len()];
        values[0] = fieldcount::MAGIC;
        values[4] = p1;
        values[6] = p2;
        crate::Observation {
            boundary: 1,
            fields: 41,
            values,
        }
        .inspection(&config)
    }

    fn control(port_id: &str, ports: &[PlanPort], down: &[&str]) -> PortControl {
        let port = ports
            .iter()
            .find(|p| p.port_id.as_str() == port_id)
            .unwrap();
        PortControl {
            port_id: id(port_id),
            buttons: port
                .controls
                .buttons
                .iter()
                .map(|b| ButtonState {
                    id: b.clone(),
                    down: down.contains(&b.as_str()),
                })
                .collect(),
            axes: Vec::new(),
        }
    }

    const NEUTRAL: u32 = 0x0080_8080;

    #[test]
    fn each_fly_is_offered_idle_and_its_ports_action_buttons_never_z() {
        let mut task = PadEchoTask::for_ports(&ports());
        let boot = task
            .bootstrap(
                &id("ep-0"),
                &inspection(NEUTRAL, NEUTRAL),
                &bindings(),
                None,
            )
            .unwrap();
        let offered = |agent: &str| boot.contexts[&id(agent)].value["availableActions"].clone();
        assert_eq!(offered("fly-a"), json!(["idle", "a", "d-up"]));
        assert_eq!(offered("fly-b"), json!(["idle", "a", "b", "start"]));
        assert_eq!(boot.progress, json!({"echoes": 0}));
    }

    #[test]
    fn every_echoed_button_is_an_event_and_a_reward_for_its_fly() {
        let ports = ports();
        let mut task = PadEchoTask::for_ports(&ports);
        let old = inspection(NEUTRAL, NEUTRAL);
        // Port 1 holds A and D-up, port 2 holds Start; the console read exactly that.
        let new = inspection(0x0188_8080, 0x1080_8080);
        let controls = [
            control("p1", &ports, &["a", "d-up"]),
            control("p2", &ports, &["start"]),
        ];
        let binds = bindings();
        let t = Transition {
            step: 4,
            episode: &id("ep-0"),
            old: &old,
            new: &new,
            controls: &controls,
            bindings: &binds,
            old_memory: None,
            new_memory: None,
        };
        let e = task.evaluate_transition(&t).unwrap();
        let ids: Vec<&str> = e.events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["ep-0.s5.echo.0", "ep-0.s5.echo.1", "ep-0.s5.echo.2"]);
        assert_eq!(e.outcomes[&id("fly-a")].rewards.len(), 2);
        assert_eq!(e.outcomes[&id("fly-b")].rewards.len(), 1);
        assert_eq!(e.events[2].agent_id, Some(id("fly-b")));
        assert_eq!(e.events[2].payload.value["button"], "start");
        assert_eq!(e.progress, json!({"echoes": 3}));
        assert_eq!(task.capture().unwrap(), 3u64.to_le_bytes());
    }

    #[test]
    fn a_batch_the_console_did_not_read_fails_the_transition() {
        let ports = ports();
        let mut task = PadEchoTask::for_ports(&ports);
        let old = inspection(NEUTRAL, NEUTRAL);
        let binds = bindings();
        // Port 1 held A, but the console read no button; then Z read without being held.
        for (p1_word, down) in [(NEUTRAL, &["a"][..]), (0x0090_8080, &[][..])] {
            let new = inspection(p1_word, NEUTRAL);
            let controls = [control("p1", &ports, down), control("p2", &ports, &[])];
            let t = Transition {
                step: 0,
                episode: &id("ep-0"),
                old: &old,
                new: &new,
                controls: &controls,
                bindings: &binds,
                old_memory: None,
                new_memory: None,
            };
            let err = task.evaluate_transition(&t).unwrap_err();
            assert!(
                matches!(&err, TaskError::Mismatch(m) if m.starts_with("port p1: the console read")),
                "{err}"
            );
        }
    }

    #[test]
    fn an_inspection_without_pad_words_is_refused() {
        let mut task = PadEchoTask::for_ports(&ports());
        let mut disc = inspection(NEUTRAL, NEUTRAL);
        disc.value.insert("values".into(), json!({"game-code": 1}));
        let err = task
            .bootstrap(&id("ep-0"), &disc, &bindings(), None)
            .unwrap_err();
        assert!(
            matches!(&err, TaskError::Mismatch(m) if m.contains("gc-fieldcount")),
            "{err}"
        );
        let mut other = inspection(NEUTRAL, NEUTRAL);
        other.schema = action_context();
        assert!(
            task.bootstrap(&id("ep-0"), &other, &bindings(), None)
                .is_err()
        );
    }

    #[test]
    fn the_ledger_round_trips_and_refuses_other_lengths() {
        let mut task = PadEchoTask::for_ports(&ports());
        task.install_restore(&7u64.to_le_bytes()).unwrap();
        assert_eq!(task.capture().unwrap(), 7u64.to_le_bytes());
        assert!(task.validate_restore(&[1, 2]).is_err());
    }
}
