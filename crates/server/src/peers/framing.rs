//! Length-prefixed frames between peers: a big-endian u32 length, then the payload.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The largest frame a peer may send: a SNAP carries a whole snapshot.
pub const FRAME_MAX: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("peer sent a frame of {0} bytes, over the {FRAME_MAX}-byte limit")]
    TooLarge(usize),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub async fn read_frame<R: AsyncReadExt + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let len = r.read_u32().await? as usize;
    if len > FRAME_MAX {
        return Err(FrameError::TooLarge(len));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    Ok(payload)
}

pub async fn write_frame<W: AsyncWriteExt + Unpin>(
    w: &mut W,
    payload: &[u8],
) -> Result<(), FrameError> {
    if payload.len() > FRAME_MAX {
        return Err(FrameError::TooLarge(payload.len()));
    }
    w.write_u32(payload.len() as u32).await?;
    w.write_all(payload).await?;
    Ok(())
}
