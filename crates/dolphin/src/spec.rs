//! What the GameCube backend declares about itself: the composition resolver checks an
//! environment against it, and the binary lists it.

use flysim_types::spec::{
    BackendSpec, Capabilities, ContentSpec, IdentityGrammar, IdentityNode, IdentitySpec, PortSpec,
    ViewHeight, ViewSpec,
};

/// Backend `dolphin`: pinned by the installed Dolphin's release, one NTSC field per step
/// (1001/60000 s), a disc image (or the project's test program) as content, save-state
/// checkpoints; up to four pads, declared by the composition; the test program's picture as
/// view `screen`, 640 x 480, read from its framebuffer in memory (a disc image shows none: the
/// Null renderer draws nothing); MEM1 readable by tasks (the words a declared memory task reads
/// are watched).
pub const SPEC: BackendSpec = BackendSpec {
    name: "dolphin",
    summary: "A Dolphin GameCube process.",
    identity: IdentitySpec {
        node: IdentityNode::Version,
        grammar: IdentityGrammar::Release,
        how: "pin the Dolphin release: `version \"2503\"` (digits, dots and dashes)",
    },
    step_ns: (50_050_000, 3),
    content: ContentSpec::Required {
        what: "a disc image",
    },
    ports: PortSpec {
        buttons: None,
        device: "the GameCube pad",
        axes: true,
    },
    capabilities: Capabilities {
        exact_checkpoint: true,
        fixed_build: false,
    },
    parameters: &[],
    max_ports: 4,
    views: Some(&[ViewSpec {
        name: crate::xfb::VIEW,
        width: crate::fieldcount::XFB.width,
        height: ViewHeight::Rows(crate::fieldcount::XFB.height),
        formats: Some(&[crate::fieldcount::CONTENT_FORMAT]),
    }]),
    memory: &[crate::memory::MEM1],
    // Dolphin's watch list holds 64 words; the content's own profile takes up to 12.
    memory_words: Some(crate::config::MAX_WATCHES - 12),
    // The Gekko's pointers are 32-bit big-endian virtual addresses (0x80000000 is MEM1).
    memory_pointer: Some(flysim_types::memory::MemoryType::U32be),
};
