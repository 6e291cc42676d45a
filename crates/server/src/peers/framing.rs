//! Length-prefixed frames between peers: a big-endian u32 length, then the payload.

use super::peer_frame::{PeerFrame, INLINE_MAX};
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

/// One frame of at most [`FRAME_MAX`] bytes, inline when it is small (see [`PeerFrame`]).
pub async fn read_peer_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> Result<PeerFrame, FrameError> {
    let len = r.read_u32().await? as usize;
    if len <= INLINE_MAX {
        let mut bytes = [0; INLINE_MAX];
        read_payload(r, &mut bytes[..len], len).await?;
        return Ok(PeerFrame::Inline {
            len: len as u8,
            bytes,
        });
    }
    Ok(PeerFrame::Heap(read_body(r, len, FRAME_MAX).await?))
}

/// One frame of at most `max` bytes (a handshake expects a few bytes, not a snapshot).
pub async fn read_frame_up_to<R: AsyncReadExt + Unpin>(
    r: &mut R,
    max: usize,
) -> Result<Vec<u8>, FrameError> {
    let len = r.read_u32().await? as usize;
    read_body(r, len, max).await
}

/// The `len` bytes of a frame after its length.
async fn read_body<R: AsyncReadExt + Unpin>(
    r: &mut R,
    len: usize,
    max: usize,
) -> Result<Vec<u8>, FrameError> {
    if len > max {
        return Err(FrameError::TooLarge(len, max));
    }
    // Grown a step at a time, so a peer that claims a huge frame and sends nothing costs no
    // more memory than it sent.
    let mut payload = Vec::with_capacity(len.min(GROWTH_STEP));
    while payload.len() < len {
        let start = payload.len();
        payload.resize(start + (len - start).min(GROWTH_STEP), 0);
        read_payload(r, &mut payload[start..], len).await?;
    }
    Ok(payload)
}

/// Fills `part` of a frame of `len` bytes; a stream that ends first is a frame cut short.
async fn read_payload<R: AsyncReadExt + Unpin>(
    r: &mut R,
    part: &mut [u8],
    len: usize,
) -> Result<(), FrameError> {
    match r.read_exact(part).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("frame cut short: fewer than {len} bytes"),
        )
        .into()),
        Err(e) => Err(e.into()),
    }
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
        let small = read_peer_frame(&mut r).await.expect("small");
        assert!(matches!(small, PeerFrame::Inline { .. }));
        assert_eq!(&*small, b"hello");
        assert_eq!(*read_peer_frame(&mut r).await.expect("big"), big);
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
        match read_peer_frame(&mut r).await {
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("expected a cut-short frame, got {other:?}"),
        }
        // The same for a frame small enough to be read inline.
        let mut wire = 20u32.to_be_bytes().to_vec();
        wire.extend_from_slice(&[1; 10]);
        let mut r = wire.as_slice();
        match read_peer_frame(&mut r).await {
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof),
            other => panic!("expected a cut-short frame, got {other:?}"),
        }
    }
}
