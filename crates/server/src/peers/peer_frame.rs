//! A frame read from a peer, as the transport hands it to the core. Most frames are tiny: a
//! leader reads an ACK (ten bytes) for every proposal from every follower, a follower a COMMIT
//! of the same size. Those travel inline, so reading one costs no allocation, and no free on
//! the core's thread of memory the reader's thread allocated (that pairing kept glibc's
//! per-thread caches empty: `_int_malloc` under the peer reader was 2 % of a diskless
//! leader's samples).

use std::ops::Deref;

/// The largest payload held inline: the enum is then as large as four words.
pub const INLINE_MAX: usize = 30;

#[derive(Clone)]
pub enum PeerFrame {
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    Heap(Vec<u8>),
}

impl PeerFrame {
    /// A copy of `payload`, inline when it fits.
    pub fn copy_of(payload: &[u8]) -> PeerFrame {
        if payload.len() > INLINE_MAX {
            return PeerFrame::Heap(payload.to_vec());
        }
        let mut bytes = [0; INLINE_MAX];
        bytes[..payload.len()].copy_from_slice(payload);
        PeerFrame::Inline {
            len: payload.len() as u8,
            bytes,
        }
    }
}

impl From<Vec<u8>> for PeerFrame {
    fn from(payload: Vec<u8>) -> PeerFrame {
        if payload.len() <= INLINE_MAX {
            PeerFrame::copy_of(&payload)
        } else {
            PeerFrame::Heap(payload)
        }
    }
}

impl Deref for PeerFrame {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            PeerFrame::Inline { len, bytes } => &bytes[..usize::from(*len)],
            PeerFrame::Heap(payload) => payload,
        }
    }
}

/// Equal when the payloads are, however they are held.
impl PartialEq for PeerFrame {
    fn eq(&self, other: &PeerFrame) -> bool {
        **self == **other
    }
}

impl Eq for PeerFrame {}

impl std::fmt::Debug for PeerFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerFrame({:?})", &**self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_inline_exactly_when_it_fits() {
        for len in [0, 1, 10, INLINE_MAX, INLINE_MAX + 1, 1000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            for frame in [PeerFrame::copy_of(&payload), payload.clone().into()] {
                assert_eq!(&*frame, payload.as_slice());
                assert_eq!(
                    matches!(frame, PeerFrame::Inline { .. }),
                    len <= INLINE_MAX,
                    "{len} bytes"
                );
            }
        }
        assert_eq!(std::mem::size_of::<PeerFrame>(), 32);
    }
}
