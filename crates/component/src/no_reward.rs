//! The task of a composition that declares none (`none-v1`): the world runs and the flies play,
//! nothing is scored. It reads no inspection, so it goes with any backend and any content (a
//! user's own ROM or disc before anyone has written a task for it).
//!
//! Each agent's decision context offers `idle` and every button of its port's controller, in
//! the controller's order, and stays the same on every step; there are no rewards, events,
//! stimuli or episode requests; the ledger is empty. It knows nothing of any backend or game.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_types::plan::LaunchPlan;
use flysim_types::workers::PortBinding;
use flysim_types::{Id, TypedValue};
use serde_json::{Value, json};

use crate::memory::MemoryView;
use crate::schemas::{IDLE, action_context};
use crate::task::{
    AgentOutcome, Bootstrap, Evaluation, Task, TaskError, Transition, contexts_by_port,
    empty_ledger, json_object,
};

/// The task's name in compositions and plans.
pub const TASK_ID: &str = flysim_types::spec::NO_TASK;

/// The no-reward task.
#[derive(Debug, Clone, Default)]
pub struct NoRewardTask {
    /// Each port's decision context.
    contexts: BTreeMap<Id, Arc<TypedValue>>,
}

impl NoRewardTask {
    /// The task for `plan`'s world: each port offers `idle` and its controller's buttons.
    #[must_use]
    pub fn for_plan(plan: &LaunchPlan) -> Self {
        Self {
            contexts: port_contexts(plan),
        }
    }
}

/// Each port's decision context in `plan`'s world: `idle` and the port's buttons, in the
/// controller's order (shared with the memory task, which offers the same actions).
pub(crate) fn port_contexts(plan: &LaunchPlan) -> BTreeMap<Id, Arc<TypedValue>> {
    plan.environment
        .ports
        .iter()
        .map(|port| {
            let actions: Vec<&str> = std::iter::once(IDLE)
                .chain(port.controls.buttons.iter().map(Id::as_str))
                .collect();
            let context = TypedValue {
                schema: action_context(),
                value: json_object(json!({ "availableActions": actions })),
            };
            (port.port_id.clone(), Arc::new(context))
        })
        .collect()
}

impl Task for NoRewardTask {
    fn bootstrap(
        &mut self,
        _episode: &Id,
        _initial: &TypedValue,
        bindings: &[PortBinding],
        _memory: Option<MemoryView<'_>>,
    ) -> Result<Bootstrap, TaskError> {
        Ok(Bootstrap {
            contexts: contexts_by_port(bindings, &self.contexts)?,
            progress: Value::Object(serde_json::Map::new()),
            events: Vec::new(),
            variables: None,
        })
    }

    fn evaluate_transition(&mut self, t: &Transition<'_>) -> Result<Evaluation, TaskError> {
        Ok(Evaluation {
            outcomes: t
                .bindings
                .iter()
                .map(|b| (b.agent_id.clone(), AgentOutcome::default()))
                .collect(),
            contexts: contexts_by_port(t.bindings, &self.contexts)?,
            progress: Value::Object(serde_json::Map::new()),
            events: Vec::new(),
            episode_request: None,
            variables: None,
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
mod tests {
    use flysim_types::workers::PortBinding;
    use flysim_types::{Id, TypedValue};

    use super::NoRewardTask;
    use crate::schemas::action_context;
    use crate::task::{Task, Transition};

    fn id(s: &str) -> Id {
        Id::parse(s).unwrap()
    }

    #[test]
    fn it_offers_idle_and_the_ports_buttons_and_never_rewards() {
        let mut task = NoRewardTask::default();
        task.contexts.insert(
            id("p1"),
            std::sync::Arc::new(TypedValue {
                schema: action_context(),
                value: crate::task::json_object(
                    serde_json::json!({"availableActions": ["idle", "a", "b"]}),
                ),
            }),
        );
        let bindings = [PortBinding {
            port_id: id("p1"),
            agent_id: id("fly-a"),
        }];
        let empty = TypedValue {
            schema: action_context(),
            value: serde_json::Map::new(),
        };
        let boot = task.bootstrap(&id("e1"), &empty, &bindings, None).unwrap();
        assert_eq!(
            boot.contexts[&id("fly-a")].value["availableActions"],
            serde_json::json!(["idle", "a", "b"])
        );
        let t = Transition {
            step: 0,
            episode: &id("e1"),
            old: &empty,
            new: &empty,
            controls: &[],
            bindings: &bindings,
            old_memory: None,
            new_memory: None,
        };
        let evaluation = task.evaluate_transition(&t).unwrap();
        assert!(evaluation.outcomes[&id("fly-a")].rewards.is_empty());
        assert!(evaluation.events.is_empty() && evaluation.episode_request.is_none());
        assert!(std::sync::Arc::ptr_eq(
            &boot.contexts[&id("fly-a")],
            &evaluation.contexts[&id("fly-a")]
        ));
        assert_eq!(task.capture().unwrap(), Vec::<u8>::new());
        assert!(task.validate_restore(&[1]).is_err());
        // A port the plan does not have is refused.
        let stray = [PortBinding {
            port_id: id("p9"),
            agent_id: id("fly-a"),
        }];
        assert!(task.bootstrap(&id("e1"), &empty, &stray, None).is_err());
    }
}
