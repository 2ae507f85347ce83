//! What a backend declares about itself, so that the composition resolver can check an
//! environment node against it and the binary can list it: its name, the identity it is pinned
//! by and that identity's grammar, its step duration, its content, its controller ports and its
//! capabilities. Each backend crate owns its [`BackendSpec`]; this module only gives the shape.
//!
//! **Invariant:** no backend is named here. A spec is plain data: nothing in it runs.

use crate::RationalNs;

/// The composition node that pins a backend's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityNode {
    /// `world "<name>"`: a world compiled into the build.
    World,
    /// `revision "<commit>"`: a source revision.
    Revision,
    /// `version "<release>"`: an installed release.
    Version,
}

impl IdentityNode {
    /// The node's name in a composition.
    #[must_use]
    pub fn node(self) -> &'static str {
        match self {
            Self::World => "world",
            Self::Revision => "revision",
            Self::Version => "version",
        }
    }
}

/// The spellings an identity may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityGrammar {
    /// One of these names.
    OneOf(&'static [&'static str]),
    /// Exactly this many lowercase hexadecimal digits (a full commit).
    LowerHex(usize),
    /// Digits, dots and dashes, starting with a digit (a release such as `5.0-17995`).
    Release,
}

impl IdentityGrammar {
    /// Whether `value` is spelled as this grammar asks.
    #[must_use]
    pub fn accepts(self, value: &str) -> bool {
        match self {
            Self::OneOf(names) => names.contains(&value),
            Self::LowerHex(len) => {
                value.len() == len
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
            Self::Release => {
                value.starts_with(|c: char| c.is_ascii_digit())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
            }
        }
    }
}

/// How a backend is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentitySpec {
    /// The node that pins it.
    pub node: IdentityNode,
    /// The spellings the node's value may take.
    pub grammar: IdentityGrammar,
    /// One line saying how to pin it, with an example.
    pub how: &'static str,
}

/// What content a backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentSpec {
    /// None: the world is compiled in.
    None,
    /// A content asset is required.
    Required {
        /// What it is, with its article (`a ROM`, `a disc image`).
        what: &'static str,
    },
}

/// The controls a backend's ports may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    /// The buttons a port may use (`None`: any declared button); in the device's own order.
    pub buttons: Option<&'static [&'static str]>,
    /// The device, for messages (e.g. `the joypad`).
    pub device: &'static str,
    /// Whether a port may declare axes.
    pub axes: bool,
}

/// What a backend can do beyond stepping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// A checkpoint restores the world exactly (`exact-checkpoint`).
    pub exact_checkpoint: bool,
    /// The backend's build is fixed by the pin: the same identity is the same code.
    pub fixed_build: bool,
}

/// Everything a backend declares about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendSpec {
    /// The name compositions and plans use (`backend="..."`).
    pub name: &'static str,
    /// One line saying what it is.
    pub summary: &'static str,
    /// How it is pinned.
    pub identity: IdentitySpec,
    /// One environment step, as `numerator / denominator` nanoseconds.
    pub step_ns: (u64, u64),
    /// Its content.
    pub content: ContentSpec,
    /// Its controller ports.
    pub ports: PortSpec,
    /// Its capabilities.
    pub capabilities: Capabilities,
    /// The parameters an environment node may set (none of today's backends takes one).
    pub parameters: &'static [&'static str],
}

impl BackendSpec {
    /// The duration of one environment step.
    ///
    /// # Errors
    ///
    /// When the declared fraction is not a positive reduced one (a backend's own bug).
    pub fn step_duration(&self) -> Result<RationalNs, crate::ContractError> {
        RationalNs::new(self.step_ns.0, self.step_ns.1)
    }
}

/// The spec named `name` among `specs`.
#[must_use]
pub fn find<'a>(specs: &'a [BackendSpec], name: &str) -> Option<&'a BackendSpec> {
    specs.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars_accept_their_spellings_and_nothing_else() {
        assert!(IdentityGrammar::LowerHex(4).accepts("09af"));
        assert!(!IdentityGrammar::LowerHex(4).accepts("09AF"));
        assert!(!IdentityGrammar::LowerHex(4).accepts("09a"));
        assert!(IdentityGrammar::Release.accepts("5.0-17995"));
        assert!(!IdentityGrammar::Release.accepts("v5.0"));
        assert!(IdentityGrammar::OneOf(&["counter-v1"]).accepts("counter-v1"));
        assert!(!IdentityGrammar::OneOf(&["counter-v1"]).accepts("counter-v2"));
    }
}
