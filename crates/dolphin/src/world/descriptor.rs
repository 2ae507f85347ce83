//! The world's environment descriptor and the contract's names for its parts: the NTSC field
//! as step duration, the port ids `p1` .. `p4`, the recovery and the determinism it claims.
//!
//! It knows what the contract says of a Dolphin world; it does not know how the world steps or
//! how the replay check behind `fixed-build` runs (the `replay` module).

use flysim_types::workers::{Determinism, EnvironmentDescriptor, PortDescriptor, Recovery};
use flysim_types::{Id, RationalNs};
use serde_json::json;

use super::DolphinWorld;
use super::observation::inspection_schema;
use crate::canonical;
use crate::config::{Mode, PINNED_VERSION};

/// The world time of one NTSC field: 1001/60000 s = 50050000/3 ns.
#[must_use]
pub fn field_duration() -> RationalNs {
    // 50050000/3 is reduced with a non-zero denominator, so `new` accepts it (a test pins the
    // value); the fallback is never taken.
    crate::SPEC.step_duration().unwrap_or(RationalNs::ZERO)
}

/// The port id the contract knows GameCube port `n` by: `p1` .. `p4`.
#[must_use]
pub fn port_id(port: u8) -> Id {
    match port {
        1 => Id::from_static("p1"),
        2 => Id::from_static("p2"),
        3 => Id::from_static("p3"),
        4 => Id::from_static("p4"),
        // No GameCube port, but still spelled `p<n>`: a letter and digits are always an id.
        _ => Id::parse(&format!("p{port}")).unwrap_or_else(|_| Id::from_static("p")),
    }
}

impl DolphinWorld {
    /// The environment descriptor: NTSC fields, the GameCube pad on every port, the watch list
    /// as inspection schema; `exact-checkpoint` in Qt mode, `episode-restart` in nogui mode;
    /// `fixed-build` only in Qt mode on the pinned version after [`verify_replay`](Self::verify_replay)
    /// passed.
    #[must_use]
    pub fn descriptor(&self) -> EnvironmentDescriptor {
        let qt = self.config.mode == Mode::Qt;
        let backend = canonical::digest(&json!({
            "backend": "flysim-dolphin",
            "crateVersion": env!("CARGO_PKG_VERSION"),
            "dolphinVersion": self.config.version,
        }));
        EnvironmentDescriptor {
            backend_digest: backend,
            content_digest: self.config.content.sha256,
            configuration_digest: self.config.digest(),
            step_duration: field_duration(),
            ports: self
                .config
                .ports
                .iter()
                .map(|p| PortDescriptor {
                    port_id: port_id(*p),
                    controls: self.pad.clone(),
                })
                .collect(),
            inspection_schema: inspection_schema(&self.config),
            views: Vec::new(),
            audio: Vec::new(),
            recovery: if qt {
                Recovery::ExactCheckpoint
            } else {
                Recovery::EpisodeRestart
            },
            determinism: if qt && self.replay_verified && self.config.version == PINNED_VERSION {
                Determinism::FixedBuild
            } else {
                Determinism::Unverified
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_1001_60000_of_a_second() {
        let field = field_duration();
        assert_eq!(field.to_string(), "50050000/3");
        let sixty_thousand = field.checked_mul_int(60_000).unwrap();
        assert_eq!(sixty_thousand, RationalNs::from_ns(1_001_000_000_000));
    }

    #[test]
    fn the_port_ids_are_p_and_the_port_number() {
        for port in 0..=u8::MAX {
            assert_eq!(port_id(port).as_str(), format!("p{port}"));
        }
    }
}
