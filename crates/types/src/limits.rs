//! Every contract limit as a named constant (contracts §2.2 and §3.9).
//!
//! Counts are `usize`; byte sizes are `usize` too because they bound buffers. A limit is checked
//! before anything is allocated for the value it bounds.

/// Ids per `Worker.Acknowledge`.
pub const MAX_ACKNOWLEDGE: usize = 16;
/// Agents in one session.
pub const MAX_AGENTS: usize = 4;
/// Assets in one plan or descriptor (crate-chosen).
pub const MAX_ASSETS: usize = 64;
/// Attachments in one bus envelope.
pub const MAX_ATTACHMENTS: usize = 32;
/// Audio streams in one descriptor (crate-chosen).
pub const MAX_AUDIO_STREAMS: usize = 8;
/// Axes in one controller schema.
pub const MAX_AXES: usize = 16;
/// Buttons in one controller schema.
pub const MAX_BUTTONS: usize = 32;
/// Capabilities a worker may advertise (crate-chosen).
pub const MAX_CAPABILITIES: usize = 32;
/// Characters of a `WorldObservation.engineFrame`.
pub const MAX_ENGINE_FRAME_LENGTH: usize = 64;
/// Bytes of one bus envelope (the JSON object of one frame).
pub const MAX_ENVELOPE_BYTES: usize = 65_536;
/// Unicode code points of an error message.
pub const MAX_MESSAGE_CODE_POINTS: usize = 512;
/// Steps a view may lag its boundary.
pub const MAX_OBSERVATION_DELAY_STEPS: u64 = 8;
/// Largest part of a pixel aspect ratio.
pub const MAX_PIXEL_ASPECT_PART: u64 = 65_535;
/// Controller ports of one environment.
pub const MAX_PORTS: usize = 4;
/// Rate roles of one agent.
pub const MAX_RATE_ROLES: usize = 64;
/// Rewards in one operation.
pub const MAX_REWARDS_PER_OPERATION: usize = 64;
/// Sample frames in one audio chunk.
pub const MAX_SAMPLE_FRAMES: u64 = 192_000;
/// Largest payload schema version.
pub const MAX_SCHEMA_VERSION: u32 = 65_535;
/// Save slots of one environment (crate-chosen).
pub const MAX_SLOTS: usize = 4;
/// Events in one snapshot (crate-chosen).
pub const MAX_SNAPSHOT_EVENTS: usize = 64;
/// Stimuli in one operation.
pub const MAX_STIMULI_PER_OPERATION: usize = 64;
/// Majors in one `supportedMajors` list (crate-chosen).
pub const MAX_SUPPORTED_MAJORS: usize = 8;
/// Stimulus kinds one agent may support (crate-chosen).
pub const MAX_SUPPORTED_STIMULI: usize = 64;
/// Bytes of the canonical JSON of one `TypedValue`.
pub const MAX_TYPED_VALUE_BYTES: usize = 32_768;
/// Width or height of one view, in pixels.
pub const MAX_VIEW_DIMENSION: u32 = 4_096;
/// Views in one sensory input or observation list.
pub const MAX_VIEWS: usize = 8;
/// Threads one worker may be allocated.
pub const MAX_WORKER_THREADS: u32 = 4_096;

/// Nesting depth of a JSON document (arrays and objects) accepted by the strict reader.
pub const MAX_JSON_DEPTH: usize = 128;
/// Largest integer a JSON *number* may carry (2^53 - 1); larger counters are `U64` strings.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;
/// Bytes of a bus method string.
pub const MAX_METHOD_BYTES: usize = 128;
/// Lowest audio sample rate, in Hz.
pub const MIN_AUDIO_SAMPLE_RATE: u32 = 8_000;
/// Highest audio sample rate, in Hz.
pub const MAX_AUDIO_SAMPLE_RATE: u32 = 192_000;
/// Channels of one audio stream.
pub const MAX_AUDIO_CHANNELS: u32 = 8;
/// Bytes of a `contentType` string.
pub const MAX_CONTENT_TYPE_BYTES: usize = 127;
