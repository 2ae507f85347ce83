//! Length-prefixed framing (contracts §3.2): a `u32` little-endian length, then 1..=65536 bytes.
//!
//! [`FrameDecoder`] is a push decoder over arbitrary byte chunks: it checks the length prefix
//! before allocating the body, so a hostile prefix costs nothing, and it accepts input split at
//! any byte. [`FrameReader`] drives it from an async reader; [`encode`] writes one frame.

use flysim_types::limits::MAX_ENVELOPE_BYTES;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::WireError;

/// Bytes of the length prefix.
pub const PREFIX_BYTES: usize = 4;

/// An incremental frame decoder.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    prefix: [u8; PREFIX_BYTES],
    prefix_len: usize,
    body: Option<Vec<u8>>,
    want: usize,
}

impl FrameDecoder {
    /// A decoder at a frame boundary.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the decoder sits at a frame boundary (no partial frame buffered).
    #[must_use]
    pub fn at_boundary(&self) -> bool {
        self.prefix_len == 0 && self.body.is_none()
    }

    /// Bytes reserved for the partial frame being assembled (never more than one envelope).
    #[must_use]
    pub fn buffered_capacity(&self) -> usize {
        self.body.as_ref().map_or(0, Vec::capacity)
    }

    /// Consumes bytes from `input` until a frame completes or `input` is exhausted.
    ///
    /// Returns how many bytes were consumed and the completed frame, if any.
    ///
    /// # Errors
    ///
    /// [`WireError::FrameLength`] for a zero or oversize prefix, before any body allocation.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Vec<u8>>), WireError> {
        let mut used = 0;
        if self.body.is_none() {
            let take = (PREFIX_BYTES - self.prefix_len).min(input.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&input[..take]);
            self.prefix_len += take;
            used += take;
            if self.prefix_len < PREFIX_BYTES {
                return Ok((used, None));
            }
            let length = u32::from_le_bytes(self.prefix);
            let len = usize::try_from(length).unwrap_or(usize::MAX);
            if len == 0 || len > MAX_ENVELOPE_BYTES {
                return Err(WireError::FrameLength {
                    length: u64::from(length),
                });
            }
            self.want = len;
            self.body = Some(Vec::with_capacity(len));
        }
        let Some(body) = self.body.as_mut() else {
            return Ok((used, None));
        };
        let take = (self.want - body.len()).min(input.len() - used);
        body.extend_from_slice(&input[used..used + take]);
        used += take;
        if body.len() == self.want {
            self.prefix_len = 0;
            return Ok((used, self.body.take()));
        }
        Ok((used, None))
    }
}

/// Appends one frame (prefix and body) to `out`.
///
/// The caller guarantees `body` is 1..=65536 bytes (the router and client check sizes at
/// admission); a larger body is still framed with its true length and refused by the peer.
pub fn encode(body: &[u8], out: &mut Vec<u8>) {
    encode_with(out, |out| out.extend_from_slice(body));
}

/// Appends one frame whose body `write` appends to `out`, so the body is written once, in place;
/// the length prefix (u32, little-endian) is filled in after it.
pub fn encode_with(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    write(out);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// What reading a frame ended with.
#[derive(Debug)]
pub enum ReadOutcome {
    /// One complete frame body.
    Frame(Vec<u8>),
    /// The peer closed the stream at a frame boundary.
    Closed,
    /// The stream ended inside a frame, or failed.
    Broken(String),
    /// The peer sent a frame the wire rules refuse.
    Refused(WireError),
}

/// Reads frames from an async byte stream, through a [`FrameDecoder`].
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    decoder: FrameDecoder,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps a stream.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            decoder: FrameDecoder::new(),
            buf: vec![0; 16 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Reads the next frame.
    pub async fn next(&mut self) -> ReadOutcome {
        loop {
            if self.start < self.end {
                match self.decoder.feed(&self.buf[self.start..self.end]) {
                    Ok((used, frame)) => {
                        self.start += used;
                        if let Some(frame) = frame {
                            return ReadOutcome::Frame(frame);
                        }
                    }
                    Err(e) => return ReadOutcome::Refused(e),
                }
                continue;
            }
            self.start = 0;
            self.end = 0;
            match self.inner.read(&mut self.buf).await {
                Ok(0) if self.decoder.at_boundary() => return ReadOutcome::Closed,
                Ok(0) => return ReadOutcome::Broken("the stream ended inside a frame".into()),
                Ok(n) => self.end = n,
                Err(e) => return ReadOutcome::Broken(e.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_written_in_place_is_the_frame_of_its_body() {
        let mut wire = b"before".to_vec();
        encode_with(&mut wire, |out| out.extend_from_slice(b"{\"a\":1}"));
        encode_with(&mut wire, |out| out.extend_from_slice(b"{}"));
        assert_eq!(wire, b"before\x07\0\0\0{\"a\":1}\x02\0\0\0{}");
    }

    #[test]
    fn frames_split_at_every_byte_decode() {
        let mut wire = Vec::new();
        encode(b"{\"a\":1}", &mut wire);
        encode(b"{}", &mut wire);
        let mut decoder = FrameDecoder::new();
        let mut frames = Vec::new();
        for b in &wire {
            let (used, frame) = decoder.feed(std::slice::from_ref(b)).unwrap();
            assert_eq!(used, 1);
            frames.extend(frame);
        }
        assert_eq!(frames, vec![b"{\"a\":1}".to_vec(), b"{}".to_vec()]);
        assert!(decoder.at_boundary());
    }

    #[test]
    fn zero_and_oversize_prefixes_are_refused_before_allocation() {
        let mut decoder = FrameDecoder::new();
        assert_eq!(
            decoder.feed(&0u32.to_le_bytes()).unwrap_err(),
            WireError::FrameLength { length: 0 }
        );
        let mut decoder = FrameDecoder::new();
        assert_eq!(
            decoder.feed(&u32::MAX.to_le_bytes()).unwrap_err(),
            WireError::FrameLength {
                length: u64::from(u32::MAX)
            }
        );
        let mut decoder = FrameDecoder::new();
        assert!(decoder.feed(&65_537u32.to_le_bytes()).is_err());
        let mut decoder = FrameDecoder::new();
        assert!(decoder.feed(&65_536u32.to_le_bytes()).is_ok());
    }
}
