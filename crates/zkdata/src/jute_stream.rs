//! Jute read from a byte stream, as ZooKeeper's `BinaryInputArchive` over a
//! `CheckedInputStream` reads its files: every byte read also goes into a running Adler-32,
//! and the offset is kept for error messages.
//!
//! Lengths are checked against [`BUFFER_MAX`] before anything is allocated, and a buffer is
//! filled from the stream as its bytes arrive, so a hostile length costs at most what the
//! file really holds.

use std::io::Read;

/// The largest buffer or string accepted: ZooKeeper's default `jute.maxbuffer` (0xfffff) plus
/// its default extra size for transactions (the same again), with room for operators who
/// raised `jute.maxbuffer`: ZooKeeper reads with the limit its own JVM was started with.
pub const BUFFER_MAX: usize = 64 << 20;

/// Why a read stopped.
#[derive(Debug)]
pub enum StreamError {
    /// The stream ended inside a value that started at `offset` (ZooKeeper's EOFException).
    Eof {
        offset: u64,
    },
    /// The bytes are not a valid value.
    Invalid {
        offset: u64,
        detail: String,
    },
    Io(std::io::Error),
}

impl StreamError {
    pub fn offset(&self) -> Option<u64> {
        match self {
            StreamError::Eof { offset } | StreamError::Invalid { offset, .. } => Some(*offset),
            StreamError::Io(_) => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            StreamError::Eof { .. } => "the file ends in the middle of a record".to_string(),
            StreamError::Invalid { detail, .. } => detail.clone(),
            StreamError::Io(e) => e.to_string(),
        }
    }
}

pub type StreamResult<T> = Result<T, StreamError>;

pub struct JuteStream<R> {
    inner: R,
    offset: u64,
    checksum: adler2::Adler32,
}

impl<R: Read> JuteStream<R> {
    pub fn new(inner: R) -> Self {
        JuteStream {
            inner,
            offset: 0,
            checksum: adler2::Adler32::new(),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Adler-32 of every byte consumed so far (Java's `Checksum.getValue()`).
    pub fn checksum(&self) -> u32 {
        self.checksum.checksum()
    }

    pub fn read_exact(&mut self, buf: &mut [u8]) -> StreamResult<()> {
        let start = self.offset;
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => return Err(StreamError::Eof { offset: start }),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err(StreamError::Eof { offset: start })
                }
                // A compressed stream that is cut short or damaged reports it as an error of
                // the decoder; it is damage at this offset, not a failing disk.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(StreamError::Invalid {
                        offset: start,
                        detail: format!("cannot decompress: {e}"),
                    })
                }
                Err(e) => return Err(StreamError::Io(e)),
            }
        }
        self.checksum.write_slice(buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    pub fn read_u8(&mut self) -> StreamResult<u8> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b)?;
        Ok(b[0])
    }

    pub fn read_i32(&mut self) -> StreamResult<i32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(i32::from_be_bytes(b))
    }

    pub fn read_i64(&mut self) -> StreamResult<i64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(i64::from_be_bytes(b))
    }

    /// A buffer; `None` for length −1 (null).
    pub fn read_buffer(&mut self) -> StreamResult<Option<Vec<u8>>> {
        let at = self.offset;
        let len = self.read_i32()?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 || len as usize > BUFFER_MAX {
            return Err(StreamError::Invalid {
                offset: at,
                detail: format!("unreasonable length {len}"),
            });
        }
        let len = len as usize;
        // Filled in steps as the bytes arrive: a length the file cannot back costs nothing.
        let mut out = Vec::with_capacity(len.min(1 << 16));
        let mut step = [0u8; 1 << 16];
        while out.len() < len {
            let n = (len - out.len()).min(step.len());
            self.read_exact(&mut step[..n]).map_err(|e| match e {
                StreamError::Eof { .. } => StreamError::Eof { offset: at },
                other => other,
            })?;
            out.extend_from_slice(&step[..n]);
        }
        Ok(Some(out))
    }

    /// A ustring (UTF-8); null reads as `None`.
    pub fn read_string(&mut self) -> StreamResult<Option<String>> {
        let at = self.offset;
        match self.read_buffer()? {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| StreamError::Invalid {
                    offset: at,
                    detail: "a string that is not UTF-8".into(),
                }),
        }
    }

    /// Reads and discards the rest of the stream, telling whether every byte was zero.
    pub fn rest_is_zero(&mut self) -> StreamResult<bool> {
        let mut buf = [0u8; 1 << 16];
        loop {
            match self.inner.read(&mut buf) {
                Ok(0) => return Ok(true),
                Ok(n) => {
                    if buf[..n].iter().any(|&b| b != 0) {
                        return Ok(false);
                    }
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StreamError::Io(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_and_offset_follow_every_byte() {
        let bytes = [0u8, 0, 0, 3, b'a', b'b', b'c', 0xff, 0xff, 0xff, 0xff];
        let mut s = JuteStream::new(&bytes[..]);
        assert_eq!(s.read_string().ok().flatten().as_deref(), Some("abc"));
        assert_eq!(s.read_buffer().ok(), Some(None));
        assert_eq!(s.offset(), 11);
        assert_eq!(s.checksum(), adler2::adler32_slice(&bytes));
    }

    #[test]
    fn a_huge_length_is_refused_before_allocating() {
        let bytes = [0x7f, 0xff, 0xff, 0xff, 1, 2];
        let mut s = JuteStream::new(&bytes[..]);
        assert!(matches!(
            s.read_buffer(),
            Err(StreamError::Invalid { offset: 0, .. })
        ));
        let bytes = [0, 0x10, 0, 0, 1, 2];
        let mut s = JuteStream::new(&bytes[..]);
        assert!(matches!(
            s.read_buffer(),
            Err(StreamError::Eof { offset: 0 })
        ));
    }
}
