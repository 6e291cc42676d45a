//! One TCP connection to one server: length-prefixed frames in, frames out.
//!
//! Reading and writing are split: the session driver reads in its select loop while a writer
//! task drains a bounded queue of frames. Were the driver to write inline, a large pipeline
//! could deadlock: the server stops reading while its replies fill our receive buffer, and we
//! would stop reading while blocked on a write.

use crate::limits::{FRAME_LEN_MAX, WRITE_QUEUE_LEN_MAX};
use proto::frame::parse_frame;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// The reading half: yields whole frames (payload only, length removed).
pub(crate) struct FrameReader {
    half: Box<dyn AsyncRead + Send + Unpin>,
    buf: Vec<u8>,
}

impl FrameReader {
    /// The next frame, `Ok(None)` at a clean end of stream. Cancel-safe: bytes are only moved
    /// into the buffer by a completed read, so a select that drops this future loses nothing.
    pub(crate) async fn next_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            match parse_frame(&self.buf, FRAME_LEN_MAX) {
                Ok(Some(range)) => {
                    let frame = self.buf[range.clone()].to_vec();
                    self.buf.drain(..range.end);
                    return Ok(Some(frame));
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            let mut chunk = [0u8; 16 * 1024];
            let n = self.half.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// The writing half's handle: frames queued here are written in order by a task that owns the
/// socket's write half. Dropping it ends the task.
#[derive(Clone)]
pub(crate) struct FrameWriter {
    tx: mpsc::Sender<Vec<u8>>,
}

impl FrameWriter {
    /// Queues a complete frame (length prefix included). Fails once the connection is gone.
    pub(crate) async fn send(&self, frame: Vec<u8>) -> io::Result<()> {
        self.tx
            .send(frame)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "connection writer ended"))
    }
}

/// Splits a connected socket into a frame reader and a writer task.
pub(crate) fn split(stream: TcpStream) -> (FrameReader, FrameWriter) {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    halves(Box::new(read), Box::new(write))
}

/// The same over a TLS stream (its socket already has TCP_NODELAY).
pub(crate) fn split_tls(
    stream: tokio_rustls::client::TlsStream<TcpStream>,
) -> (FrameReader, FrameWriter) {
    let (read, write) = tokio::io::split(stream);
    halves(Box::new(read), Box::new(write))
}

fn halves(
    read: Box<dyn AsyncRead + Send + Unpin>,
    write: Box<dyn AsyncWrite + Send + Unpin>,
) -> (FrameReader, FrameWriter) {
    let (tx, rx) = mpsc::channel(WRITE_QUEUE_LEN_MAX);
    tokio::spawn(write_loop(write, rx));
    (
        FrameReader {
            half: read,
            buf: Vec::new(),
        },
        FrameWriter { tx },
    )
}

/// Writes queued frames, coalescing whatever is already queued into one syscall.
async fn write_loop(mut half: Box<dyn AsyncWrite + Send + Unpin>, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut batch = Vec::new();
    while let Some(frame) = rx.recv().await {
        batch.clear();
        batch.extend_from_slice(&frame);
        while batch.len() < 64 * 1024 {
            match rx.try_recv() {
                Ok(more) => batch.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if half.write_all(&batch).await.is_err() {
            return;
        }
    }
    // The driver dropped us: the connection is being abandoned or closed.
    let _ = half.shutdown().await;
}
