//! Ids and counts: every profile, asset, port and agent id is declared once, there is one
//! environment, and there are no more agents and ports than the limits allow.
//!
//! It checks declarations against each other; what an agent refers to is the agents' checks,
//! what a backend allows is the environment's.

use std::collections::BTreeMap;

use flysim_types::Id;
use flysim_types::limits::{MAX_AGENTS, MAX_PORTS};

use super::Resolver;
use crate::diag::Problem;
use crate::model::{AssetDecl, Environment, Spanned};

/// Refuses repeated profile, asset and port ids and a second environment; the environment and
/// every declared asset (the profiles', then the environment's content).
pub(super) fn declarations<'c>(
    r: &mut Resolver<'c>,
) -> Option<(&'c Environment, Vec<&'c AssetDecl>)> {
    let comp = r.comp;
    r.unique("profile", comp.profiles.iter().map(|p| &p.id));
    let mut asset_decls: Vec<&AssetDecl> = comp.profiles.iter().flat_map(|p| &p.assets).collect();
    let env = comp.environments.first()?;
    for extra in comp.environments.iter().skip(1) {
        let problem = Problem::SecondEnvironment {
            src: r.src(extra.id.span),
            id: extra.id.value.to_string(),
            at: extra.id.span.at,
            first: Resolver::first(env.id.span, extra.id.span),
        };
        r.push(extra.id.span, problem);
    }
    asset_decls.extend(env.content.iter());
    r.unique("asset", asset_decls.iter().map(|a| &a.id));
    r.unique("port", env.ports.iter().map(|p| &p.id));
    Some((env, asset_decls))
}

/// Refuses repeated agent ids (FS0130), then agents and ports over their limits.
pub(super) fn agents_and_limits(r: &mut Resolver<'_>, env: &Environment) {
    let comp = r.comp;
    // Ordered by id, so many agents are checked in n log n, not n squared.
    let mut agent_ids: BTreeMap<&Id, &Spanned<Id>> = BTreeMap::new();
    for agent in &comp.agents {
        if let Some(first) = agent_ids.get(&agent.id.value) {
            let problem = Problem::RepeatedAgent {
                src: r.src(agent.id.span),
                id: agent.id.value.to_string(),
                at: agent.id.span.at,
                first: Resolver::first(first.span, agent.id.span),
            };
            r.push(agent.id.span, problem);
        } else {
            agent_ids.insert(&agent.id.value, &agent.id);
        }
    }
    for (i, agent) in comp.agents.iter().enumerate().skip(MAX_AGENTS) {
        let problem = Problem::TooManyAgents {
            src: r.src(agent.id.span),
            count: i + 1,
            limit: MAX_AGENTS,
            at: agent.id.span.at,
        };
        r.push(agent.id.span, problem);
    }
    for (i, port) in env.ports.iter().enumerate().skip(MAX_PORTS) {
        let problem = Problem::TooManyPorts {
            src: r.src(port.id.span),
            count: i + 1,
            limit: MAX_PORTS,
            at: port.id.span.at,
        };
        r.push(port.id.span, problem);
    }
}
