//! The counter arena, flysim's built-in game: the smallest world a session can drive, the task
//! that scores it, and the synthetic agent that plays it without neurons.
//!
//! - [`world`]: [`CounterArena`], a signed counter per port and one frame per observation whose
//!   pixels carry the counters (backend `arena`, world `counter-v1`).
//! - [`task`]: [`CounterTask`] (`counter-v1`), a reward for every press of an agent's own port.
//! - [`synthetic`]: [`SyntheticAgent`], seeded lanes and a fixed readout masked by the context;
//!   blind to its frames, moved by its rewards.
//! - [`schemas`]: the references of the arena's inspection and the task's events.
//!
//! **Invariant:** like every backend, it knows only the component API and the contract types:
//! no bus, session, process or clock.

pub mod schemas;
pub mod synthetic;
pub mod task;
pub mod world;

pub use synthetic::SyntheticAgent;
pub use task::CounterTask;
pub use world::CounterArena;

use flysim_types::spec::{
    BackendSpec, Capabilities, ContentSpec, IdentityGrammar, IdentityNode, IdentitySpec, PortSpec,
    ViewHeight, ViewSpec,
};

/// The arena's worlds.
pub const WORLDS: &[&str] = &["counter-v1"];

/// What the arena declares about itself: backend `arena`, world `counter-v1`, 60 Hz exactly
/// (`50000000/3` ns, a chosen rate), no content, up to four ports with any buttons and axes,
/// one view `counters` of one row per port.
pub const SPEC: BackendSpec = BackendSpec {
    name: "arena",
    summary: "The synthetic counter arena (compiled in).",
    identity: IdentitySpec {
        node: IdentityNode::World,
        grammar: IdentityGrammar::OneOf(WORLDS),
        how: "name the arena world: `world \"counter-v1\"`",
    },
    step_ns: (50_000_000, 3),
    content: ContentSpec::None,
    ports: PortSpec {
        buttons: None,
        device: "the counter arena",
        axes: true,
    },
    capabilities: Capabilities {
        exact_checkpoint: true,
        fixed_build: true,
    },
    parameters: &[],
    max_ports: flysim_types::limits::MAX_PORTS,
    views: Some(&[ViewSpec {
        name: world::VIEW,
        width: world::VIEW_WIDTH,
        height: ViewHeight::RowsPerPort(1),
        formats: None,
    }]),
    memory: &[],
    memory_words: None,
    memory_pointer: None,
};
