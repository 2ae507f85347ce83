//! A world's memory at one boundary, as a task reads it: one or more spans of bytes, each at its
//! first address. The Game Boy gives one span, its whole 64 KiB address space (the `memory`
//! inspection artifact, a flat image from address 0); a backend that can only watch chosen
//! addresses gives one span per watched value. A task asks for `width` bytes at an address and
//! gets them only when one span holds them all.
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

/// One span held by value (a flat image), or several borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spans<'a> {
    One(MemorySpan<'a>),
    Many(&'a [MemorySpan<'a>]),
}

impl<'a> MemoryView<'a> {
    /// The memory made of `spans` (in any order; a read is served by the first that holds it).
    #[must_use]
    pub fn new(spans: &'a [MemorySpan<'a>]) -> Self {
        Self {
            spans: Spans::Many(spans),
        }
    }

    /// A flat image: `bytes[0]` is at address `start`.
    #[must_use]
    pub fn flat(start: u32, bytes: &'a [u8]) -> Self {
        Self {
            spans: Spans::One(MemorySpan { start, bytes }),
        }
    }

    /// The `width` bytes from `address`, when one span holds them all.
    #[must_use]
    pub fn read(&self, address: u32, width: usize) -> Option<&'a [u8]> {
        let one;
        let spans = match &self.spans {
            Spans::One(span) => {
                one = [*span];
                &one[..]
            }
            Spans::Many(spans) => spans,
        };
        spans.iter().find_map(|span| {
            let offset = usize::try_from(address.checked_sub(span.start)?).ok()?;
            span.bytes.get(offset..offset.checked_add(width)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{MemorySpan, MemoryView};

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
        let flat = MemoryView::flat(0x100, &low);
        assert_eq!(flat.read(0x102, 2), Some(&[3u8, 4][..]));
        assert_eq!(flat.read(0x102, 3), None);
    }
}
