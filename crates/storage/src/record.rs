//! The frame around every log record and snapshot chunk: big-endian length, CRC32C of the
//! payload, payload. A length of zero never starts a frame, so the zeros of a preallocated
//! segment mark the end of the log.

/// Length + checksum.
pub const FRAME_HEADER_LEN: usize = 8;

/// The largest payload accepted when reading: anything longer is damage, not data (a
/// transaction is bounded by jute.maxbuffer, a snapshot chunk by the writer's chunk size).
pub const PAYLOAD_MAX: usize = 64 << 20;

pub fn crc(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Appends one framed payload to `out`.
pub fn write_frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc(payload).to_be_bytes());
    out.extend_from_slice(payload);
}

/// What is at some offset of a framed stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole frame whose checksum matches; `next` is the offset after it.
    Valid { payload: &'a [u8], next: usize },
    /// Zeros (or nothing) where a length belongs: the end of the written data.
    End,
    /// Not a valid frame: torn, or damaged.
    Invalid { reason: &'static str },
}

pub fn read_frame(buf: &[u8], at: usize) -> Frame<'_> {
    let Some(header) = buf.get(at..at + FRAME_HEADER_LEN) else {
        return if buf
            .get(at..)
            .is_none_or(|rest| rest.iter().all(|&b| b == 0))
        {
            Frame::End
        } else {
            Frame::Invalid {
                reason: "frame header cut short",
            }
        };
    };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let sum = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if len == 0 {
        return if sum == 0 {
            Frame::End
        } else {
            Frame::Invalid {
                reason: "zero length with a checksum",
            }
        };
    }
    if len > PAYLOAD_MAX {
        return Frame::Invalid {
            reason: "length beyond the largest record",
        };
    }
    let start = at + FRAME_HEADER_LEN;
    let Some(payload) = buf.get(start..start + len) else {
        return Frame::Invalid {
            reason: "record cut short",
        };
    };
    if crc(payload) != sum {
        return Frame::Invalid {
            reason: "checksum mismatch",
        };
    }
    Frame::Valid {
        payload,
        next: start + len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_and_zeros_end_the_stream() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"one");
        write_frame(&mut buf, b"two!");
        buf.extend_from_slice(&[0; 32]);
        let Frame::Valid { payload, next } = read_frame(&buf, 0) else {
            panic!("first frame");
        };
        assert_eq!(payload, b"one");
        let Frame::Valid { payload, next } = read_frame(&buf, next) else {
            panic!("second frame");
        };
        assert_eq!(payload, b"two!");
        assert_eq!(read_frame(&buf, next), Frame::End);
        assert_eq!(read_frame(&buf, buf.len()), Frame::End);
    }

    #[test]
    fn damage_is_reported_not_read() {
        let mut buf = Vec::new();
        write_frame(&mut buf, b"payload");
        let mut flipped = buf.clone();
        flipped[10] ^= 0x04;
        assert!(matches!(read_frame(&flipped, 0), Frame::Invalid { .. }));
        assert!(matches!(
            read_frame(&buf[..buf.len() - 1], 0),
            Frame::Invalid { .. }
        ));
        assert!(matches!(read_frame(&buf[..5], 0), Frame::Invalid { .. }));
        let mut huge = vec![0xff; 8];
        huge.extend_from_slice(&[1; 8]);
        assert!(matches!(read_frame(&huge, 0), Frame::Invalid { .. }));
    }
}
