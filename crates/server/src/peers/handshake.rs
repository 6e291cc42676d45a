//! The first exchange on a peer connection: the dialer names itself, the acceptor checks that
//! the name is a member it should hear from and answers with its own. Anything else closes the
//! connection with a log line: a stray client, a server of another ensemble, a wrong config.

use super::framing::{read_frame_up_to, write_frame, FrameError};

/// A hello is 16 bytes; anything much longer is not one.
const HELLO_FRAME_MAX: usize = 64;
use super::Sid;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

const MAGIC: &[u8; 8] = b"MKPEER\x00\x01";
/// A peer that says nothing for this long during the handshake is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("not a meerkat peer (bad magic)")]
    BadMagic,
    #[error("server id {0} is not a member of this ensemble")]
    Unknown(Sid),
    #[error("server {0} dialed, but the lower id dials and {1} is lower")]
    WrongDirection(Sid, Sid),
    #[error("expected server {expected}, it says it is {found}")]
    WrongPeer { expected: Sid, found: Sid },
    #[error("no handshake within {HANDSHAKE_TIMEOUT:?}")]
    Timeout,
    #[error(transparent)]
    Frame(#[from] FrameError),
}

fn hello(sid: Sid) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&sid.to_be_bytes());
    b
}

fn parse(frame: &[u8]) -> Result<Sid, HandshakeError> {
    if frame.len() != 16 || &frame[..8] != MAGIC {
        return Err(HandshakeError::BadMagic);
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&frame[8..]);
    Ok(Sid::from_be_bytes(id))
}

/// Dialer side: say who we are, check who answered.
pub async fn dial<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    me: Sid,
    expected: Sid,
) -> Result<(), HandshakeError> {
    let exchange = async {
        write_frame(stream, &hello(me)).await?;
        let theirs = parse(&read_frame_up_to(stream, HELLO_FRAME_MAX).await?)?;
        if theirs != expected {
            return Err(HandshakeError::WrongPeer {
                expected,
                found: theirs,
            });
        }
        Ok(())
    };
    tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange)
        .await
        .map_err(|_| HandshakeError::Timeout)?
}

/// Acceptor side: learn who dialed, check it may, answer. Returns the dialer's id.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    me: Sid,
    is_member: impl Fn(Sid) -> bool,
) -> Result<Sid, HandshakeError> {
    let exchange = async {
        let theirs = parse(&read_frame_up_to(stream, HELLO_FRAME_MAX).await?)?;
        if !is_member(theirs) {
            return Err(HandshakeError::Unknown(theirs));
        }
        if theirs >= me {
            return Err(HandshakeError::WrongDirection(theirs, me));
        }
        write_frame(stream, &hello(me)).await?;
        Ok(theirs)
    };
    tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange)
        .await
        .map_err(|_| HandshakeError::Timeout)?
}
