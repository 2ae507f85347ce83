//! The task and the executor: each is one the resolver was handed, the task goes with the
//! environment's backend, and, when it was written for particular content, the environment runs
//! that content.
//!
//! It knows tasks and executors only through the specs it is handed (`TaskSpec`, declared next
//! to each task): no task name or content digest is written here. A caller that declares no
//! tasks (or no executors) gets none of these checks.

use flysim_types::plan::PlanAsset;
use flysim_types::spec::TaskSpec;

use super::{Resolver, floating};
use crate::diag::ComponentProblem;
use crate::model::Environment;
use crate::text::suggest;

/// `names` quoted and joined (`"a", "b"`).
fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "did you mean ...? this build knows ..." for `found` among `names`.
fn known_help<'a>(found: &str, what: &str, names: impl Iterator<Item = &'a str> + Clone) -> String {
    let known = quoted(names.clone());
    match suggest(found, names) {
        Some(s) => format!("did you mean \"{s}\"? this build knows the {what} {known}"),
        None => format!("this build knows the {what} {known}"),
    }
}

/// Checks the task against the declared tasks, the environment's backend (`None` when it was
/// already refused) and its content, then the executor against the declared executors.
pub(super) fn task_and_executor(
    r: &mut Resolver<'_>,
    env: &Environment,
    backend: Option<&str>,
    assets: &[PlanAsset],
) {
    let comp = r.comp;
    if let (Some(tasks), Some(task)) = (r.specs.tasks, &comp.task)
        && !floating(task.value.as_str())
    {
        match tasks.iter().find(|t| t.name == task.value.as_str()) {
            None => {
                let problem = ComponentProblem::UnknownTask {
                    src: r.src(task.span),
                    found: task.value.to_string(),
                    at: task.span.at,
                    help: Some(known_help(
                        task.value.as_str(),
                        "tasks",
                        tasks.iter().map(|t| t.name),
                    )),
                };
                r.refuse(task.span, problem);
            }
            Some(spec) => {
                if let Some(backend) = backend {
                    task_world(r, env, spec, backend, assets);
                }
            }
        }
    }
    if let (Some(executors), Some(executor)) = (r.specs.executors, &comp.executor)
        && !floating(executor.value.as_str())
        && !executors.contains(&executor.value.as_str())
    {
        let problem = ComponentProblem::UnknownExecutor {
            src: r.src(executor.span),
            found: executor.value.to_string(),
            at: executor.span.at,
            help: Some(known_help(
                executor.value.as_str(),
                "executors",
                executors.iter().copied(),
            )),
        };
        r.refuse(executor.span, problem);
    }
}

/// What worlds `spec` reads, for a help line.
fn reads(r: &Resolver<'_>, spec: &TaskSpec) -> String {
    let mut names: Vec<&str> = r
        .specs
        .backends
        .iter()
        .filter(|b| spec.goes_with(b))
        .map(|b| b.name)
        .collect();
    for name in spec.backends {
        if !names.contains(name) {
            names.push(name);
        }
    }
    if spec.reads_memory {
        format!(
            "it reads the memory of worlds that let tasks read it (the {} backend(s))",
            names.join(", ")
        )
    } else {
        format!("it reads the worlds of the {} backend(s)", names.join(", "))
    }
}

/// Refuses a task that does not read `backend`'s worlds, or not the environment's content.
fn task_world(
    r: &mut Resolver<'_>,
    env: &Environment,
    spec: &TaskSpec,
    backend: &str,
    assets: &[PlanAsset],
) {
    let Some(task) = &r.comp.task else {
        return;
    };
    let goes = r
        .specs
        .backends
        .iter()
        .find(|b| b.name == backend)
        .is_some_and(|b| spec.goes_with(b));
    if !goes {
        let here: Vec<&str> = r.specs.tasks_for(backend).map(|t| t.name).collect();
        let these = if here.is_empty() {
            format!("this build has no task for the {backend} backend")
        } else {
            format!("the {backend} backend runs {}", quoted(here.into_iter()))
        };
        let problem = ComponentProblem::TaskBackend {
            src: r.src(task.span),
            task: spec.name.to_owned(),
            backend: backend.to_owned(),
            at: task.span.at,
            help: Some(format!("{}; {these}", reads(r, spec))),
        };
        r.refuse(task.span, problem);
        return;
    }
    let (Some(wanted), Some(content)) = (spec.content, &env.content) else {
        return;
    };
    // A content asset that was refused is already reported.
    let Some(asset) = assets.iter().find(|a| a.id == content.id.value) else {
        return;
    };
    let digest = asset.digest.hex();
    if wanted.contains(&digest.as_str()) {
        return;
    }
    let at = content.sha256.as_ref().map_or(content.id.span, |s| s.span);
    let problem = ComponentProblem::TaskContent {
        src: r.src(at),
        task: spec.name.to_owned(),
        content: content.id.value.to_string(),
        at: at.at,
        digest,
        help: Some(format!(
            "it reads the memory of the content pinned sha256 {}; another game's memory means nothing to it. Declare this game's own variables with `task \"{}\" {{ variable ... }}` (docs/tasks.md), or leave `task` out to run it with nothing scored (`{}`)",
            wanted.join(" or "),
            flysim_types::memory::MEMORY_TASK,
            flysim_types::spec::NO_TASK
        )),
    };
    r.refuse(at, problem);
}
