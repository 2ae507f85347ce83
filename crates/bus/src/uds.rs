//! Unix-domain socket halves that wait for writability only while a write is blocked.
//!
//! tokio's `UnixStream` registers its socket for read and write readiness at once. On a Unix
//! stream socket every read frees space in the peer's send buffer, and the kernel then wakes
//! every writability waiter of the peer: each message one side reads wakes the other side's
//! runtime for nothing, a context switch in another process per message. In process mode that
//! was about five of the twenty-five wake-ups of a two-agent step, on a two-core machine where
//! the critical path competes with them for the cores.
//!
//! These halves register the socket for readability only. A write goes straight to the socket;
//! only a write that would block registers a duplicate descriptor for writability, which is
//! dropped (and deregistered) once that write goes through. Dropping the write half shuts the
//! socket down for writing, as tokio's owned halves do, so the peer sees end of file even while
//! the read half lives on.

use std::io::{self, Read as _, Write as _};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// Splits a connected stream into halves. Call it inside a tokio runtime.
///
/// # Errors
///
/// When the socket cannot be made non-blocking or registered with the runtime.
pub(crate) fn split(stream: UnixStream) -> io::Result<(ReadHalf, WriteHalf)> {
    stream.set_nonblocking(true)?;
    let fd = Arc::new(register(stream, Interest::READABLE)?);
    Ok((
        ReadHalf {
            fd: Arc::clone(&fd),
        },
        WriteHalf {
            fd,
            blocked: None,
            shut: false,
        },
    ))
}

/// Registers `stream` with the runtime for `interest` only.
#[expect(
    unsafe_code,
    reason = "tokio's registration asks for the descriptor's I/O safety"
)]
fn register(stream: UnixStream, interest: Interest) -> io::Result<AsyncFd<UnixStream>> {
    // SAFETY: a `UnixStream` owns its descriptor: it stays open, and `as_raw_fd` returns that
    // same descriptor, until the stream is dropped, which only the `AsyncFd` holding it does.
    unsafe { AsyncFd::register_with_interest(stream, interest) }.map_err(io::Error::from)
}

/// Converts a tokio stream (from `connect` or `accept`) and splits it.
pub(crate) fn split_tokio(stream: tokio::net::UnixStream) -> io::Result<(ReadHalf, WriteHalf)> {
    split(stream.into_std()?)
}

/// The reading half: readiness comes from the socket's readability registration.
#[derive(Debug)]
pub(crate) struct ReadHalf {
    fd: Arc<AsyncFd<UnixStream>>,
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let want = unfilled.len();
            match guard.try_io(|socket| socket.get_ref().read(unfilled)) {
                Ok(Ok(n)) => {
                    // A short read emptied the socket: wait for the next readiness event rather
                    // than learn it from a read that would block. (A newer event than the one
                    // this guard holds is kept.)
                    if n > 0 && n < want {
                        guard.clear_ready();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Not readable after all: readiness was cleared, wait again.
                Err(_would_block) => {}
            }
        }
    }
}

/// The writing half: writes directly, and registers for writability only while blocked.
#[derive(Debug)]
pub(crate) struct WriteHalf {
    fd: Arc<AsyncFd<UnixStream>>,
    /// A duplicate of the socket registered for writability, while a write would block.
    blocked: Option<AsyncFd<UnixStream>>,
    shut: bool,
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.fd.get_ref().write(buf) {
                Ok(n) => {
                    self.blocked = None;
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.blocked.is_none() {
                        // Registering reports the current readiness, so space freed since the
                        // failed write is not missed.
                        let dup = self.fd.get_ref().try_clone()?;
                        self.blocked = Some(register(dup, Interest::WRITABLE)?);
                    }
                    let blocked = self.blocked.as_ref().expect("registered above");
                    let mut guard = ready!(blocked.poll_write_ready(cx))?;
                    // Writable now, or so the last event said: try again; a write that still
                    // would block clears the readiness before waiting once more.
                    match guard.try_io(|socket| socket.get_ref().write(buf)) {
                        Ok(Ok(n)) => {
                            self.blocked = None;
                            return Poll::Ready(Ok(n));
                        }
                        Ok(Err(e)) => return Poll::Ready(Err(e)),
                        Err(_would_block) => {}
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shut = true;
        self.blocked = None;
        Poll::Ready(match self.fd.get_ref().shutdown(Shutdown::Write) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => Err(e),
            _ => Ok(()),
        })
    }
}

impl Drop for WriteHalf {
    fn drop(&mut self) {
        if !self.shut {
            let _ = self.fd.get_ref().shutdown(Shutdown::Write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn bytes_cross_in_order_and_dropping_the_writer_ends_the_peers_stream() {
        let (a, b) = UnixStream::pair().unwrap();
        let (_ar, mut aw) = split(a).unwrap();
        let (mut br, _bw) = split(b).unwrap();
        aw.write_all(b"hello ").await.unwrap();
        aw.write_all(b"world").await.unwrap();
        drop(aw);
        let mut got = Vec::new();
        br.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"hello world");
    }

    /// A writer whose peer reads nothing fills the socket and waits; once the peer drains it,
    /// every byte arrives, in order. This is the path through the writability registration.
    #[tokio::test]
    async fn a_write_that_would_block_waits_for_the_reader_and_loses_nothing() {
        let (a, b) = UnixStream::pair().unwrap();
        let (_ar, mut aw) = split(a).unwrap();
        let (mut br, _bw) = split(b).unwrap();
        // Far more than any socket buffer holds.
        let payload: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
        let expected = payload.clone();
        let writer = tokio::spawn(async move {
            aw.write_all(&payload).await.unwrap();
            assert!(aw.blocked.is_none(), "the registration ends with the write");
            aw.shutdown().await.unwrap();
        });
        // Let the writer fill the buffer and block before anything is read.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        let mut got = Vec::with_capacity(expected.len());
        br.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert!(got == expected, "{} bytes arrived intact", got.len());
    }

    #[tokio::test]
    async fn a_write_to_a_closed_peer_fails_rather_than_waits() {
        let (a, b) = UnixStream::pair().unwrap();
        let (_ar, mut aw) = split(a).unwrap();
        drop(b);
        let err = aw.write_all(b"anyone?").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
