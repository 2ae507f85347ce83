//! What this build can run: agent models by model kind, environment backends by backend, tasks
//! and executors by id. The launcher and the worker subcommand build workers from it; a plan
//! naming anything else is refused before anything starts (`FS0305`).
//!
//! Every model, backend and task is added by whoever links it ([`Registry::with_agent`],
//! [`Registry::with_environment`], [`Registry::with_task`]), so no backend type enters this
//! crate.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_component::{AgentFactory, BackendError, EnvironmentBackend};
use flysim_types::Digest;
use flysim_types::plan::{LaunchPlan, ModelKind, PlanEnvironment};

use crate::error::SessionError;
use flysim_component::task::{ActionExecutor, IdentityExecutor, Task};

/// Builds an environment backend for a plan's environment and its configuration digest.
pub type EnvironmentFactory = Arc<
    dyn Fn(&PlanEnvironment, Digest) -> Result<Box<dyn EnvironmentBackend>, BackendError>
        + Send
        + Sync,
>;
/// Builds the task of a plan.
pub type TaskFactory = Arc<dyn Fn(&LaunchPlan) -> Box<dyn Task> + Send + Sync>;
/// Builds one agent's executor.
pub type ExecutorFactory = Arc<dyn Fn() -> Box<dyn ActionExecutor> + Send + Sync>;

/// The components a build can run.
#[derive(Clone)]
pub struct Registry {
    agents: BTreeMap<ModelKind, AgentFactory>,
    /// By backend name.
    environments: BTreeMap<&'static str, EnvironmentFactory>,
    tasks: BTreeMap<String, TaskFactory>,
    executors: BTreeMap<String, ExecutorFactory>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field(
                "environments",
                &self.environments.keys().collect::<Vec<_>>(),
            )
            .field("tasks", &self.tasks.keys().collect::<Vec<_>>())
            .field("executors", &self.executors.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// A registry with no model, backend or task, and the component API's `direct-v1` identity
    /// executor. Whoever links components adds them (the run library registers every one this
    /// build has).
    #[must_use]
    pub fn new() -> Self {
        let mut registry = Self {
            agents: BTreeMap::new(),
            environments: BTreeMap::new(),
            tasks: BTreeMap::new(),
            executors: BTreeMap::new(),
        };
        registry
            .executors
            .insert("direct-v1".into(), Arc::new(|| Box::new(IdentityExecutor)));
        registry
    }

    /// Adds (or replaces) the model of a kind.
    #[must_use]
    pub fn with_agent(mut self, kind: ModelKind, factory: AgentFactory) -> Self {
        self.agents.insert(kind, factory);
        self
    }

    /// Adds (or replaces) the backend called `backend` (its spec's name).
    #[must_use]
    pub fn with_environment(mut self, backend: &'static str, factory: EnvironmentFactory) -> Self {
        self.environments.insert(backend, factory);
        self
    }

    /// Adds (or replaces) an executor.
    #[must_use]
    pub fn with_executor(mut self, id: &str, factory: ExecutorFactory) -> Self {
        self.executors.insert(id.to_owned(), factory);
        self
    }

    /// Adds (or replaces) a task.
    #[must_use]
    pub fn with_task(mut self, id: &str, factory: TaskFactory) -> Self {
        self.tasks.insert(id.to_owned(), factory);
        self
    }

    /// Refuses a plan that names a component this registry lacks.
    ///
    /// # Errors
    ///
    /// [`SessionError::Unavailable`] naming the first missing one.
    pub fn check(&self, plan: &LaunchPlan) -> Result<(), SessionError> {
        for profile in &plan.profiles {
            if !self.agents.contains_key(&profile.model) {
                return Err(SessionError::Unavailable {
                    what: format!("the agent model of profile `{}`", profile.id),
                    reason: format!("no {:?} model is linked into this build", profile.model),
                });
            }
        }
        if !self
            .environments
            .contains_key(plan.environment.backend.as_str())
        {
            return Err(SessionError::Unavailable {
                what: format!("environment `{}`", plan.environment.id),
                reason: format!(
                    "no `{}` environment worker is linked into this build",
                    plan.environment.backend.as_str()
                ),
            });
        }
        if !self.tasks.contains_key(plan.task.as_str()) {
            return Err(SessionError::Unavailable {
                what: format!("task `{}`", plan.task),
                reason: "this build knows the task counter-v1".into(),
            });
        }
        if !self.executors.contains_key(plan.executor.as_str()) {
            return Err(SessionError::Unavailable {
                what: format!("executor `{}`", plan.executor),
                reason: "this build knows the executor direct-v1".into(),
            });
        }
        Ok(())
    }

    pub(crate) fn agent(&self, kind: ModelKind) -> Option<AgentFactory> {
        self.agents.get(&kind).cloned()
    }

    pub(crate) fn environment(
        &self,
        env: &PlanEnvironment,
        digest: Digest,
    ) -> Result<Box<dyn EnvironmentBackend>, SessionError> {
        let factory = self.environments.get(env.backend.as_str()).ok_or_else(|| {
            SessionError::Unavailable {
                what: format!("environment `{}`", env.id),
                reason: "not linked into this build".into(),
            }
        })?;
        factory(env, digest).map_err(|e| match e {
            BackendError::Refused(refusal) => SessionError::BackendRefused(refusal),
            other => SessionError::Unavailable {
                what: format!("environment `{}`", env.id),
                reason: other.to_string(),
            },
        })
    }

    pub(crate) fn task(&self, plan: &LaunchPlan) -> Option<Box<dyn Task>> {
        self.tasks.get(plan.task.as_str()).map(|f| f(plan))
    }

    pub(crate) fn executor(&self, id: &str) -> Option<Box<dyn ActionExecutor>> {
        self.executors.get(id).map(|f| f())
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}
