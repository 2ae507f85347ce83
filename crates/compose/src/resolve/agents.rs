//! The agents' bindings: each agent names a declared profile and a declared port, no port is
//! bound twice or left unbound, and an agent carries an explicit seed exactly when the
//! composition opts in.
//!
//! It checks references between declarations; it does not derive seeds, count threads or know
//! what a backend's ports may hold.

use flysim_types::Id;
use flysim_types::limits::{MAX_AGENTS, MAX_PORTS};

use super::Resolver;
use crate::diag::Problem;
use crate::model::{Agent, Environment, Spanned};
use crate::text::suggest;

/// Checks every agent's references, port binding and seed, then that every port is bound.
pub(super) fn bindings(r: &mut Resolver<'_>, env: &Environment, explicit: bool) {
    let comp = r.comp;
    let profile_ids: Vec<&str> = comp.profiles.iter().map(|p| p.id.value.as_str()).collect();
    let port_ids: Vec<&str> = env.ports.iter().map(|p| p.id.value.as_str()).collect();
    let mut bound: Vec<(&Spanned<Id>, &Spanned<Id>)> = Vec::new();
    // Agents over the limit are already refused; their bindings are not checked further.
    for agent in comp.agents.iter().take(MAX_AGENTS) {
        for (kind, reference, declared) in [
            ("profile", &agent.profile, &profile_ids),
            ("port", &agent.port, &port_ids),
        ] {
            if !declared.contains(&reference.value.as_str()) {
                unknown_reference(r, kind, reference, declared);
            }
        }
        if let Some((first, _)) = bound.iter().find(|(p, _)| p.value == agent.port.value) {
            let problem = Problem::PortBoundTwice {
                src: r.src(agent.port.span),
                port: agent.port.value.to_string(),
                agent: agent.id.value.to_string(),
                at: agent.port.span.at,
                first: Resolver::first(first.span, agent.port.span),
            };
            r.push(agent.port.span, problem);
        } else {
            bound.push((&agent.port, &agent.id));
        }
        seed_opt_in(r, agent, explicit);
    }
    for port in env.ports.iter().take(MAX_PORTS) {
        if !bound.iter().any(|(p, _)| p.value == port.id.value) {
            let problem = Problem::PortUnbound {
                src: r.src(port.id.span),
                port: port.id.value.to_string(),
                at: port.id.span.at,
            };
            r.push(port.id.span, problem);
        }
    }
}

/// Reports a reference to a `kind` not among the `declared` ids, suggesting the nearest.
fn unknown_reference(
    r: &mut Resolver<'_>,
    kind: &'static str,
    reference: &Spanned<Id>,
    declared: &[&str],
) {
    let list = if declared.is_empty() {
        format!("no {kind} is declared")
    } else {
        format!(
            "declared: {}",
            declared
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let help = match suggest(reference.value.as_str(), declared.iter().copied()) {
        Some(s) => format!("did you mean `{s}`? {list}"),
        None => list,
    };
    let problem = Problem::UnknownReference {
        src: r.src(reference.span),
        kind,
        id: reference.value.to_string(),
        at: reference.span.at,
        help: Some(help),
    };
    r.push(reference.span, problem);
}

/// Refuses an explicit seed without `explicit-seeds #true`, and a missing one with it.
fn seed_opt_in(r: &mut Resolver<'_>, agent: &Agent, explicit: bool) {
    match (&agent.seed, explicit) {
        (Some(seed), false) => {
            let problem = Problem::SeedWithoutOptIn {
                src: r.src(seed.span),
                agent: agent.id.value.to_string(),
                at: seed.span.at,
            };
            r.push(seed.span, problem);
        }
        (None, true) => {
            let problem = Problem::SeedMissing {
                src: r.src(agent.id.span),
                agent: agent.id.value.to_string(),
                at: agent.id.span.at,
            };
            r.push(agent.id.span, problem);
        }
        _ => {}
    }
}
