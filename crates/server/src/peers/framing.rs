//! Length-prefixed frames between peers: a big-endian u32 length, then the payload.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The largest frame a peer may send: a SNAP carries a whole snapshot.
pub const FRAME_MAX: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("peer sent a frame of {0} bytes, over the {1}-byte limit")]
    TooLarge(usize, usize),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Memory is committed as the bytes arrive, in steps of at most this much, so a peer that
/// announces a huge frame and sends little costs little.
const GROWTH_STEP: usize = 1 << 20;

/// One frame of at most [`FRAME_MAX`] bytes.
pub async fn read_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    read_frame_up_to(r, FRAME_MAX).await
}

/// One frame of at most `max` bytes (a handshake expects a few bytes, not a snapshot).
pub async fn read_frame_up_to<R: AsyncReadExt + Unpin>(
    r: &mut R,
    max: usize,
) -> Result<Vec<u8>, FrameError> {
    let len = r.read_u32().await? as usize;
    if len > max {
        return Err(FrameError::TooLarge(len, max));
    }
    // Grown a step at a time, so a peer that claims a huge frame and sends nothing costs no
    // more memory than it sent.
    let mut payload = Vec::with_capacity(len.min(GROWTH_STEP));
    while payload.len() < len {
        let start = payload.len();
        payload.resize(start + (len - start).min(GROWTH_STEP), 0);
        if let Err(e) = r.read_exact(&mut payload[start..]).await {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "frame cut short: fewer than {} of {len} bytes",
                        payload.len()
                    ),
                )
                .into());
            }
            return Err(e.into());
        }
    }
    Ok(payload)
}

pub async fn write_frame<W: AsyncWriteExt + Unpin>(
    w: &mut W,
    payload: &[u8],
) -> Result<(), FrameError> {
    if payload.len() > FRAME_MAX {
        return Err(FrameError::TooLarge(payload.len(), FRAME_MAX));
    }
    w.write_u32(payload.len() as u32).await?;
    w.write_all(payload).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_limits_hold() {
        let mut wire = Vec::new();
        write_frame(&mut wire, b"hello").await.expect("write");
        let big = vec![7u8; 3 * GROWTH_STEP + 5];
        write_frame(&mut wire, &big).await.expect("write");
        let mut r = wire.as_slice();
        assert_eq!(read_frame(&mut r).await.expect("small"), b"hello");
        assert_eq!(read_frame(&mut r).await.expect("big"), big);
        let mut r = wire.as_slice();
        assert!(matches!(
            read_frame_up_to(&mut r, 4).await,
            Err(FrameError::TooLarge(5, 4))
        ));
    }

    #[tokio::test]
    async fn a_frame_cut_short_is_an_error_not_a_short_frame() {
        // 1 GiB announced (read in steps, so this allocates at most one), 10 bytes sent, then
        // the connection ends.
        let mut wire = (FRAME_MAX as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&[1; 10]);
        let mut r = wire.as_slice();
        match read_frame(&mut r).await {
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("expected a cut-short frame, got {other:?}"),
        }
    }
}
