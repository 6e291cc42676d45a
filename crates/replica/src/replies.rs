//! Encoding what the server sends, straight into length-prefixed frames.

use proto::frame::{begin_frame, end_frame};
use proto::jute::{Record, Writer};
use proto::op_code::xid;
use proto::response::Response;
use proto::{ConnectResponse, ReplyHeader, WatcherEvent};

/// A reply frame: header, then (when `err == 0`) the body.
pub fn reply_frame(xid: i32, zxid: i64, err: i32, body: Option<&Response>) -> Vec<u8> {
    reply_frame_with(xid, zxid, err, |w| {
        if let Some(body) = body {
            body.encode(w)
        }
    })
}

/// A reply frame whose body is written by `body` (used to copy znode data only once).
pub fn reply_frame_with(xid: i32, zxid: i64, err: i32, body: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let at = begin_frame(&mut out);
    let mut w = Writer::wrap(out);
    ReplyHeader { xid, zxid, err }.encode(&mut w);
    if err == 0 {
        body(&mut w);
    }
    let mut out = w.into_inner();
    end_frame(&mut out, at);
    out
}

/// A watch notification (xid −1).
pub fn event_frame(zxid: i64, event: &WatcherEvent) -> Vec<u8> {
    reply_frame_with(xid::NOTIFICATION, zxid, 0, |w| event.encode(w))
}

/// The handshake answer (no reply header).
pub fn connect_frame(response: &ConnectResponse) -> Vec<u8> {
    let mut out = Vec::with_capacity(40);
    let at = begin_frame(&mut out);
    let mut w = Writer::wrap(out);
    response.encode(&mut w);
    let mut out = w.into_inner();
    end_frame(&mut out, at);
    out
}

/// A SASL reply: header, then the `SetSASLResponse` token even with an error (ZooKeeper sends
/// `SetSASLResponse(null)` with AUTHFAILED), as a jute buffer (`None` is length −1).
pub fn sasl_frame(xid: i32, err: i32, token: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + token.map_or(0, <[u8]>::len));
    let at = begin_frame(&mut out);
    let mut w = Writer::wrap(out);
    // ZooKeeper answers SASL with zxid 0, as auth.
    ReplyHeader { xid, zxid: 0, err }.encode(&mut w);
    w.write_buffer(token);
    let mut out = w.into_inner();
    end_frame(&mut out, at);
    out
}
