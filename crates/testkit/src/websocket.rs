//! A raw WebSocket client of the watch gateway over a loopback TCP socket, small enough to
//! misbehave on purpose: it can read whole messages, read slowly, stop reading, or leave in
//! the middle of a frame. Server frames are unmasked, so reading one is a header and a length.
//! A message is the gateway's: `[send stamp f64][state length u32][state JSON][PNG]`.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// One pushed message, decoded.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The page state.
    pub state: Value,
    /// The frame, PNG-encoded (empty without a view).
    pub png: Vec<u8>,
    /// When it was read whole.
    pub arrived: std::time::Instant,
}

impl Pushed {
    /// The snapshot sequence the state was built from.
    #[must_use]
    pub fn sequence(&self) -> Option<u64> {
        self.state["sequence"].as_u64()
    }
}

/// An open WebSocket after the handshake request (the reply not read yet).
pub struct RawSocket {
    stream: TcpStream,
    buffer: Vec<u8>,
}

/// Connects and sends the upgrade request; `receive_buffer` sets a small kernel buffer so
/// that a client that stops reading pushes back on the server soon.
pub async fn open(addr: SocketAddr, receive_buffer: Option<u32>) -> RawSocket {
    let socket = TcpSocket::new_v4().expect("a socket");
    if let Some(size) = receive_buffer {
        socket.set_recv_buffer_size(size).expect("a receive buffer");
    }
    let mut stream = socket.connect(addr).await.expect("connect to the gateway");
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the upgrade");
    RawSocket {
        stream,
        buffer: Vec::new(),
    }
}

impl RawSocket {
    async fn fill(&mut self, at_least: usize) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        while self.buffer.len() < at_least {
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// Reads the handshake reply; panics unless it is `101`.
    pub async fn accept(&mut self) {
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                assert!(head.starts_with("HTTP/1.1 101"), "not upgraded: {head}");
                self.buffer.drain(..end + 4);
                return;
            }
            let want = self.buffer.len() + 1;
            assert!(
                self.fill(want).await,
                "the gateway closed during the handshake"
            );
        }
    }

    /// The next whole binary message, or `None` once the connection is closed.
    pub async fn next(&mut self) -> Option<Pushed> {
        loop {
            if !self.fill(2).await {
                return None;
            }
            let opcode = self.buffer[0] & 0x0f;
            let (len, header) = match self.buffer[1] & 0x7f {
                126 => {
                    if !self.fill(4).await {
                        return None;
                    }
                    (
                        usize::from(u16::from_be_bytes([self.buffer[2], self.buffer[3]])),
                        4,
                    )
                }
                127 => {
                    if !self.fill(10).await {
                        return None;
                    }
                    let mut n = [0u8; 8];
                    n.copy_from_slice(&self.buffer[2..10]);
                    (u64::from_be_bytes(n) as usize, 10)
                }
                n => (usize::from(n), 2),
            };
            if !self.fill(header + len).await {
                return None;
            }
            let payload: Vec<u8> = self.buffer.drain(..header + len).skip(header).collect();
            match opcode {
                0x2 => return Some(decode(&payload)),
                0x8 => return None,
                _ => {}
            }
        }
    }

    /// Reads at most `n` raw bytes of whatever comes (slow readers), `false` once closed.
    pub async fn trickle(&mut self, n: usize) -> bool {
        let mut chunk = vec![0u8; n];
        matches!(self.stream.read(&mut chunk).await, Ok(k) if k > 0)
    }

    /// Reads the handshake and half of the first message, then drops the connection.
    pub async fn leave_mid_frame(mut self) {
        self.accept().await;
        if self.fill(2).await {
            let len = match self.buffer[1] & 0x7f {
                126 | 127 => 64 * 1024,
                n => usize::from(n),
            };
            let _ = self.fill(len / 2).await;
        }
        drop(self);
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "a test's arrival stamp, for measuring gaps between deliveries"
)]
fn decode(message: &[u8]) -> Pushed {
    let n = u32::from_le_bytes(message[8..12].try_into().expect("four bytes")) as usize;
    let state: Value = serde_json::from_slice(&message[12..12 + n]).expect("a JSON state");
    Pushed {
        state,
        png: message[12 + n..].to_vec(),
        arrived: std::time::Instant::now(),
    }
}
