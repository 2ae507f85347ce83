//! How a connection's envelopes travel: as frames over a byte stream (a Unix socket, the
//! byte-level in-memory pipe), or as values over an in-process [`Link`].
//!
//! The router and the client read envelopes from a `Source` and write them to a `Sink`, so
//! one connection code serves every transport. A framed source decodes each frame (its length
//! checked before allocation) and parses it with the strict envelope reader; a framed sink
//! encodes. A link hands over the envelopes themselves: a client and a router in one process
//! (the coordinator and its own router) skip the JSON round trip of every message. The router
//! still applies each rule a frame meets: a command arrives with its encoded length, which the
//! size rules read as they read a frame's, and an oversize one closes the connection with the
//! frame decoder's own error. Everything after decoding (ids, kinds, hello, bodies, attachments)
//! is checked on the envelope by the same code whatever the transport.

use std::collections::VecDeque;
use std::future::Future;
use std::io;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::WireError;
use crate::frame::{FrameReader, ReadOutcome, encode_with};
use crate::wire::Envelope;

/// What a source yields next.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// An envelope and the length of its encoding.
    Envelope(Envelope, usize),
    /// The peer ended the connection between envelopes.
    Closed,
    /// The connection broke (inside a frame, or an I/O error).
    Broken(String),
    /// The peer sent something the wire rules refuse.
    Refused(String),
}

/// Where a connection's envelopes come from.
pub(crate) trait Source: Send + 'static {
    /// The next envelope, or why there is none.
    fn next(&mut self) -> impl Future<Output = Inbound> + Send;
}

/// Where a connection's envelopes go.
pub(crate) trait Sink: Send + 'static {
    /// Sends a batch of envelopes (ids assigned), in order, emptying `batch`.
    fn send(&mut self, batch: &mut Vec<Envelope>) -> impl Future<Output = io::Result<()>> + Send;

    /// Ends the connection in this direction.
    fn close(&mut self) -> impl Future<Output = ()> + Send;
}

/// Frames read from a byte stream, parsed with the strict envelope reader.
pub(crate) struct FramedSource<R> {
    frames: FrameReader<R>,
}

impl<R: AsyncRead + Unpin> FramedSource<R> {
    pub(crate) fn new(reader: R) -> Self {
        Self {
            frames: FrameReader::new(reader),
        }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> Source for FramedSource<R> {
    async fn next(&mut self) -> Inbound {
        match self.frames.next().await {
            ReadOutcome::Frame(bytes) => match Envelope::parse(&bytes) {
                Ok(env) => Inbound::Envelope(env, bytes.len()),
                Err(e) => Inbound::Refused(e.to_string()),
            },
            ReadOutcome::Closed => Inbound::Closed,
            ReadOutcome::Broken(why) => Inbound::Broken(why),
            ReadOutcome::Refused(e) => Inbound::Refused(e.to_string()),
        }
    }
}

/// Envelopes encoded as frames onto a byte stream, one write per batch.
pub(crate) struct FramedSink<W> {
    writer: W,
    buf: Vec<u8>,
}

impl<W> FramedSink<W> {
    pub(crate) fn new(writer: W) -> Self {
        Self {
            writer,
            buf: Vec::with_capacity(64 * 1024),
        }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Sink for FramedSink<W> {
    async fn send(&mut self, batch: &mut Vec<Envelope>) -> io::Result<()> {
        self.buf.clear();
        for env in batch.drain(..) {
            encode_with(&mut self.buf, |out| env.write_to(out));
        }
        self.writer.write_all(&self.buf).await?;
        self.writer.flush().await
    }

    async fn close(&mut self) {
        let _ = self.writer.shutdown().await;
    }
}

/// Batches in flight on a link: envelopes with their encoded lengths.
type Batch = Vec<(Envelope, usize)>;

/// How many batches a link holds in each direction before its sender waits.
const LINK_BATCHES: usize = 256;

/// One end of an in-process connection that carries envelopes as values (see the module
/// header). [`crate::Router::connect_link_as`] makes one; [`crate::Client::connect_link`] uses
/// it.
#[derive(Debug)]
pub struct Link {
    tx: mpsc::Sender<Batch>,
    rx: mpsc::Receiver<Batch>,
}

impl Link {
    /// Two connected ends.
    pub(crate) fn pair() -> (Self, Self) {
        let (a_tx, a_rx) = mpsc::channel(LINK_BATCHES);
        let (b_tx, b_rx) = mpsc::channel(LINK_BATCHES);
        (Self { tx: a_tx, rx: b_rx }, Self { tx: b_tx, rx: a_rx })
    }

    /// This end's halves. `measured`: whether what it sends carries each envelope's encoded
    /// length (a client's commands, which the router's size rules read).
    pub(crate) fn split(self, measured: bool) -> (LinkSource, LinkSink) {
        (
            LinkSource {
                rx: self.rx,
                pending: VecDeque::new(),
            },
            LinkSink {
                tx: Some(self.tx),
                measured,
            },
        )
    }
}

/// The receiving half of a [`Link`].
pub(crate) struct LinkSource {
    rx: mpsc::Receiver<Batch>,
    pending: VecDeque<(Envelope, usize)>,
}

impl Source for LinkSource {
    async fn next(&mut self) -> Inbound {
        loop {
            if let Some((env, len)) = self.pending.pop_front() {
                // The rule a frame's length prefix meets, before anything else.
                if len > flysim_types::limits::MAX_ENVELOPE_BYTES {
                    return Inbound::Refused(
                        WireError::FrameLength { length: len as u64 }.to_string(),
                    );
                }
                return Inbound::Envelope(env, len);
            }
            match self.rx.recv().await {
                Some(batch) => self.pending.extend(batch),
                None => return Inbound::Closed,
            }
        }
    }
}

/// The sending half of a [`Link`].
pub(crate) struct LinkSink {
    tx: Option<mpsc::Sender<Batch>>,
    measured: bool,
}

impl Sink for LinkSink {
    async fn send(&mut self, batch: &mut Vec<Envelope>) -> io::Result<()> {
        let items: Batch = batch
            .drain(..)
            .map(|env| {
                let len = if self.measured { env.encoded_len() } else { 0 };
                (env, len)
            })
            .collect();
        let Some(tx) = &self.tx else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        tx.send(items)
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    async fn close(&mut self) {
        self.tx = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Kind;
    use serde_json::{Map, Value, json};

    fn command(id: &str, body: Value) -> Envelope {
        let Value::Object(body) = body else {
            unreachable!()
        };
        Envelope {
            id: id.into(),
            reply_to: None,
            kind: Kind::Command,
            op: "publish".into(),
            body,
            attachments: Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_link_carries_envelopes_in_order_with_their_encoded_lengths() {
        let (client, router) = Link::pair();
        let (_client_in, mut client_out) = client.split(true);
        let (mut router_in, _router_out) = router.split(false);
        let sent = vec![
            command("msg-1", json!({"topic": "t", "payload": {"é": "\u{1}"}})),
            command("msg-2", json!({})),
        ];
        client_out.send(&mut sent.clone()).await.unwrap();
        for env in &sent {
            let Inbound::Envelope(got, len) = router_in.next().await else {
                panic!("an envelope")
            };
            assert_eq!(&got, env);
            assert_eq!(len, env.to_bytes().len());
        }
        client_out.close().await;
        assert!(matches!(router_in.next().await, Inbound::Closed));
    }

    #[tokio::test]
    async fn an_oversize_envelope_on_a_link_is_refused_as_a_frame_would_be() {
        let (client, router) = Link::pair();
        let (_client_in, mut client_out) = client.split(true);
        let (mut router_in, _router_out) = router.split(false);
        let mut body = Map::new();
        body.insert(
            "payload".into(),
            Value::String("x".repeat(flysim_types::limits::MAX_ENVELOPE_BYTES)),
        );
        client_out
            .send(&mut vec![command("msg-1", Value::Object(body))])
            .await
            .unwrap();
        let Inbound::Refused(why) = router_in.next().await else {
            panic!("refused")
        };
        assert!(why.contains("length"), "{why}");
    }
}
