//! Seed derivation v1 (seeds/seed-derivation-v1.md), exactly.
//!
//! ```text
//! material = "flybrain/seed-derivation-v1" LF masterSeed LF agentId LF
//! digest   = SHA-256(material)
//! seed     = the first nonzero big-endian u32 lane of digest, as a two's-complement i32
//! ```
//!
//! If all eight lanes are zero the material is rehashed with a counter suffix (`1` LF, `2` LF,
//! `3` LF); four exhausted rounds is an error, never a fallback seed. The algorithm id is part of
//! composition identity: changing any byte of it needs `seed-derivation-v2`.

use std::collections::BTreeSet;

use crate::digest::sha256;
use crate::error::ContractError;
use crate::scalar::{Digest, Id, U64};

/// The algorithm id recorded in plans and manifests.
pub const ALGORITHM: &str = "seed-derivation-v1";
/// The domain-separating prefix of the material.
pub const PREFIX: &str = "flybrain/seed-derivation-v1";
/// Hash rounds before derivation gives up (the first plus three counter rehashes).
pub const ROUNDS: u32 = 4;

/// One agent's derived seed with everything needed to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedSeed {
    /// The agent.
    pub agent_id: Id,
    /// The exact bytes hashed in the first round.
    pub material: String,
    /// SHA-256 of `material`.
    pub material_digest: Digest,
    /// The seed handed to `Agent.Initialize`.
    pub seed: i32,
}

/// The first-round material for a master seed and agent.
#[must_use]
pub fn material(master_seed: U64, agent_id: &Id) -> String {
    format!("{PREFIX}\n{master_seed}\n{agent_id}\n")
}

/// The first nonzero lane of a digest, as `i32`.
#[must_use]
pub fn first_nonzero_lane(digest: &Digest) -> Option<i32> {
    digest
        .as_bytes()
        .chunks_exact(4)
        .map(|lane| u32::from_be_bytes([lane[0], lane[1], lane[2], lane[3]]))
        .find(|&lane| lane != 0)
        .map(|lane| i32::from_ne_bytes(lane.to_ne_bytes()))
}

/// Derives one agent's seed.
///
/// # Errors
///
/// [`ContractError::SeedRoundsExhausted`] if four rounds find no nonzero lane.
pub fn derive(master_seed: U64, agent_id: &Id) -> Result<DerivedSeed, ContractError> {
    derive_with(master_seed, agent_id, sha256)
}

/// [`derive()`](fn@derive) with the hash function injected, so the exhaustion rule can be tested.
///
/// # Errors
///
/// As [`derive()`](fn@derive).
pub fn derive_with(
    master_seed: U64,
    agent_id: &Id,
    hash: impl Fn(&[u8]) -> Digest,
) -> Result<DerivedSeed, ContractError> {
    let material = material(master_seed, agent_id);
    let material_digest = hash(material.as_bytes());
    let mut digest = material_digest;
    for round in 1..=ROUNDS {
        if let Some(seed) = first_nonzero_lane(&digest) {
            return Ok(DerivedSeed {
                agent_id: agent_id.clone(),
                material,
                material_digest,
                seed,
            });
        }
        if round < ROUNDS {
            digest = hash(format!("{material}{round}\n").as_bytes());
        }
    }
    Err(ContractError::SeedRoundsExhausted {
        agent_id: agent_id.to_string(),
    })
}

/// Derives seeds for every agent of a composition, in the order given.
///
/// # Errors
///
/// [`ContractError::RepeatedAgent`] when an id appears twice (it would share a seed), or a
/// derivation error.
pub fn derive_all(master_seed: U64, agent_ids: &[Id]) -> Result<Vec<DerivedSeed>, ContractError> {
    let mut seen = BTreeSet::new();
    for id in agent_ids {
        if !seen.insert(id) {
            return Err(ContractError::RepeatedAgent {
                agent_id: id.to_string(),
            });
        }
    }
    agent_ids.iter().map(|id| derive(master_seed, id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Id {
        Id::parse(s).unwrap()
    }

    #[test]
    fn published_vectors_reproduce() {
        assert_eq!(derive(U64(0), &id("fly-a")).unwrap().seed, 1_828_176_714);
        assert_eq!(derive(U64(0), &id("fly-b")).unwrap().seed, 1_218_785_088);
        let m42: Vec<i32> = ["fly-a", "fly-b", "fly-c", "fly-d"]
            .iter()
            .map(|a| derive(U64(42), &id(a)).unwrap().seed)
            .collect();
        assert_eq!(
            m42,
            [-184_946_063, 535_504_990, -1_247_653_395, -479_367_616]
        );
    }

    #[test]
    fn material_is_exact() {
        assert_eq!(
            material(U64(0), &id("fly-a")),
            "flybrain/seed-derivation-v1\n0\nfly-a\n"
        );
    }

    #[test]
    fn zero_lanes_are_skipped_and_counter_rounds_are_used() {
        // A hash whose first round is all zero and second round has only a late nonzero lane.
        let calls = std::cell::RefCell::new(Vec::new());
        let hash = |bytes: &[u8]| {
            calls
                .borrow_mut()
                .push(String::from_utf8(bytes.to_vec()).unwrap());
            let mut d = [0u8; 32];
            if calls.borrow().len() == 2 {
                d[28..].copy_from_slice(&0x8000_0001u32.to_be_bytes());
            }
            Digest::from_bytes(d)
        };
        let derived = derive_with(U64(7), &id("fly-a"), hash).unwrap();
        assert_eq!(derived.seed, i32::MIN + 1, "high bit set means negative");
        let calls = calls.into_inner();
        assert_eq!(calls[1], "flybrain/seed-derivation-v1\n7\nfly-a\n1\n");
    }

    #[test]
    fn four_zero_rounds_is_an_error() {
        let rounds = std::cell::Cell::new(0);
        let hash = |_: &[u8]| {
            rounds.set(rounds.get() + 1);
            Digest::from_bytes([0; 32])
        };
        let err = derive_with(U64(7), &id("fly-a"), hash).unwrap_err();
        assert_eq!(err.code_str(), "FS0131");
        assert_eq!(rounds.get(), 4);
    }

    #[test]
    fn repeated_agent_is_refused() {
        let err = derive_all(U64(1), &[id("fly-a"), id("fly-b"), id("fly-a")]).unwrap_err();
        assert_eq!(
            err,
            ContractError::RepeatedAgent {
                agent_id: "fly-a".into()
            }
        );
        assert_eq!(err.code_str(), "FS0130");
    }
}
