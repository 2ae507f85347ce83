//! The compact binary connectome file, format `flycsr` version 1.
//!
//! Everything is little-endian; every section starts at an 8-byte-aligned offset.
//!
//! ```text
//! offset  size  field
//!      0     8  magic  "FLYCSR" 0x00 0x1a
//!      8     4  u32 format version = 1
//!     12     4  u32 section count S
//!     16     8  u64 neurons N
//!     24     8  u64 edges E
//!     32  24*S  section table: S x (u32 kind, u32 reserved = 0, u64 offset, u64 length)
//!      …        sections, in table order, each at the first 8-aligned offset after the
//!               previous one, zero padding between
//!    L-32    32  SHA-256 of bytes [0, L-32)
//! ```
//!
//! Section kinds, strictly ascending in the table: 1 `indptr` (u32 × (N+1)), 2 `targets`
//! (u32 × E), 3 `weights` (i16 × E), 4 `meta` (RFC 8785 canonical JSON object of strings),
//! 5 `names` (optional: N UTF-8 names joined by LF). Kinds 1–4 are required; any other kind is
//! refused. The sections must be packed exactly as above and the trailer must follow the last
//! section (after its padding), so one connectome has exactly one encoding; its SHA-256 is the
//! connectome's identity ([`crate::Connectome::digest`]).
//!
//! Reading checks, in order: length and magic (`FS0701`), version (`FS0702`), the trailer
//! (`FS0703`), then the header, table and CSR rules (`FS0704`).

use std::collections::BTreeMap;

use flysim_types::digest::sha256;
use serde_json::Value;

use crate::connectome::{Connectome, validate};
use crate::error::BrainError;

/// The file magic.
pub const MAGIC: [u8; 8] = *b"FLYCSR\0\x1a";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Bytes of the fixed header before the section table.
const HEADER: usize = 32;
/// Bytes of one section-table entry.
const ENTRY: usize = 24;
/// Bytes of the trailer.
const TRAILER: usize = 32;

const KIND_INDPTR: u32 = 1;
const KIND_TARGETS: u32 = 2;
const KIND_WEIGHTS: u32 = 3;
const KIND_META: u32 = 4;
const KIND_NAMES: u32 = 5;

fn align8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// The canonical JSON of a metadata map.
fn meta_bytes(meta: &BTreeMap<String, String>) -> Vec<u8> {
    let object: serde_json::Map<String, Value> = meta
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    flysim_types::json::to_canonical_bytes(&Value::Object(object))
        .unwrap_or_else(|e| unreachable!("an object of strings is always canonical JSON: {e}"))
}

/// Encodes a connectome (its one canonical encoding).
#[must_use]
pub fn encode(c: &Connectome) -> Vec<u8> {
    encode_parts(
        &c.indptr,
        &c.targets,
        &c.weights,
        c.names.as_deref(),
        &c.meta,
    )
}

/// The encoding of a connectome's parts, which [`validate`] accepted: what [`encode`] writes,
/// and what [`Connectome::from_csr`] hashes into the digest before the connectome exists.
pub(crate) fn encode_parts(
    indptr: &[u32],
    targets: &[u32],
    weights: &[i16],
    names: Option<&[String]>,
    meta: &BTreeMap<String, String>,
) -> Vec<u8> {
    // Validated: at least one row, fewer than `u32::MAX` neurons.
    let neurons = indptr.len().saturating_sub(1) as u64;
    let edges = targets.len() as u64;
    let mut sections: Vec<(u32, Vec<u8>)> = vec![
        (
            KIND_INDPTR,
            indptr.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        (
            KIND_TARGETS,
            targets.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        (
            KIND_WEIGHTS,
            weights.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        (KIND_META, meta_bytes(meta)),
    ];
    if let Some(names) = names {
        sections.push((KIND_NAMES, names.join("\n").into_bytes()));
    }
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    out.extend_from_slice(&neurons.to_le_bytes());
    out.extend_from_slice(&edges.to_le_bytes());
    let mut offset = align8(HEADER + ENTRY * sections.len());
    for (kind, bytes) in &sections {
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        offset = align8(offset + bytes.len());
    }
    for (_, bytes) in &sections {
        out.resize(align8(out.len()), 0);
        out.extend_from_slice(bytes);
    }
    out.resize(align8(out.len()), 0);
    let digest = sha256(&out);
    out.extend_from_slice(digest.as_bytes());
    out
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// The magic, length, version and trailer checks (`FS0701`–`FS0703`); the bytes before the
/// trailer.
fn envelope(bytes: &[u8]) -> Result<&[u8], BrainError> {
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        let reason = if bytes.len() < 8 {
            format!("{} bytes is shorter than the magic", bytes.len())
        } else {
            format!("the first 8 bytes are {:02x?}", &bytes[..8])
        };
        return Err(BrainError::NotAConnectome { reason });
    }
    if bytes.len() < HEADER + TRAILER {
        return Err(BrainError::NotAConnectome {
            reason: format!("{} bytes is shorter than header and trailer", bytes.len()),
        });
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(BrainError::UnsupportedVersion { version });
    }
    let body = &bytes[..bytes.len() - TRAILER];
    let computed = sha256(body);
    if computed.as_bytes()[..] != bytes[body.len()..] {
        let mut stored = [0u8; 32];
        stored.copy_from_slice(&bytes[body.len()..]);
        return Err(BrainError::ChecksumMismatch {
            stored: flysim_types::Digest::from_bytes(stored).hex(),
            computed: computed.hex(),
        });
    }
    Ok(body)
}

/// Decodes and checks a connectome file.
///
/// # Errors
///
/// `FS0701`–`FS0704` as described in the module documentation.
pub fn decode(bytes: &[u8]) -> Result<Connectome, BrainError> {
    let body = envelope(bytes)?;
    let count = u32_at(body, 12) as usize;
    let neurons = u64_at(body, 16);
    let edges = u64_at(body, 24);
    if !(4..=5).contains(&count) {
        return Err(BrainError::malformed(format!(
            "{count} sections; version 1 has 4 or 5"
        )));
    }
    if neurons == 0 || neurons >= u64::from(u32::MAX) || edges > u64::from(u32::MAX) {
        return Err(BrainError::malformed(format!(
            "counts out of range: {neurons} neurons, {edges} edges"
        )));
    }
    let table_end = HEADER + ENTRY * count;
    if body.len() < table_end {
        return Err(BrainError::malformed("the section table runs past the end"));
    }
    let mut next = align8(table_end);
    let mut sections: Vec<(u32, &[u8])> = Vec::with_capacity(count);
    for s in 0..count {
        let at = HEADER + ENTRY * s;
        let kind = u32_at(body, at);
        let reserved = u32_at(body, at + 4);
        let offset = u64_at(body, at + 8);
        let length = u64_at(body, at + 16);
        if kind != s as u32 + 1 {
            return Err(BrainError::malformed(format!(
                "section {s} has kind {kind}; kinds are 1..=5 in order"
            )));
        }
        if reserved != 0 {
            return Err(BrainError::malformed(format!(
                "section {s}: reserved field is {reserved}"
            )));
        }
        if offset != next as u64 {
            return Err(BrainError::malformed(format!(
                "section {s} starts at {offset}, expected {next}"
            )));
        }
        let end = usize::try_from(offset.saturating_add(length))
            .ok()
            .filter(|&e| e <= body.len())
            .ok_or_else(|| BrainError::malformed(format!("section {s} runs past the end")))?;
        sections.push((kind, &body[offset as usize..end]));
        next = align8(end);
    }
    if next != body.len() {
        return Err(BrainError::malformed(format!(
            "the trailer is at {}, but the sections end (padded) at {next}",
            body.len()
        )));
    }
    let n = neurons as usize;
    let e = edges as usize;
    let want = |kind: u32, len: usize, what: &str| -> Result<&[u8], BrainError> {
        let (_, data) = sections[kind as usize - 1];
        if data.len() != len {
            return Err(BrainError::malformed(format!(
                "{what} section is {} bytes, expected {len}",
                data.len()
            )));
        }
        Ok(data)
    };
    let indptr: Vec<u32> = want(KIND_INDPTR, 4 * (n + 1), "indptr")?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let targets: Vec<u32> = want(KIND_TARGETS, 4 * e, "targets")?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let weights: Vec<i16> = want(KIND_WEIGHTS, 2 * e, "weights")?
        .chunks_exact(2)
        .map(|c| i16::from_le_bytes([c[0], c[1]]))
        .collect();
    let meta_raw = sections[KIND_META as usize - 1].1;
    let meta = parse_meta(meta_raw)?;
    let names = match sections.get(KIND_NAMES as usize - 1) {
        Some((_, raw)) => {
            let text = std::str::from_utf8(raw)
                .map_err(|_| BrainError::malformed("names are not UTF-8"))?;
            Some(text.split('\n').map(str::to_owned).collect::<Vec<_>>())
        }
        None => None,
    };
    validate(&indptr, &targets, &weights, names.as_deref(), &meta)?;
    let c = Connectome::from_csr(indptr, targets, weights, names, meta)?;
    let canonical = encode(&c);
    if canonical != bytes {
        return Err(BrainError::malformed(
            "the file is not in its canonical encoding (non-zero padding or non-canonical metadata)",
        ));
    }
    Ok(c)
}

fn parse_meta(raw: &[u8]) -> Result<BTreeMap<String, String>, BrainError> {
    let object = flysim_types::json::parse_object(raw)
        .map_err(|e| BrainError::malformed(format!("metadata is not a JSON object: {e}")))?;
    object
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Err(BrainError::malformed(format!(
                "metadata `{k}` is {other}, not a string"
            ))),
        })
        .collect()
}
