//! Length-prefixed frames: a 4-byte big-endian length, then that many bytes. A length below
//! zero or above `jute.maxbuffer` is a protocol error ("Len error" in ZooKeeper) and the
//! connection is closed.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("frame length {len} is negative")]
    Negative { len: i32 },
    #[error("frame length {len} exceeds jute.maxbuffer {max}")]
    TooLarge { len: usize, max: usize },
}

/// Looks for a complete frame at the start of `buf`. Returns the payload range when one is
/// there, `Ok(None)` when more bytes are needed.
pub fn parse_frame(
    buf: &[u8],
    max_len: usize,
) -> Result<Option<std::ops::Range<usize>>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 {
        return Err(FrameError::Negative { len });
    }
    let len = len as usize;
    if len > max_len {
        return Err(FrameError::TooLarge { len, max: max_len });
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    Ok(Some(4..4 + len))
}

/// Starts a frame in `out`: reserves the length prefix, returns where to patch it.
pub fn begin_frame(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    at
}

/// Completes a frame started with [`begin_frame`] by writing its length.
pub fn end_frame(out: &mut [u8], at: usize) {
    let len = (out.len() - at - 4) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}
