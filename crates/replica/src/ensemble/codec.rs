//! The bytes of one peer frame: a Zab message or a host message (see [`super::host_message`]).
//!
//! A frame payload (the transport adds the length prefix and the size cap) is one byte of
//! [`FORMAT_VERSION`], one byte of [`tag`] naming the message kind, then the message's fields
//! in jute encoding: big-endian ints and longs, one-byte booleans, buffers as an `i32` length
//! then the bytes, vectors as an `i32` count then the elements. Unsigned values (sids, epochs,
//! rounds, digests) travel as the signed jute type with the same bits. Each tag's doc lists its
//! fields in order.
//!
//! Every message has exactly one encoding the decoder accepts for it (apart from what the
//! jute records inside transactions tolerate), so that a flipped bit in a version, tag, flag or
//! enum byte is reported rather than read as something else.
//!
//! Decoding reads untrusted peer input: it never panics, checks every count against the bytes
//! left in the frame before allocating for it, rejects unknown versions, tags and enum values,
//! and rejects trailing bytes. The transport caps a frame at 1 GiB, which also bounds every
//! count and length the encoder writes as an `i32`.

use super::host_message::{Forwarded, HostMessage};
use proto::jute::MinEncodedLen;
use proto::txn::Txn;
use proto::{DecodeError, Id, Reader, Record, Writer};
use std::collections::BTreeSet;
use std::sync::Arc;
use zab::{Entry, Image, Membership, Message, Notification, PeerState, SharedEntry, Vote, Zxid};

/// One decoded peer frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerMessage {
    Zab(zab::Message),
    Host(HostMessage),
}

impl PeerMessage {
    /// A short name for logs, as its tag is named in [`tag::name`].
    pub fn kind(&self) -> &'static str {
        match self {
            PeerMessage::Zab(zab_msg) => zab_msg.kind(),
            PeerMessage::Host(host_msg) => host_msg.kind(),
        }
    }
}

/// Why a frame from a peer could not be decoded. The host breaks the connection and logs it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("undecodable peer frame: {0}")]
pub struct CodecError(pub String);

/// The first byte of every frame. A peer speaking another version is refused, not guessed at.
/// Version 2: notifications carry configuration versions, and CONFIG exists (dynamic
/// reconfiguration).
pub const FORMAT_VERSION: u8 = 2;

/// The second byte of every frame: which message follows, and the fields it carries.
///
/// Zab messages use `0x01..`, host messages `0x41..`; 0 is never a tag, so a zeroed frame fails.
pub mod tag {
    /// leader sid i64, vote zxid i64, vote epoch i32, round i64, state i32
    /// (0 looking, 1 following, 2 leading, 3 observing), voter bool, active and pending
    /// configuration versions i64 each.
    pub const NOTIFICATION: u8 = 0x01;
    /// accepted_epoch i32, last_zxid i64, observer bool, recovering bool, incarnation i64.
    pub const FOLLOWER_INFO: u8 = 0x02;
    /// epoch i32.
    pub const LEADER_INFO: u8 = 0x03;
    /// has_current_epoch bool, current_epoch i32 (only when present), last_zxid i64.
    pub const ACK_EPOCH: u8 = 0x04;
    /// zxid i64.
    pub const DIFF: u8 = 0x05;
    /// zxid i64.
    pub const TRUNC: u8 = 0x06;
    /// zxid i64, image buffer (never null).
    pub const SNAP: u8 = 0x07;
    /// entry: zxid i64, has_digest bool, digest i64 (only when present), txn header and body.
    pub const PROPOSAL: u8 = 0x08;
    /// zxid i64.
    pub const COMMIT: u8 = 0x09;
    /// entry, as in [`PROPOSAL`].
    pub const INFORM: u8 = 0x0a;
    /// epoch i32.
    pub const NEW_LEADER: u8 = 0x0b;
    /// zxid i64.
    pub const ACK: u8 = 0x0c;
    /// committed zxid i64.
    pub const UP_TO_DATE: u8 = 0x0d;
    /// no fields.
    pub const PING: u8 = 0x0e;
    /// successor's vote: leader sid i64, zxid i64, epoch i32.
    pub const ABDICATE: u8 = 0x0f;
    /// committed bool, version i64, voters count i32 and each sid i64, observers count i32
    /// and each sid i64.
    pub const CONFIG: u8 = 0x10;

    /// session_id i64, xid i32, op_type i32, body buffer (never null), auth_ids count i32,
    /// then each id as (scheme ustring, id ustring).
    pub const FORWARD: u8 = 0x41;
    /// session_id i64, timeout_ms i32.
    pub const CREATE_SESSION: u8 = 0x42;
    /// sessions count i32, then each session id i64.
    pub const TOUCH: u8 = 0x43;
    /// session_id i64, timeout_ms i32.
    pub const REVALIDATE: u8 = 0x44;
    /// session_id i64, timeout_ms i32.
    pub const REVALIDATED: u8 = 0x45;
    /// zxid i64, digest i64.
    pub const DIGEST_AT: u8 = 0x46;
    /// session i64.
    pub const END_SESSION: u8 = 0x47;
    /// session_id i64, xid i32.
    pub const THROTTLED: u8 = 0x48;

    /// The message kind a tag names (as `Message::kind` / `HostMessage::kind` spell it), or
    /// `None` for a byte that is no tag.
    pub fn name(tag: u8) -> Option<&'static str> {
        Some(match tag {
            NOTIFICATION => "NOTIFICATION",
            FOLLOWER_INFO => "FOLLOWERINFO",
            LEADER_INFO => "LEADERINFO",
            ACK_EPOCH => "ACKEPOCH",
            DIFF => "DIFF",
            TRUNC => "TRUNC",
            SNAP => "SNAP",
            PROPOSAL => "PROPOSAL",
            COMMIT => "COMMIT",
            INFORM => "INFORM",
            NEW_LEADER => "NEWLEADER",
            ACK => "ACK",
            UP_TO_DATE => "UPTODATE",
            PING => "PING",
            ABDICATE => "ABDICATE",
            CONFIG => "CONFIG",
            FORWARD => "FORWARD",
            CREATE_SESSION => "CREATESESSION",
            TOUCH => "TOUCH",
            REVALIDATE => "REVALIDATE",
            REVALIDATED => "REVALIDATED",
            DIGEST_AT => "DIGESTAT",
            END_SESSION => "ENDSESSION",
            THROTTLED => "THROTTLED",
            _ => return None,
        })
    }
}

/// The version and tag bytes before the fields.
const PREAMBLE_LEN: usize = 2;

/// Output reserved for messages whose size is not worked out up front; most fit in it.
const SMALL_MESSAGE_CAPACITY: usize = 64;

/// Wire bytes of one zxid, one i64.
const ZXID_LEN: usize = 8;

/// Wire bytes of a length or count prefix.
const LEN_PREFIX_LEN: usize = 4;

/// Wire bytes of one session id, one i64.
const SESSION_ID_LEN: usize = 8;

/// The payload of one frame. Infallible: the transport refuses frames over its size cap.
pub fn encode(msg: &PeerMessage) -> Vec<u8> {
    match msg {
        PeerMessage::Zab(zab_msg) => encode_zab(zab_msg),
        PeerMessage::Host(host_msg) => encode_host(host_msg),
    }
}

/// [`encode`] for a Zab message the caller holds unwrapped (Zab's outputs).
pub fn encode_zab(msg: &Message) -> Vec<u8> {
    let mut w = start_frame(zab_tag(msg), zab_capacity(msg));
    write_zab_fields(&mut w, msg);
    w.into_inner()
}

/// [`encode`] for a host message the caller holds unwrapped.
pub fn encode_host(msg: &HostMessage) -> Vec<u8> {
    let mut w = start_frame(host_tag(msg), host_capacity(msg));
    write_host_fields(&mut w, msg);
    w.into_inner()
}

/// Exactly one message from a whole frame payload, or why the frame is not one.
pub fn decode(frame: &[u8]) -> Result<PeerMessage, CodecError> {
    let mut r = Reader::new(frame);
    let tag = read_preamble(&mut r).map_err(|e| CodecError(format!("frame preamble: {e}")))?;
    let kind = tag::name(tag).ok_or_else(|| CodecError(format!("unknown tag {tag:#04x}")))?;
    decode_body(tag, &mut r)
        .and_then(|msg| r.finish().map(|()| msg))
        .map_err(|e| CodecError(format!("{kind}: {e}")))
}

fn start_frame(tag: u8, capacity: usize) -> Writer {
    let mut w = Writer::wrap(Vec::with_capacity(capacity));
    w.write_raw(&[FORMAT_VERSION, tag]);
    w
}

// ----- Zab messages -----

fn zab_tag(msg: &Message) -> u8 {
    match msg {
        Message::Notification(_) => tag::NOTIFICATION,
        Message::FollowerInfo { .. } => tag::FOLLOWER_INFO,
        Message::LeaderInfo { .. } => tag::LEADER_INFO,
        Message::AckEpoch { .. } => tag::ACK_EPOCH,
        Message::Diff { .. } => tag::DIFF,
        Message::Trunc { .. } => tag::TRUNC,
        Message::Snap { .. } => tag::SNAP,
        Message::Proposal(_) => tag::PROPOSAL,
        Message::Commit { .. } => tag::COMMIT,
        Message::Inform(_) => tag::INFORM,
        Message::NewLeader { .. } => tag::NEW_LEADER,
        Message::Ack { .. } => tag::ACK,
        Message::UpToDate { .. } => tag::UP_TO_DATE,
        Message::Ping => tag::PING,
        Message::Abdicate { .. } => tag::ABDICATE,
        Message::Config { .. } => tag::CONFIG,
    }
}

/// A snapshot can be hundreds of MB: its frame is sized exactly, so the image is copied once
/// into a buffer that never reallocates.
fn zab_capacity(msg: &Message) -> usize {
    match msg {
        Message::Snap { image, .. } => PREAMBLE_LEN + ZXID_LEN + LEN_PREFIX_LEN + image.len(),
        // Encoded without reallocating.
        Message::Proposal(entry) | Message::Inform(entry) => {
            entry_header_len(entry) + entry.txn.encoded_len()
        }
        _ => SMALL_MESSAGE_CAPACITY,
    }
}

fn write_zab_fields(w: &mut Writer, msg: &Message) {
    match msg {
        Message::Notification(notification) => write_notification(w, notification),
        Message::FollowerInfo {
            accepted_epoch,
            last_zxid,
            observer,
            recovering,
            incarnation,
        } => {
            write_epoch(w, *accepted_epoch);
            write_zxid(w, *last_zxid);
            w.write_bool(*observer);
            w.write_bool(*recovering);
            write_u64(w, *incarnation);
        }
        Message::LeaderInfo { epoch } | Message::NewLeader { epoch } => write_epoch(w, *epoch),
        Message::AckEpoch {
            current_epoch,
            last_zxid,
        } => {
            w.write_bool(current_epoch.is_some());
            if let Some(epoch) = current_epoch {
                write_epoch(w, *epoch);
            }
            write_zxid(w, *last_zxid);
        }
        Message::Diff { zxid }
        | Message::Trunc { zxid }
        | Message::Commit { zxid }
        | Message::Ack { zxid }
        | Message::UpToDate { committed: zxid } => write_zxid(w, *zxid),
        Message::Snap { zxid, image } => {
            write_zxid(w, *zxid);
            w.write_buffer(Some(image));
        }
        Message::Proposal(entry) | Message::Inform(entry) => write_entry(w, entry),
        Message::Ping => {}
        Message::Abdicate { successor } => write_vote(w, successor),
        Message::Config {
            membership,
            committed,
        } => {
            w.write_bool(*committed);
            write_membership(w, membership);
        }
    }
}

/// The Zab message a tag names, or `None` when the tag is not a Zab one.
fn decode_zab(tag: u8, r: &mut Reader<'_>) -> Result<Option<Message>, DecodeError> {
    let msg = match tag {
        tag::NOTIFICATION => Message::Notification(read_notification(r)?),
        tag::FOLLOWER_INFO => Message::FollowerInfo {
            accepted_epoch: read_epoch(r)?,
            last_zxid: read_zxid(r)?,
            observer: read_flag(r, "observer flag")?,
            recovering: read_flag(r, "recovering flag")?,
            incarnation: read_u64(r)?,
        },
        tag::LEADER_INFO => Message::LeaderInfo {
            epoch: read_epoch(r)?,
        },
        tag::ACK_EPOCH => Message::AckEpoch {
            current_epoch: read_optional_epoch(r)?,
            last_zxid: read_zxid(r)?,
        },
        tag::DIFF => Message::Diff {
            zxid: read_zxid(r)?,
        },
        tag::TRUNC => Message::Trunc {
            zxid: read_zxid(r)?,
        },
        tag::SNAP => Message::Snap {
            zxid: read_zxid(r)?,
            image: read_image(r)?,
        },
        tag::PROPOSAL => Message::Proposal(read_entry(r)?),
        tag::COMMIT => Message::Commit {
            zxid: read_zxid(r)?,
        },
        tag::INFORM => Message::Inform(read_entry(r)?),
        tag::NEW_LEADER => Message::NewLeader {
            epoch: read_epoch(r)?,
        },
        tag::ACK => Message::Ack {
            zxid: read_zxid(r)?,
        },
        tag::UP_TO_DATE => Message::UpToDate {
            committed: read_zxid(r)?,
        },
        tag::PING => Message::Ping,
        tag::ABDICATE => Message::Abdicate {
            successor: read_vote(r)?,
        },
        tag::CONFIG => Message::Config {
            committed: read_flag(r, "committed flag")?,
            membership: read_membership(r)?,
        },
        _ => return Ok(None),
    };
    Ok(Some(msg))
}

fn write_membership(w: &mut Writer, m: &Membership) {
    write_zxid(w, m.version);
    for set in [&m.voters, &m.observers] {
        write_count(w, set.len());
        for &sid in set {
            write_u64(w, sid);
        }
    }
}

/// A configuration as Zab may use it: some voter, no server in both roles, at most
/// `zab::config::SERVERS_MAX` servers.
fn read_membership(r: &mut Reader<'_>) -> Result<Membership, DecodeError> {
    let version = read_zxid(r)?;
    let mut sets = [BTreeSet::new(), BTreeSet::new()];
    for set in &mut sets {
        let count = read_count(r, 8)?;
        for _ in 0..count {
            set.insert(read_u64(r)?);
        }
    }
    let [voters, observers] = sets;
    let total = voters.len() + observers.len();
    if voters.is_empty() || total > zab::config::SERVERS_MAX || !voters.is_disjoint(&observers) {
        return Err(DecodeError::InvalidValue {
            what: "configuration",
            value: total as i64,
        });
    }
    Ok(Membership {
        version,
        voters,
        observers,
    })
}

fn write_vote(w: &mut Writer, vote: &Vote) {
    write_u64(w, vote.leader);
    write_zxid(w, vote.zxid);
    write_epoch(w, vote.epoch);
}

fn read_vote(r: &mut Reader<'_>) -> Result<Vote, DecodeError> {
    Ok(Vote {
        leader: read_u64(r)?,
        zxid: read_zxid(r)?,
        epoch: read_epoch(r)?,
    })
}

fn write_notification(w: &mut Writer, notification: &Notification) {
    write_vote(w, &notification.vote);
    write_u64(w, notification.round);
    w.write_i32(peer_state_code(notification.state));
    w.write_bool(notification.voter);
    write_zxid(w, notification.config);
    write_zxid(w, notification.config_pending);
}

fn read_notification(r: &mut Reader<'_>) -> Result<Notification, DecodeError> {
    Ok(Notification {
        vote: read_vote(r)?,
        round: read_u64(r)?,
        state: read_peer_state(r)?,
        voter: read_flag(r, "voter flag")?,
        config: read_zxid(r)?,
        config_pending: read_zxid(r)?,
    })
}

/// ZooKeeper's `ServerState` ordinals.
fn peer_state_code(state: PeerState) -> i32 {
    match state {
        PeerState::Looking => 0,
        PeerState::Following => 1,
        PeerState::Leading => 2,
        PeerState::Observing => 3,
    }
}

fn read_peer_state(r: &mut Reader<'_>) -> Result<PeerState, DecodeError> {
    match r.read_i32()? {
        0 => Ok(PeerState::Looking),
        1 => Ok(PeerState::Following),
        2 => Ok(PeerState::Leading),
        3 => Ok(PeerState::Observing),
        other => Err(DecodeError::InvalidValue {
            what: "peer state",
            value: other.into(),
        }),
    }
}

/// The bytes of a PROPOSAL frame before its transaction: what [`proposal_txn_bytes`] leaves
/// out.
fn entry_header_len(entry: &Entry) -> usize {
    PREAMBLE_LEN + ZXID_LEN + 1 + if entry.digest.is_some() { 8 } else { 0 }
}

/// The size of the transaction in a PROPOSAL frame encoded by [`encode_zab`] (ZooKeeper's
/// proposal size: the serialized request).
pub fn proposal_txn_bytes(entry: &Entry, frame: &[u8]) -> usize {
    frame.len().saturating_sub(entry_header_len(entry))
}

fn write_entry(w: &mut Writer, entry: &Entry) {
    write_zxid(w, entry.zxid);
    w.write_bool(entry.digest.is_some());
    if let Some(digest) = entry.digest {
        write_u64(w, digest);
    }
    entry.txn.encode(w);
}

fn read_entry(r: &mut Reader<'_>) -> Result<SharedEntry, DecodeError> {
    let zxid = read_zxid(r)?;
    let digest = match read_flag(r, "digest presence flag")? {
        true => Some(read_u64(r)?),
        false => None,
    };
    let txn = Txn::decode(r)?;
    // Zab orders entries by their zxid and the tree applies the header's: they must agree.
    if txn.header.zxid != zxid.as_i64() {
        return Err(DecodeError::InvalidValue {
            what: "transaction zxid (differs from the entry's)",
            value: txn.header.zxid,
        });
    }
    Ok(Arc::new(Entry { zxid, txn, digest }))
}

/// The image's only copy on the way in: out of the frame into its own buffer.
fn read_image(r: &mut Reader<'_>) -> Result<Image, DecodeError> {
    Ok(Arc::new(
        read_required_buffer(r, "snapshot image length")?.to_vec(),
    ))
}

fn read_optional_epoch(r: &mut Reader<'_>) -> Result<Option<u32>, DecodeError> {
    match read_flag(r, "current epoch presence flag")? {
        true => Ok(Some(read_epoch(r)?)),
        false => Ok(None),
    }
}

// ----- host messages -----

fn host_tag(msg: &HostMessage) -> u8 {
    match msg {
        HostMessage::Forward(_) => tag::FORWARD,
        HostMessage::CreateSession { .. } => tag::CREATE_SESSION,
        HostMessage::Touch { .. } => tag::TOUCH,
        HostMessage::Revalidate { .. } => tag::REVALIDATE,
        HostMessage::Revalidated { .. } => tag::REVALIDATED,
        HostMessage::DigestAt { .. } => tag::DIGEST_AT,
        HostMessage::EndSession { .. } => tag::END_SESSION,
        HostMessage::Throttled { .. } => tag::THROTTLED,
    }
}

fn host_capacity(msg: &HostMessage) -> usize {
    match msg {
        HostMessage::Forward(forwarded) => SMALL_MESSAGE_CAPACITY + forwarded.body.len(),
        HostMessage::Touch { sessions } => {
            PREAMBLE_LEN + LEN_PREFIX_LEN + sessions.len().saturating_mul(SESSION_ID_LEN)
        }
        _ => SMALL_MESSAGE_CAPACITY,
    }
}

fn write_host_fields(w: &mut Writer, msg: &HostMessage) {
    match msg {
        HostMessage::Forward(forwarded) => write_forwarded(w, forwarded),
        HostMessage::CreateSession {
            session_id,
            timeout_ms,
        }
        | HostMessage::Revalidate {
            session_id,
            timeout_ms,
        }
        | HostMessage::Revalidated {
            session_id,
            timeout_ms,
        } => {
            w.write_i64(*session_id);
            w.write_i32(*timeout_ms);
        }
        HostMessage::Touch { sessions } => {
            write_count(w, sessions.len());
            for session_id in sessions {
                w.write_i64(*session_id);
            }
        }
        HostMessage::DigestAt { zxid, digest } => {
            w.write_i64(*zxid);
            write_u64(w, *digest);
        }
        HostMessage::EndSession { session_id } => w.write_i64(*session_id),
        HostMessage::Throttled { session_id, xid } => {
            w.write_i64(*session_id);
            w.write_i32(*xid);
        }
    }
}

/// The host message a tag names, or `None` when the tag is not a host one.
fn decode_host(tag: u8, r: &mut Reader<'_>) -> Result<Option<HostMessage>, DecodeError> {
    let msg = match tag {
        tag::FORWARD => HostMessage::Forward(read_forwarded(r)?),
        tag::CREATE_SESSION => HostMessage::CreateSession {
            session_id: r.read_i64()?,
            timeout_ms: r.read_i32()?,
        },
        tag::TOUCH => HostMessage::Touch {
            sessions: read_sessions(r)?,
        },
        tag::REVALIDATE => HostMessage::Revalidate {
            session_id: r.read_i64()?,
            timeout_ms: r.read_i32()?,
        },
        tag::REVALIDATED => HostMessage::Revalidated {
            session_id: r.read_i64()?,
            timeout_ms: r.read_i32()?,
        },
        tag::DIGEST_AT => HostMessage::DigestAt {
            zxid: r.read_i64()?,
            digest: read_u64(r)?,
        },
        tag::END_SESSION => HostMessage::EndSession {
            session_id: r.read_i64()?,
        },
        tag::THROTTLED => HostMessage::Throttled {
            session_id: r.read_i64()?,
            xid: r.read_i32()?,
        },
        _ => return Ok(None),
    };
    Ok(Some(msg))
}

fn write_forwarded(w: &mut Writer, forwarded: &Forwarded) {
    w.write_i64(forwarded.session_id);
    w.write_i32(forwarded.xid);
    w.write_i32(forwarded.op_type);
    w.write_buffer(Some(&forwarded.body));
    write_count(w, forwarded.auth_ids.len());
    for id in &forwarded.auth_ids {
        id.encode(w);
    }
}

fn read_forwarded(r: &mut Reader<'_>) -> Result<Forwarded, DecodeError> {
    Ok(Forwarded {
        session_id: r.read_i64()?,
        xid: r.read_i32()?,
        op_type: r.read_i32()?,
        body: read_required_buffer(r, "forward body length")?.to_vec(),
        auth_ids: read_auth_ids(r)?,
    })
}

fn read_auth_ids(r: &mut Reader<'_>) -> Result<Vec<Id>, DecodeError> {
    let count = read_count(r, Id::MIN_ENCODED_LEN)?;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        ids.push(Id::decode(r)?);
    }
    Ok(ids)
}

fn read_sessions(r: &mut Reader<'_>) -> Result<Vec<i64>, DecodeError> {
    let count = read_count(r, SESSION_ID_LEN)?;
    let mut sessions = Vec::with_capacity(count);
    for _ in 0..count {
        sessions.push(r.read_i64()?);
    }
    Ok(sessions)
}

// ----- fields shared by both -----

/// Checks the version byte and returns the tag byte.
fn read_preamble(r: &mut Reader<'_>) -> Result<u8, DecodeError> {
    let version = read_byte(r)?;
    if version != FORMAT_VERSION {
        return Err(DecodeError::InvalidValue {
            what: "format version",
            value: version.into(),
        });
    }
    read_byte(r)
}

fn decode_body(tag: u8, r: &mut Reader<'_>) -> Result<PeerMessage, DecodeError> {
    if let Some(zab_msg) = decode_zab(tag, r)? {
        return Ok(PeerMessage::Zab(zab_msg));
    }
    if let Some(host_msg) = decode_host(tag, r)? {
        return Ok(PeerMessage::Host(host_msg));
    }
    Err(DecodeError::InvalidValue {
        what: "message tag",
        value: tag.into(),
    })
}

fn read_byte(r: &mut Reader<'_>) -> Result<u8, DecodeError> {
    let next = r.rest().first().copied();
    // Jute has no byte type; a boolean is one byte, so reading one advances past it (or
    // reports the truncation).
    r.read_bool()?;
    next.ok_or(DecodeError::Truncated {
        offset: r.position(),
        needed: 1,
    })
}

/// A boolean that must be 0 or 1: jute reads any non-zero byte as true, but a peer of ours
/// only writes 0 or 1, so anything else is corruption.
fn read_flag(r: &mut Reader<'_>, what: &'static str) -> Result<bool, DecodeError> {
    match read_byte(r)? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::InvalidValue {
            what,
            value: other.into(),
        }),
    }
}

/// A vector's element count. Each element takes at least `element_len_min` bytes, so a count
/// the rest of the frame cannot hold fails here, before anything is allocated for it. Our
/// peers never send a null (−1) vector.
fn read_count(r: &mut Reader<'_>, element_len_min: usize) -> Result<usize, DecodeError> {
    let offset = r.position();
    let len = r.read_i32()?;
    let count = usize::try_from(len).map_err(|_| DecodeError::NegativeLength { offset, len })?;
    if count.saturating_mul(element_len_min) > r.remaining() {
        return Err(DecodeError::LengthTooLarge {
            offset,
            len: count,
            remaining: r.remaining(),
        });
    }
    Ok(count)
}

/// A vector's count; a frame that could hold more than `i32::MAX` elements is over the
/// transport's 1 GiB cap, which refuses to send it.
fn write_count(w: &mut Writer, count: usize) {
    w.write_i32(count as i32);
}

/// A buffer our peers never send as null.
fn read_required_buffer<'a>(
    r: &mut Reader<'a>,
    what: &'static str,
) -> Result<&'a [u8], DecodeError> {
    r.read_buffer()?
        .ok_or(DecodeError::InvalidValue { what, value: -1 })
}

fn write_zxid(w: &mut Writer, zxid: Zxid) {
    w.write_i64(zxid.as_i64());
}

fn read_zxid(r: &mut Reader<'_>) -> Result<Zxid, DecodeError> {
    Ok(Zxid::from_i64(r.read_i64()?))
}

/// An epoch is a u32; it travels as the i32 with the same bits.
fn write_epoch(w: &mut Writer, epoch: u32) {
    w.write_i32(epoch as i32);
}

fn read_epoch(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    Ok(r.read_i32()? as u32)
}

/// A u64 travels as the i64 with the same bits.
fn write_u64(w: &mut Writer, value: u64) {
    w.write_i64(value as i64);
}

fn read_u64(r: &mut Reader<'_>) -> Result<u64, DecodeError> {
    Ok(r.read_i64()? as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_then(count: i32, rest_len: usize) -> Vec<u8> {
        let mut bytes = count.to_be_bytes().to_vec();
        bytes.resize(4 + rest_len, 0);
        bytes
    }

    #[test]
    fn a_count_may_claim_exactly_what_is_left() {
        let bytes = count_then(3, 24);
        assert_eq!(read_count(&mut Reader::new(&bytes), 8), Ok(3));
        let bytes = count_then(4, 24);
        assert_eq!(
            read_count(&mut Reader::new(&bytes), 8),
            Err(DecodeError::LengthTooLarge {
                offset: 0,
                len: 4,
                remaining: 24
            })
        );
    }

    #[test]
    fn a_count_of_zero_needs_nothing_and_a_negative_count_fails() {
        assert_eq!(read_count(&mut Reader::new(&count_then(0, 0)), 8), Ok(0));
        assert_eq!(
            read_count(&mut Reader::new(&count_then(-1, 64)), 8),
            Err(DecodeError::NegativeLength { offset: 0, len: -1 })
        );
    }

    #[test]
    fn a_byte_is_read_or_reported_missing() {
        let mut r = Reader::new(&[7]);
        assert_eq!(read_byte(&mut r), Ok(7));
        assert!(matches!(
            read_byte(&mut r),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn flags_are_zero_or_one() {
        assert_eq!(read_flag(&mut Reader::new(&[0]), "f"), Ok(false));
        assert_eq!(read_flag(&mut Reader::new(&[1]), "f"), Ok(true));
        assert_eq!(
            read_flag(&mut Reader::new(&[2]), "f"),
            Err(DecodeError::InvalidValue {
                what: "f",
                value: 2
            })
        );
    }
}
