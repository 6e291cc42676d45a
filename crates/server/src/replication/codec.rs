//! The bytes of one peer frame: a Zab message or a host message (see [`super::host_message`]).
//!
//! Filled in by the codec work; the signatures are the contract.

use super::host_message::HostMessage;

/// One decoded peer frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerMessage {
    Zab(zab::Message),
    Host(HostMessage),
}

/// Why a frame from a peer could not be decoded. The host breaks the connection and logs it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("undecodable peer frame: {0}")]
pub struct CodecError(pub String);

pub fn encode(msg: &PeerMessage) -> Vec<u8> {
    let _ = msg;
    unimplemented!("peer codec")
}

pub fn decode(frame: &[u8]) -> Result<PeerMessage, CodecError> {
    let _ = frame;
    Err(CodecError("peer codec not built yet".into()))
}
