//! Seeds: the seed derivation algorithm and master seed a composition names, and each agent's
//! seed (explicit, or derived from the master seed and the agent's id).
//!
//! It does not decide whether an agent may carry an explicit seed (the agents' checks do) and
//! knows nothing of profiles, ports or the environment.

use flysim_types::plan::{PlanAgent, SeedSource};
use flysim_types::{U64, seed};

use super::{Resolver, floating};
use crate::diag::Problem;
use crate::model::Spanned;

/// Refuses a `seed-derivation` that names no algorithm, or one this build does not know.
pub(super) fn check_derivation(r: &mut Resolver<'_>, derivation: &Spanned<String>) {
    if floating(&derivation.value) {
        let problem = Problem::Unpinned {
            src: r.src(derivation.span),
            what: "`seed-derivation`".to_owned(),
            reason: format!("{:?} names no algorithm", derivation.value),
            at: derivation.span.at,
            help: Some("write `seed-derivation \"seed-derivation-v1\"`".to_owned()),
        };
        r.push(derivation.span, problem);
    } else if derivation.value != seed::ALGORITHM {
        let problem = Problem::UnknownSeedDerivation {
            src: r.src(derivation.span),
            found: derivation.value.clone(),
            at: derivation.span.at,
        };
        r.push(derivation.span, problem);
    }
}

/// The master seed as written, when it is a canonical U64 string.
pub(super) fn master_seed(r: &mut Resolver<'_>, master: &Spanned<String>) -> Option<U64> {
    match U64::parse(&master.value) {
        Ok(v) => Some(v),
        Err(e) => {
            let problem = Problem::BadValue {
                src: r.src(master.span),
                what: "`master-seed`".to_owned(),
                reason: e.to_string(),
                at: master.span.at,
                help: Some(
                    "the master seed is hashed as written, so it has one spelling: decimal digits, no sign, no leading zero, at most 18446744073709551615"
                        .to_owned(),
                ),
            };
            r.push(master.span, problem);
            None
        }
    }
}

/// Each agent's plan entry with its seed, in declaration order; an agent whose seed cannot be
/// derived is reported and left out.
pub(super) fn plan_agents(r: &mut Resolver<'_>, master_seed: U64) -> Vec<PlanAgent> {
    let comp = r.comp;
    let mut agents = Vec::new();
    for agent in &comp.agents {
        let (seed, source, material, material_digest) = match &agent.seed {
            Some(s) => (s.value, SeedSource::Explicit, None, None),
            None => match seed::derive(master_seed, &agent.id.value) {
                Ok(d) => (
                    d.seed,
                    SeedSource::Derived,
                    Some(d.material),
                    Some(d.material_digest),
                ),
                Err(_) => {
                    let problem = Problem::SeedExhausted {
                        src: r.src(agent.id.span),
                        agent: agent.id.value.to_string(),
                        at: agent.id.span.at,
                    };
                    r.push(agent.id.span, problem);
                    continue;
                }
            },
        };
        agents.push(PlanAgent {
            agent_id: agent.id.value.clone(),
            profile: agent.profile.value.clone(),
            port: agent.port.value.clone(),
            threads: agent.threads.as_ref().map_or(1, |t| t.value),
            seed,
            seed_source: source,
            material,
            material_digest,
        });
    }
    agents
}
