//! A world's memory at one boundary, as a task reads it: one or more spans of bytes, each at its
//! first address. A task asks for `width` bytes at an address and gets them only when one span
//! holds them all.
//!
//! A world publishes its memory as the `memory` inspection artifact in one format for every
//! backend ([`encode_span`], [`MemoryView::encoded`]): spans one after another, each a 4-byte
//! little-endian start address, a 4-byte little-endian length and that many bytes. The Game Boy
//! gives one span, its whole 64 KiB address space from address 0; Dolphin, which can only watch
//! chosen words, one 4-byte span per watched word.
//!
//! It knows spans and addresses. It does not know where the bytes came from (an artifact, a
//! watcher, a test) or what they mean.

/// One run of bytes starting at `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySpan<'a> {
    /// The address of `bytes[0]`.
    pub start: u32,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// The readable memory of one boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryView<'a> {
    spans: Spans<'a>,
}

/// Spans borrowed as values, or the artifact's encoding of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spans<'a> {
    Many(&'a [MemorySpan<'a>]),
    Encoded(&'a [u8]),
}

/// The bytes of one span's header: start and length, each `u32` little-endian.
pub const SPAN_HEADER: usize = 8;

/// Appends the span `bytes` at `start` in the artifact's encoding.
///
/// # Panics
///
/// When `bytes` is 4 GiB or longer (no address space a task reads is).
pub fn encode_span(out: &mut Vec<u8>, start: u32, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a memory span is shorter than 4 GiB");
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The encoded spans of `bytes`, one by one; `None` for a truncated header or span.
fn decode(mut bytes: &[u8]) -> impl Iterator<Item = Option<MemorySpan<'_>>> {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let span = (|| {
            let header = bytes.get(..SPAN_HEADER)?;
            let start = u32::from_le_bytes(header[..4].try_into().ok()?);
            let len = usize::try_from(u32::from_le_bytes(header[4..].try_into().ok()?)).ok()?;
            let body = bytes.get(SPAN_HEADER..SPAN_HEADER.checked_add(len)?)?;
            bytes = &bytes[SPAN_HEADER + len..];
            Some(MemorySpan { start, bytes: body })
        })();
        if span.is_none() {
            bytes = &[];
        }
        Some(span)
    })
}

impl<'a> MemoryView<'a> {
    /// The memory made of `spans` (in any order; a read is served by the first that holds it).
    #[must_use]
    pub fn new(spans: &'a [MemorySpan<'a>]) -> Self {
        Self {
            spans: Spans::Many(spans),
        }
    }

    /// The memory a `memory` artifact's bytes encode.
    ///
    /// # Errors
    ///
    /// A message when the bytes are not whole spans.
    pub fn encoded(bytes: &'a [u8]) -> Result<Self, String> {
        if decode(bytes).any(|span| span.is_none()) {
            return Err(format!(
                "the {}-byte memory artifact is not whole spans (start, length, bytes)",
                bytes.len()
            ));
        }
        Ok(Self {
            spans: Spans::Encoded(bytes),
        })
    }

    /// The `width` bytes from `address`, when one span holds them all.
    #[must_use]
    pub fn read(&self, address: u32, width: usize) -> Option<&'a [u8]> {
        let within = |span: &MemorySpan<'a>| {
            let offset = usize::try_from(address.checked_sub(span.start)?).ok()?;
            span.bytes.get(offset..offset.checked_add(width)?)
        };
        match self.spans {
            Spans::Many(spans) => spans.iter().find_map(within),
            Spans::Encoded(bytes) => decode(bytes).flatten().find_map(|s| within(&s)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MemorySpan, MemoryView, encode_span};

    #[test]
    fn a_read_is_served_by_the_span_that_holds_every_byte() {
        let low = [1u8, 2, 3, 4];
        let high = [9u8, 8];
        let spans = [
            MemorySpan {
                start: 0x100,
                bytes: &low,
            },
            MemorySpan {
                start: 0x8000_0000,
                bytes: &high,
            },
        ];
        let memory = MemoryView::new(&spans);
        assert_eq!(memory.read(0x101, 2), Some(&[2u8, 3][..]));
        assert_eq!(memory.read(0x100, 4), Some(&low[..]));
        assert_eq!(memory.read(0x8000_0001, 1), Some(&[8u8][..]));
        // Across a span's end, before its start, between spans: none.
        assert_eq!(memory.read(0x103, 2), None);
        assert_eq!(memory.read(0xff, 1), None);
        assert_eq!(memory.read(0x200, 1), None);
        assert_eq!(memory.read(u32::MAX, 1), None);
    }

    #[test]
    fn the_artifact_encoding_reads_as_its_spans_and_refuses_a_torn_one() {
        let mut bytes = Vec::new();
        encode_span(&mut bytes, 0x8000_1800, &[0x46, 0x53, 0x47, 0x43]);
        encode_span(&mut bytes, 0x8000_1804, &[0, 0, 1, 2]);
        assert_eq!(&bytes[..8], &[0x00, 0x18, 0x00, 0x80, 4, 0, 0, 0]);
        let memory = MemoryView::encoded(&bytes).unwrap();
        assert_eq!(
            memory.read(0x8000_1800, 4),
            Some(&[0x46u8, 0x53, 0x47, 0x43][..])
        );
        assert_eq!(memory.read(0x8000_1806, 2), Some(&[1u8, 2][..]));
        // Not across two spans, even adjacent ones.
        assert_eq!(memory.read(0x8000_1802, 4), None);
        assert!(MemoryView::encoded(&bytes[..bytes.len() - 1]).is_err());
        assert!(MemoryView::encoded(&bytes[..5]).is_err());
        assert!(MemoryView::encoded(&[]).unwrap().read(0, 1).is_none());
    }
}
