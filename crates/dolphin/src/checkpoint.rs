//! Checkpoints of a Dolphin world: the save-state bytes of slot 1 plus what the world knew at the
//! boundary (its observation, field count and a digest of main memory), in one byte format.
//!
//! Layout of [`Checkpoint::to_bytes`]: the magic `FSDOLCK1`, a big-endian `u32` header length,
//! the header as RFC 8785 JSON, then the state bytes. The header names the configuration digest,
//! the slot file name, the boundary, the field count, the watched values, the memory digest and
//! the state's SHA-256 and length.

use flysim_types::Digest;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::canonical;
use crate::config::BackendConfig;
use crate::error::DolphinError;

const MAGIC: &[u8; 8] = b"FSDOLCK1";
/// The header's `format`.
const FORMAT: &str = "dolphin-checkpoint-v1";
/// The longest header a checkpoint may carry.
const MAX_HEADER: usize = 64 * 1024;
/// The bound a restored boundary and field count stay below: the world adds to both as it runs,
/// and from below half the `u64` range neither can overflow (2^63 fields at 60 a second take
/// billions of years), whatever a crafted header says.
const MAX_COUNT: u64 = 1 << 63;

/// A captured world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The configuration digest of the world it was captured from.
    pub configuration: Digest,
    /// The state file's name in `StateSaves/` (`<game id>.s01`).
    pub slot_file: String,
    /// The boundary it was captured at.
    pub boundary: u64,
    /// MemoryWatcher fields since Dolphin started, at capture.
    pub fields: u64,
    /// The watched values at the boundary, in watch order.
    pub values: Vec<u32>,
    /// SHA-256 of main memory at capture (how a restore knows the load has happened).
    pub ram: Digest,
    /// Dolphin's save state.
    pub state: Vec<u8>,
}

/// The header as read back: every member [`Checkpoint::header`] writes, and no other.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Header {
    format: String,
    configuration: Digest,
    slot_file: String,
    boundary: String,
    fields: String,
    values: Vec<u32>,
    ram: Digest,
    state_digest: Digest,
    state_length: String,
}

fn refused(reason: impl Into<String>) -> DolphinError {
    DolphinError::CheckpointRefused {
        reason: reason.into(),
    }
}

impl Checkpoint {
    /// SHA-256 of the state bytes.
    #[must_use]
    pub fn state_digest(&self) -> Digest {
        flysim_types::digest::sha256(&self.state)
    }

    /// The checkpoint as bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let json = canonical::text(&self.header());
        // A header of more than 4 GiB would need a watch list of a billion values; its length
        // is then written as the largest `u32`, which the reader refuses.
        let len = u32::try_from(json.len()).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(12 + json.len() + self.state.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(json.as_bytes());
        out.extend_from_slice(&self.state);
        out
    }

    /// The header as JSON, built member by member (the members [`Header`] reads back).
    fn header(&self) -> Value {
        let mut header = Map::new();
        let mut put = |key: &str, value: Value| header.insert(key.to_owned(), value);
        put("format", Value::from(FORMAT));
        put("configuration", Value::from(self.configuration.hex()));
        put("slotFile", Value::from(self.slot_file.as_str()));
        put("boundary", Value::from(self.boundary.to_string()));
        put("fields", Value::from(self.fields.to_string()));
        put("values", Value::from(self.values.clone()));
        put("ram", Value::from(self.ram.hex()));
        put("stateDigest", Value::from(self.state_digest().hex()));
        put("stateLength", Value::from(self.state.len().to_string()));
        Value::Object(header)
    }

    /// Reads a checkpoint, checking its framing and the state's digest and length.
    ///
    /// # Errors
    ///
    /// [`DolphinError::CheckpointRefused`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DolphinError> {
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| refused("not a Dolphin checkpoint (no FSDOLCK1 magic)"))?;
        let (len, rest) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| refused("truncated header length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if len > MAX_HEADER || len > rest.len() {
            return Err(refused("truncated or oversized header"));
        }
        let (json, state) = rest.split_at(len);
        let value = flysim_types::json::parse_document(json).map_err(|e| refused(e.to_string()))?;
        let header: Header = serde_json::from_value(value).map_err(|e| refused(e.to_string()))?;
        if header.format != FORMAT {
            return Err(refused(format!("unknown format {:?}", header.format)));
        }
        let number = |text: &str, what: &str| {
            text.parse::<u64>()
                .map_err(|_| refused(format!("{what} is not a U64")))
        };
        if number(&header.state_length, "stateLength")? != state.len() as u64
            || flysim_types::digest::sha256(state) != header.state_digest
        {
            return Err(refused(
                "the state bytes do not match their length and digest",
            ));
        }
        let checkpoint = Self {
            configuration: header.configuration,
            slot_file: header.slot_file,
            boundary: number(&header.boundary, "boundary")?,
            fields: number(&header.fields, "fields")?,
            values: header.values,
            ram: header.ram,
            state: state.to_vec(),
        };
        checkpoint.check_shape()?;
        Ok(checkpoint)
    }

    fn check_shape(&self) -> Result<(), DolphinError> {
        let name_ok = self.slot_file.ends_with(".s01")
            && self.slot_file.len() > 4
            && !self.slot_file.starts_with('.')
            && self
                .slot_file
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !name_ok {
            return Err(refused(format!(
                "{:?} is not a slot-1 state file name",
                self.slot_file
            )));
        }
        if self.state.is_empty() {
            return Err(refused("the state is empty"));
        }
        Ok(())
    }

    /// Refuses a checkpoint of another configuration (version, content, ports, watches, mode).
    ///
    /// # Errors
    ///
    /// [`DolphinError::CheckpointRefused`].
    pub fn check_for(&self, config: &BackendConfig) -> Result<(), DolphinError> {
        self.check_shape()?;
        if self.configuration != config.digest() {
            return Err(refused(format!(
                "it was captured under configuration {}, this world is {}",
                self.configuration,
                config.digest()
            )));
        }
        if self.values.len() != config.watches.len() {
            return Err(refused("its watched values do not match the watch list"));
        }
        self.check_counts()
    }

    /// Refuses a boundary or field count the world could overflow by running on from it.
    fn check_counts(&self) -> Result<(), DolphinError> {
        for (what, count) in [("boundary", self.boundary), ("field count", self.fields)] {
            if count >= MAX_COUNT {
                return Err(refused(format!(
                    "its {what} {count} is not below 2^63: the world could not run on from it"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(values: Vec<u32>, slot_file: &str) -> Checkpoint {
        Checkpoint {
            configuration: flysim_types::digest::sha256(b"configuration"),
            slot_file: slot_file.to_owned(),
            boundary: 17,
            fields: u64::MAX,
            values,
            ram: flysim_types::digest::sha256(b"ram"),
            state: b"state bytes".to_vec(),
        }
    }

    /// The header of `c` as it was first written: the derived serialisation, canonicalised.
    fn serialised_header(c: &Checkpoint) -> String {
        let header = Header {
            format: FORMAT.into(),
            configuration: c.configuration,
            slot_file: c.slot_file.clone(),
            boundary: c.boundary.to_string(),
            fields: c.fields.to_string(),
            values: c.values.clone(),
            ram: c.ram,
            state_digest: c.state_digest(),
            state_length: c.state.len().to_string(),
        };
        flysim_types::json::to_canonical(&serde_json::to_value(&header).unwrap()).unwrap()
    }

    #[test]
    fn the_bytes_frame_the_serialised_header_and_read_back() {
        for c in [
            checkpoint(vec![0, 1, u32::MAX], "GFCE01.s01"),
            checkpoint(Vec::new(), "odd\"name\u{1}\u{e000}.s01"),
        ] {
            let json = serialised_header(&c);
            let mut expected = MAGIC.to_vec();
            expected.extend_from_slice(&u32::try_from(json.len()).unwrap().to_be_bytes());
            expected.extend_from_slice(json.as_bytes());
            expected.extend_from_slice(&c.state);
            assert_eq!(c.to_bytes(), expected);
        }
        let c = checkpoint(vec![3, 4], "GFCE01.s01");
        assert_eq!(Checkpoint::from_bytes(&c.to_bytes()).unwrap(), c);
    }

    #[test]
    fn counts_the_world_could_overflow_are_refused() {
        let mut c = checkpoint(Vec::new(), "GFCE01.s01");
        c.fields = MAX_COUNT - 1;
        c.check_counts().unwrap();
        for (boundary, fields) in [(17, MAX_COUNT), (MAX_COUNT, 17), (u64::MAX, u64::MAX)] {
            c.boundary = boundary;
            c.fields = fields;
            let err = c.check_counts().unwrap_err();
            assert_eq!(err.code_str(), "FS0808", "{err}");
            assert!(err.to_string().contains("not below 2^63"), "{err}");
        }
    }
}
