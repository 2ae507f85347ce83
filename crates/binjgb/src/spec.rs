//! What the Game Boy backend declares about itself: the composition resolver checks an
//! environment against it, and the binary lists it.

use flysim_types::memory::MemoryRegion;
use flysim_types::spec::{
    BackendSpec, Capabilities, ContentSpec, IdentityGrammar, IdentityNode, IdentitySpec, PortSpec,
    ViewHeight, ViewSpec,
};

use crate::{Buttons, FRAME_NS, HEIGHT, WIDTH};

/// Backend `binjgb`: pinned by the binjgb source revision (a full 40-hex commit), one Game Boy
/// frame per step (70224 cycles of a 4194304 Hz clock), a ROM as content, ports with the
/// joypad's eight buttons and no axis, and one of them (the DMG has one joypad), the LCD as its
/// one view, exact checkpoints (the core's own state), and its whole 64 KiB address space readable
/// by tasks (the memory image each step publishes: the banks mapped at that boundary).
pub const SPEC: BackendSpec = BackendSpec {
    name: "binjgb",
    summary: "The binjgb Game Boy core.",
    identity: IdentitySpec {
        node: IdentityNode::Revision,
        grammar: IdentityGrammar::LowerHex(40),
        how: "pin the binjgb source revision, a full 40-hex commit: `revision \"66d69e90b4c79ccc35a9a1976bca16093c44632e\"`",
    },
    step_ns: FRAME_NS,
    content: ContentSpec::Required { what: "a ROM" },
    ports: PortSpec {
        buttons: Some(&Buttons::NAMES),
        device: "the Game Boy joypad",
        axes: false,
    },
    capabilities: Capabilities {
        exact_checkpoint: true,
        fixed_build: true,
    },
    parameters: &[],
    max_ports: 1,
    views: Some(&[ViewSpec {
        name: crate::world::VIEW,
        width: WIDTH as u32,
        height: ViewHeight::Rows(HEIGHT as u32),
        formats: None,
    }]),
    memory: &[MemoryRegion {
        name: "address space",
        start: 0x0000,
        end: 0xffff,
    }],
    memory_words: None,
    // The SM83 addresses 64 KiB with 16-bit little-endian pointers.
    memory_pointer: Some(flysim_types::memory::MemoryType::U16le),
};
