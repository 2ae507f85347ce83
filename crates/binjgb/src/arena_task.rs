//! The task of the project's "fly arena" game (`roms/fly-arena`): `fly-arena-score-v1`.
//!
//! It reads the game's documented work RAM from the world's memory (the score is the u16
//! little-endian at `$C002`, the fly at `$C000`/`$C001`, the food at `$C004`/`$C005`):
//!
//! - every agent's decision context offers the actions `idle`, `up`, `down`, `left`, `right`;
//! - each food eaten in a transition is one `food` event, with id
//!   `<episode>.s<step>.food.<ordinal>`, and one reward of `1` (rule `food`) to the agent bound
//!   to the joypad port;
//! - progress is `{"score": n}`.
//!
//! The ledger (its checkpoint) is the last score seen, 2 bytes little-endian.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_component::schemas::{IDLE, action_context, schema_ref};
use flysim_component::task::{
    AgentOutcome, Bootstrap, Evaluation, Task, TaskError, TaskEvent, Transition, event_id,
    json_object, task_id,
};
use flysim_types::spec::TaskSpec;
use flysim_types::workers::{PortBinding, Reward};
use flysim_types::{Id, TypedValue};
use serde_json::json;

use flysim_component::MemoryView;

/// The task's id in compositions.
pub const TASK_ID: &str = "fly-arena-score-v1";
/// What the task declares: it reads the Game Boy's work RAM, laid out as the fly arena ROM
/// (`fixtures/roms/fly-arena.gb`, assembled from `roms/fly-arena/arena.asm`) lays it out.
pub const SPEC: TaskSpec = TaskSpec {
    name: TASK_ID,
    summary: "The fly arena's score: a reward for every food eaten.",
    backends: &[crate::SPEC.name],
    content: Some(&["cff175286819fb0e132b15e82dfcc995599e9d365c28b4f7aaf24dac0e5c1721"]),
    reads_memory: false,
};
/// Where the game keeps its state, as `roms/fly-arena/README.md` documents: six bytes from
/// `$C000`, the fly (x, y), the score (u16 little-endian), the food (x, y).
const STATE: u32 = 0xc000;
const STATE_BYTES: usize = 6;

/// What the game shows at one boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaState {
    /// Foods eaten since power-on.
    pub score: u16,
    /// The fly's top-left corner, in screen pixels.
    pub fly: (u8, u8),
    /// The food's top-left corner.
    pub food: (u8, u8),
}

impl ArenaState {
    /// Reads the state from a Game Boy world's memory (the six bytes it needs).
    ///
    /// # Errors
    ///
    /// When there is no memory, or it does not hold those bytes.
    pub fn read(memory: Option<MemoryView<'_>>) -> Result<Self, TaskError> {
        let bytes = memory
            .and_then(|m| m.read(STATE, STATE_BYTES))
            .ok_or_else(|| {
                TaskError::Mismatch(format!(
                    "the fly arena's state ({STATE_BYTES} bytes at {STATE:#06x}) is not in the world's memory"
                ))
            })?;
        let &[fly_x, fly_y, score_low, score_high, food_x, food_y] = bytes else {
            unreachable!("a read of {STATE_BYTES} bytes gives {STATE_BYTES}")
        };
        Ok(Self {
            score: u16::from_le_bytes([score_low, score_high]),
            fly: (fly_x, fly_y),
            food: (food_x, food_y),
        })
    }
}

/// The schema of a `food` event's payload (its digest is computed once).
#[must_use]
pub fn food_event() -> flysim_types::SchemaRef {
    static SCHEMA: std::sync::OnceLock<flysim_types::SchemaRef> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            schema_ref(
                "fly-arena-food-event",
                1,
                &[("score", "integer"), ("x", "integer"), ("y", "integer")],
            )
        })
        .clone()
}

/// The fly arena task.
#[derive(Debug, Default)]
pub struct ArenaScoreTask {
    last_score: u16,
}

impl ArenaScoreTask {
    fn contexts(bindings: &[PortBinding]) -> BTreeMap<Id, Arc<TypedValue>> {
        // The same on every step: built once, and shared.
        static CONTEXT: std::sync::OnceLock<Arc<TypedValue>> = std::sync::OnceLock::new();
        let context = CONTEXT.get_or_init(|| {
            Arc::new(TypedValue {
                schema: action_context(),
                value: json_object(
                    json!({"availableActions": [IDLE, "up", "down", "left", "right"]}),
                ),
            })
        });
        bindings
            .iter()
            .map(|b| (b.agent_id.clone(), Arc::clone(context)))
            .collect()
    }
}

impl Task for ArenaScoreTask {
    fn reads_memory(&self) -> bool {
        true
    }

    fn progress_schema(&self) -> flysim_types::SchemaRef {
        flysim_component::schemas::task_progress(&[("score", "integer")])
    }

    fn bootstrap(
        &mut self,
        _episode: &Id,
        _initial: &TypedValue,
        bindings: &[PortBinding],
        memory: Option<MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError> {
        let state = ArenaState::read(memory)?;
        self.last_score = state.score;
        Ok(Bootstrap {
            contexts: Self::contexts(bindings),
            progress: json!({"score": state.score}),
            events: Vec::new(),
            variables: None,
        })
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
        let state = ArenaState::read(t.new_memory)?;
        let next = t.step + 1;
        let eaten = state.score.wrapping_sub(self.last_score);
        let mut outcomes: BTreeMap<Id, AgentOutcome> = t
            .bindings
            .iter()
            .map(|b| (b.agent_id.clone(), AgentOutcome::default()))
            .collect();
        let mut events = Vec::new();
        for ordinal in 0..u64::from(eaten) {
            let event = event_id(t.episode, next, "food", ordinal)?;
            for binding in t.bindings {
                let outcome = outcomes.entry(binding.agent_id.clone()).or_default();
                outcome.rewards.push(Reward {
                    event_id: event.clone(),
                    rule_id: task_id("food")?,
                    value: 1.0,
                });
            }
            events.push(TaskEvent {
                id: event,
                kind_id: task_id("food")?,
                source_step: next,
                agent_id: t.bindings.first().map(|b| b.agent_id.clone()),
                payload: TypedValue {
                    schema: food_event(),
                    value: json_object(
                        json!({"score": state.score, "x": state.fly.0, "y": state.fly.1}),
                    ),
                },
            });
        }
        self.last_score = state.score;
        Ok(Evaluation {
            outcomes,
            contexts: Self::contexts(t.bindings),
            progress: json!({"score": state.score}),
            events,
            episode_request: None,
            variables: None,
        })
    }

    fn capture(&self) -> Result<Vec<u8>, TaskError> {
        Ok(self.last_score.to_le_bytes().to_vec())
    }

    fn validate_restore(&self, ledger: &[u8]) -> Result<(), TaskError> {
        if ledger.len() == 2 {
            Ok(())
        } else {
            Err(TaskError::Ledger(
                "a fly-arena ledger is 2 bytes".to_owned(),
            ))
        }
    }

    fn install_restore(&mut self, ledger: &[u8]) -> Result<(), TaskError> {
        self.validate_restore(ledger)?;
        self.last_score = u16::from_le_bytes([ledger[0], ledger[1]]);
        Ok(())
    }
}
