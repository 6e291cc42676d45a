//! A plaintext socket (a peer's or a client's) shared by its connection tasks and the core:
//! the tasks read it and write what the core could not, the core writes a turn's frames
//! itself when nothing is waiting for the writing task (one `send` instead of a queue hop and
//! a task wake-up per frame).
//!
//! Everything goes through `&TcpStream` (readiness plus `try_read`/`try_write`), which tokio
//! allows from several owners; ordering is kept by [`DirectPath::backlog`]: the core writes
//! directly only while the task holds nothing unwritten.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The reading or writing side of a shared socket, for the connection task.
pub struct SharedTcp(pub Arc<TcpStream>);

impl AsyncRead for SharedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let room = unfilled.len();
            let mut drained = 0;
            // A read that leaves room in the buffer emptied the socket, and epoll reports the
            // next arrival afresh, so the readiness is dropped now instead of by one more read
            // that would block: one recv per arrival, not two (tokio's own `TcpStream` does
            // the same). Dropping it through `try_io` keeps an arrival racing with this read.
            let read = self
                .0
                .try_io(Interest::READABLE, || match self.0.try_read(unfilled) {
                    Ok(n) if n > 0 && n < room => {
                        drained = n;
                        Err(io::ErrorKind::WouldBlock.into())
                    }
                    other => other,
                });
            match read {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && drained > 0 => {
                    buf.advance(drained);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The write direction ends now (the peer reads EOF); the socket itself closes when
        // its last owner lets go of it.
        let socket = socket2::SockRef::from(self.0.as_ref());
        match socket.shutdown(std::net::Shutdown::Write) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(())),
        }
    }
}

/// The core's way onto a live plaintext connection.
#[derive(Clone)]
pub struct DirectPath {
    socket: Arc<TcpStream>,
    /// Items handed to the connection task and not yet written by it. While any are, the core
    /// queues too, so nothing overtakes them.
    pub backlog: Arc<AtomicUsize>,
}

impl DirectPath {
    pub fn new(socket: Arc<TcpStream>, backlog: Arc<AtomicUsize>) -> DirectPath {
        DirectPath { socket, backlog }
    }

    /// Whether the core may write now: the task has nothing of its own unwritten.
    pub fn is_clear(&self) -> bool {
        self.backlog.load(Ordering::Acquire) == 0
    }

    /// Writes as much of `bytes` as the socket takes without waiting; returns how much.
    /// An error counts as nothing written: the connection task sees it too and reports the
    /// peer down.
    pub fn write_now(&self, bytes: &[u8]) -> usize {
        let mut written = 0;
        while written < bytes.len() {
            match self.socket.try_write(&bytes[written..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n,
            }
        }
        written
    }
}
