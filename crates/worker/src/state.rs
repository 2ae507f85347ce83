//! The bytes of one worker's `State.Capture`: what the shell itself holds at a committed
//! boundary, framed around what its model or backend captured.
//!
//! ```text
//! "FLYWKST1"  8 B   magic
//! headerBytes u32   little-endian
//! header            RFC 8785 canonical JSON of [`ShellHeader`]
//! body              the model's or backend's own capture, to the end
//! ```
//!
//! The header carries the shell's part of the committed boundary: the boundary itself, and for
//! an agent its tick accumulator, warm-up ticks and retained decision context; for an
//! environment its world time. A model or backend never sees these bytes, only its body.
//!
//! **Invariant:** decoding checks everything a restore needs before anything is installed.

use flysim_types::digest::value_digest;
use flysim_types::{Digest, RationalNs, TickAccumulator, TypedValue, U64};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The magic of a worker state capture.
pub const MAGIC: &[u8; 8] = b"FLYWKST1";

/// The shell's part of a committed boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShellHeader {
    /// The committed boundary the capture was taken at.
    pub boundary: U64,
    /// The role's own part.
    pub role: RoleState,
}

/// What an agent or an environment shell holds besides its model or backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", tag = "role")]
pub enum RoleState {
    /// An agent: its clock and its retained decision context.
    #[serde(rename_all = "camelCase")]
    Agent {
        /// The tick duration the clock counts in.
        tick: RationalNs,
        /// Ticks the clock completed since warm-up.
        ticks: U64,
        /// The clock's remainder.
        remainder: RationalNs,
        /// Warm-up ticks (brain ticks = warm-up + clock ticks).
        warmup: U64,
        /// The decision context retained for the next Prepare.
        context: TypedValue,
        /// Its digest.
        context_digest: Digest,
    },
    /// An environment: its world time.
    #[serde(rename_all = "camelCase")]
    Environment {
        /// The world time of the boundary.
        world_time: RationalNs,
    },
}

impl RoleState {
    /// The clock this agent state describes.
    ///
    /// # Errors
    ///
    /// A reason when the clock's numbers are inconsistent.
    pub fn clock(&self) -> Result<Option<TickAccumulator>, String> {
        match self {
            Self::Agent {
                tick,
                ticks,
                remainder,
                ..
            } => TickAccumulator::resume(*tick, *remainder, ticks.get())
                .map(Some)
                .map_err(|e| e.to_string()),
            Self::Environment { .. } => Ok(None),
        }
    }
}

/// Frames a capture: the header, then the model's or backend's bytes.
///
/// # Errors
///
/// A reason when the header cannot be written as canonical JSON.
pub fn encode(header: &ShellHeader, body: &[u8]) -> Result<Vec<u8>, String> {
    let text =
        flysim_types::json::to_canonical(&serde_json::to_value(header).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let len = u32::try_from(text.len()).map_err(|_| "a header over 4 GiB".to_owned())?;
    let mut out = Vec::with_capacity(12 + text.len() + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// Reads a capture back: its header (checked, the context digest included) and its body.
///
/// # Errors
///
/// A reason naming what is wrong: magic, length, JSON, or a context that does not hash to its
/// digest.
pub fn decode(bytes: &[u8]) -> Result<(ShellHeader, &[u8]), String> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| "not a worker state capture (magic)".to_owned())?;
    let len_bytes: [u8; 4] = rest
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "truncated before the header length".to_owned())?;
    let len = u32::from_le_bytes(len_bytes) as usize;
    let header = rest
        .get(4..4 + len)
        .ok_or_else(|| format!("a {len}-byte header runs past the end"))?;
    let value = flysim_types::json::parse_document(header).map_err(|e| e.to_string())?;
    let header: ShellHeader = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if let RoleState::Agent {
        context,
        context_digest,
        ..
    } = &header.role
    {
        let found = value_digest(&Value::Object(
            serde_json::to_value(context)
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default(),
        ))
        .map_err(|e| e.to_string())?;
        if found != *context_digest {
            return Err(format!(
                "the retained context hashes to sha256:{found}, the header says sha256:{context_digest}"
            ));
        }
    }
    header.role.clock()?;
    Ok((header, &rest[4 + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flysim_component::schemas::action_context;

    fn agent_header() -> ShellHeader {
        let context = TypedValue {
            schema: action_context(),
            value: serde_json::json!({"availableActions": ["idle", "press"]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        let context_digest = value_digest(&serde_json::to_value(&context).unwrap_or_default())
            .unwrap_or_else(|_| unreachable!());
        ShellHeader {
            boundary: U64(7),
            role: RoleState::Agent {
                tick: RationalNs::MILLISECOND,
                ticks: U64(116),
                remainder: RationalNs::new(2_000_000, 3).unwrap_or(RationalNs::ZERO),
                warmup: U64(10),
                context,
                context_digest,
            },
        }
    }

    #[test]
    fn a_capture_reads_back_with_its_body() {
        let header = agent_header();
        let bytes = encode(&header, b"model bytes").unwrap_or_default();
        let (back, body) = decode(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, header);
        assert_eq!(body, b"model bytes");
    }

    #[test]
    fn a_damaged_capture_is_refused_before_anything_is_installed() {
        let bytes = encode(&agent_header(), b"x").unwrap_or_default();
        let mut magic = bytes.clone();
        magic[0] ^= 1;
        assert!(decode(&magic).unwrap_err().contains("magic"));
        assert!(decode(&bytes[..10]).is_err());
        // A changed context no longer hashes to its digest.
        let mut changed = bytes.clone();
        let at = changed
            .windows(5)
            .position(|w| w == b"press")
            .unwrap_or_else(|| unreachable!());
        changed[at + 4] = b't';
        let err = decode(&changed).unwrap_err();
        assert!(err.contains("hashes to"), "{err}");
        // A remainder of a whole tick is not a clock.
        let mut header = agent_header();
        if let RoleState::Agent { remainder, .. } = &mut header.role {
            *remainder = RationalNs::MILLISECOND;
        }
        let bytes = encode(&header, b"").unwrap_or_default();
        assert!(decode(&bytes).unwrap_err().contains("remainder"));
    }
}
