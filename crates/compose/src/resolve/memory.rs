//! The declared memory task: the block goes with `memory-v1` and no other task; every variable
//! lies inside a region the environment's backend lets tasks read, its type's bytes fit there
//! and it has exactly its type's options; a variable behind a pointer chain needs a backend with
//! pointers, and its first pointer must be readable (where the chain leads is known only at run
//! time); every reward and done condition names a declared variable (and a reward's port a
//! declared port); a reward pays on a condition or on rises or drops, not both; names and rules
//! are unique. Then it becomes the plan's [`MemoryTaskPlan`], which records the backend's
//! pointer type.
//!
//! It knows memory regions and pointers only through the backend spec it is handed.

use flysim_types::Id;
use flysim_types::memory::{
    MEMORY_TASK, MemoryCondition, MemoryReward, MemoryTaskPlan, MemoryType, MemoryVariable,
    aligned_words,
};
use flysim_types::spec::BackendSpec;
use std::collections::BTreeSet;

use super::Resolver;
use crate::diag::{MemoryProblem, Problem};
use crate::model::{ConditionDecl, Environment, Span, Spanned, TaskBody, VariableDecl};
use crate::text::suggest;

/// An example block for help lines.
const EXAMPLE: &str = "task \"memory-v1\" { variable \"lives\" address=0xc0a2 type=\"u8\"; reward \"lives\" weight=-1 }";

impl Resolver<'_> {
    fn memory(&mut self, span: Span, problem: MemoryProblem) {
        self.push(span, Problem::Memory(problem));
    }
}

/// The plan's memory task: `Some` for a `memory-v1` task whose block every check accepts.
pub(super) fn memory_task(
    r: &mut Resolver<'_>,
    env: &Environment,
    backend: Option<&str>,
) -> Option<MemoryTaskPlan> {
    let comp = r.comp;
    let task = comp.task.as_ref()?;
    let is_memory = task.value.as_str() == MEMORY_TASK;
    let body = match (&comp.task_body, is_memory) {
        (None, false) => return None,
        (Some(body), false) => {
            let problem = MemoryProblem::Block {
                src: r.src(body.span),
                reason: format!("task `{}` takes no block", task.value),
                at: body.span.at,
                help: Some(format!(
                    "only `{MEMORY_TASK}` declares variables, rewards and done conditions; remove the block, or write {EXAMPLE}"
                )),
            };
            r.memory(body.span, problem);
            return None;
        }
        (Some(body), true) if !body.variables.is_empty() => body,
        (body, true) => {
            let at = body.as_ref().map_or(task.span, |b| b.span);
            let problem = MemoryProblem::Block {
                src: r.src(at),
                reason: format!("task `{MEMORY_TASK}` declares no variables"),
                at: at.at,
                help: Some(format!("declare them in a block: {EXAMPLE}")),
            };
            r.memory(at, problem);
            return None;
        }
    };
    r.unique("variable", body.variables.iter().map(|v| &v.name));
    let rules: Vec<Spanned<Id>> = body
        .rewards
        .iter()
        .map(|w| w.rule.clone().unwrap_or_else(|| w.variable.clone()))
        .collect();
    r.unique("reward rule", rules.iter());
    // A backend that lets tasks read no memory does not go with the task (FS0238 says so).
    let spec = backend
        .and_then(|b| r.specs.backends.iter().find(|s| s.name == b))
        .filter(|s| !s.memory.is_empty());
    for variable in &body.variables {
        fits(r, variable);
        if let Some(spec) = spec {
            readable(r, variable, spec);
        }
    }
    names(r, env, body);
    for reward in &body.rewards {
        if let (Some(on), Some(when)) = (&reward.on, &reward.when) {
            let problem = MemoryProblem::OnWithCondition {
                src: r.src(on.span),
                rule: reward
                    .rule
                    .as_ref()
                    .unwrap_or(&reward.variable)
                    .value
                    .to_string(),
                at: on.span.at,
                condition: when.op.span.at,
                help: Some(
                    "a condition pays its weight once where it starts to hold; `on` pays the size of each rise or drop: keep one, or write two rules".to_owned(),
                ),
            };
            r.memory(on.span, problem);
        }
    }
    if let Some(spec) = spec {
        watchable(r, body, spec);
    }
    Some(MemoryTaskPlan {
        variables: body.variables.iter().map(plan_variable).collect(),
        rewards: body
            .rewards
            .iter()
            .zip(rules)
            .map(|(w, rule)| MemoryReward {
                rule: rule.value,
                variable: w.variable.value.clone(),
                weight: w.weight.value,
                when: w.when.as_ref().map(plan_condition),
                on: w.on.as_ref().map(|o| o.value),
                port: w.port.as_ref().map(|p| p.value.clone()),
            })
            .collect(),
        done: body.done.iter().map(plan_condition).collect(),
        pointer: spec.and_then(|s| s.memory_pointer),
    })
}

fn plan_variable(v: &VariableDecl) -> MemoryVariable {
    MemoryVariable {
        name: v.name.value.clone(),
        address: v.address.value,
        kind: v.kind.value,
        bytes: v.bytes.as_ref().map(|b| b.value),
        bit: v.bit.as_ref().map(|b| b.value),
        offsets: v
            .offsets
            .as_ref()
            .map(|o| o.value.clone())
            .unwrap_or_default(),
    }
}

fn plan_condition(c: &ConditionDecl) -> MemoryCondition {
    MemoryCondition {
        variable: c.variable.value.clone(),
        op: c.op.value,
        value: c.value.value,
    }
}

/// Refuses an option of another type, or a `bcd`/`bool` without its own.
fn fits(r: &mut Resolver<'_>, v: &VariableDecl) {
    let kind = v.kind.value;
    let (at, reason, help) = match (kind, &v.bytes, &v.bit) {
        (MemoryType::Bcd, Some(_), None) | (MemoryType::Bool, None, Some(_)) => return,
        (MemoryType::Bcd, None, _) => (
            v.kind.span,
            "a bcd variable says how many bytes it reads".to_owned(),
            "add `bytes=2` (1 to 4, most significant byte first)",
        ),
        (MemoryType::Bool, _, None) => (
            v.kind.span,
            "a bool variable says which bit it reads".to_owned(),
            "add `bit=0` (0 is the least significant bit)",
        ),
        (_, Some(bytes), _) => (
            bytes.span,
            format!(
                "a {} has a fixed width; only bcd takes `bytes`",
                kind.name()
            ),
            "remove `bytes`, or use type=\"bcd\"",
        ),
        (_, _, Some(bit)) => (
            bit.span,
            format!("only a bool variable reads one bit, not a {}", kind.name()),
            "remove `bit`, or use type=\"bool\"",
        ),
        (_, None, None) => return,
    };
    let problem = MemoryProblem::TypeFit {
        src: r.src(at),
        variable: v.name.value.to_string(),
        reason,
        at: at.at,
        help: Some(help.to_owned()),
    };
    r.memory(at, problem);
}

/// Refuses an address outside every region of `spec`, or a value running past its region; for
/// a variable behind a pointer chain, a backend without pointers or a first pointer that is not
/// readable.
fn readable(r: &mut Resolver<'_>, v: &VariableDecl, spec: &BackendSpec) {
    let plan = plan_variable(v);
    // What is read at the address: the value itself, or a chain's first pointer (where the chain
    // leads is known only at run time).
    let (address, mut width, mut what, mut at) = (
        plan.address,
        plan.width(),
        format!("a {}", plan.kind.name()),
        v.kind.span,
    );
    if let Some(offsets) = &v.offsets {
        let Some(pointer) = spec.memory_pointer.filter(|p| p.is_pointer()) else {
            let problem = MemoryProblem::TypeFit {
                src: r.src(offsets.span),
                variable: v.name.value.to_string(),
                reason: format!("the {} backend has no pointers to follow", spec.name),
                at: offsets.span.at,
                help: Some("remove `offsets` and read the value at its own address".to_owned()),
            };
            r.memory(offsets.span, problem);
            return;
        };
        width = pointer.fixed_width().unwrap_or(4);
        what = format!("its first pointer (a {} here)", pointer.name());
        at = offsets.span;
    }
    if spec.memory.iter().any(|m| m.holds(address, width)) {
        return;
    }
    let list: Vec<String> = spec
        .memory
        .iter()
        .map(|m| format!("{} {:#06x}..={:#06x}", m.name, m.start, m.end))
        .collect();
    let regions = format!("tasks may read {}", list.join(", "));
    if let Some(region) = spec.memory.iter().find(|m| m.holds(address, 1)) {
        let problem = MemoryProblem::TypeFit {
            src: r.src(at),
            variable: v.name.value.to_string(),
            reason: format!(
                "{what} reads {width} bytes from {address:#x}, past the end of the {} ({:#x})",
                region.name, region.end
            ),
            at: at.at,
            help: Some(format!(
                "use a narrower type or an earlier address; {regions}"
            )),
        };
        r.memory(at, problem);
        return;
    }
    let problem = MemoryProblem::Unreadable {
        src: r.src(v.address.span),
        variable: v.name.value.to_string(),
        address,
        backend: spec.name.to_owned(),
        at: v.address.span.at,
        help: Some(regions),
    };
    r.memory(v.address.span, problem);
}

/// Refuses variables that touch more words than a backend that watches words can watch.
fn watchable(r: &mut Resolver<'_>, body: &TaskBody, spec: &BackendSpec) {
    let Some(limit) = spec.memory_words else {
        return;
    };
    // A chain's first pointer is a word like any other; each link is a watch of its own, shared
    // by variables whose chains start alike.
    let pointer = spec
        .memory_pointer
        .and_then(MemoryType::fixed_width)
        .unwrap_or(4);
    let mut words = BTreeSet::new();
    let mut links = BTreeSet::new();
    for v in body.variables.iter().map(plan_variable) {
        if v.offsets.is_empty() {
            words.extend(aligned_words(v.address, v.width()));
        } else {
            words.extend(aligned_words(v.address, pointer));
            links.extend((1..=v.offsets.len()).map(|n| (v.address, v.offsets[..n].to_vec())));
        }
    }
    let watches = words.len() + links.len();
    if watches <= limit {
        return;
    }
    let problem = MemoryProblem::Block {
        src: r.src(body.span),
        reason: format!(
            "the variables need {watches} watches ({} aligned 4-byte words, {} pointer links); the {} backend watches at most {limit} for a task",
            words.len(),
            links.len(),
            spec.name
        ),
        at: body.span.at,
        help: Some("declare fewer variables, or ones that share words".to_owned()),
    };
    r.memory(body.span, problem);
}

/// Refuses a reward or condition naming an undeclared variable, or a reward's undeclared port.
fn names(r: &mut Resolver<'_>, env: &Environment, body: &TaskBody) {
    let variables: Vec<&str> = body
        .variables
        .iter()
        .map(|v| v.name.value.as_str())
        .collect();
    let ports: Vec<&str> = env.ports.iter().map(|p| p.id.value.as_str()).collect();
    let mut named: Vec<(&'static str, &Spanned<Id>)> = Vec::new();
    for reward in &body.rewards {
        named.push(("variable", &reward.variable));
        if let Some(port) = &reward.port {
            named.push(("port", port));
        }
    }
    named.extend(body.done.iter().map(|d| ("variable", &d.variable)));
    for (what, name) in named {
        let known = if what == "port" { &ports } else { &variables };
        if known.contains(&name.value.as_str()) {
            continue;
        }
        let list = known
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match suggest(name.value.as_str(), known.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? declared: {list}"),
            None => format!("declared: {list}"),
        };
        let problem = MemoryProblem::Unknown {
            src: r.src(name.span),
            what,
            found: name.value.to_string(),
            at: name.span.at,
            help: Some(help),
        };
        r.memory(name.span, problem);
    }
}
