//! Byte-exact vectors: frames captured between Apache ZooKeeper 3.9.3's Java client and server
//! (`tests/vectors/*.txt`, format in its README) must decode and re-encode to the same bytes.

use proto::jute::{Reader, Record, Writer};
use proto::request::Request;
use proto::response::Response;
use proto::*;
use std::collections::BTreeMap;
use std::path::Path;

fn from_hex(hex: &str) -> Vec<u8> {
    assert!(hex.len().is_multiple_of(2), "odd hex length");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// Decodes a client frame and encodes it again.
fn reencode_request(op: &str, bytes: &[u8]) -> Vec<u8> {
    if op == "connect" {
        return ConnectRequest::from_bytes(bytes)
            .expect("connect request decodes")
            .to_bytes();
    }
    let mut r = Reader::new(bytes);
    let header = RequestHeader::decode(&mut r).expect("request header");
    assert_eq!(
        header.op_type.to_string(),
        op,
        "header type matches the file's op"
    );
    let request = Request::decode(header.op_type, r.rest()).expect("request decodes");
    let mut w = Writer::new();
    header.encode(&mut w);
    request.encode_body(&mut w);
    w.into_inner()
}

/// Decodes a server frame and encodes it again.
fn reencode_reply(op: &str, bytes: &[u8]) -> Vec<u8> {
    if op == "connect" {
        return ConnectResponse::from_bytes(bytes)
            .expect("connect response decodes")
            .to_bytes();
    }
    let mut r = Reader::new(bytes);
    let header = ReplyHeader::decode(&mut r).expect("reply header");
    let mut w = Writer::new();
    header.encode(&mut w);
    if op == "event" {
        assert_eq!(header.xid, -1);
        WatcherEvent::decode(&mut r)
            .expect("watcher event")
            .encode(&mut w);
        r.finish().expect("nothing after the event");
        return w.into_inner();
    }
    if header.err == 0 {
        let code: i32 = op.parse().expect("numeric op");
        let op_code = OpCode::from_i32(code).expect("known op code");
        Response::decode(op_code, r.rest())
            .expect("reply body decodes")
            .encode(&mut w);
    } else {
        r.finish().expect("an error reply has no body");
    }
    w.into_inner()
}

#[test]
fn captured_frames_reencode_identically() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("vectors directory") {
        let file = entry.expect("dir entry").path();
        if file.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&file).expect("vector file");
        for (n, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [dir, op, hex] = fields[..] else { continue };
            if !matches!(dir, "C" | "S") {
                continue;
            }
            // SASL (102) is not implemented by meerkat; its tokens are opaque anyway.
            if op == "102" {
                continue;
            }
            let bytes = from_hex(hex);
            let again = if dir == "C" {
                reencode_request(op, &bytes)
            } else {
                reencode_reply(op, &bytes)
            };
            assert_eq!(
                again,
                bytes,
                "{}:{}: {dir} {op} re-encodes differently",
                file.display(),
                n + 1
            );
            *counts.entry(format!("{dir} {op}")).or_default() += 1;
        }
    }
    assert!(
        files >= 5,
        "expected the captured vector files, found {files}"
    );
    // Every client op the Java client sends must be covered by at least one vector.
    for op in [
        "connect", "1", "2", "3", "4", "5", "6", "7", "8", "9", "11", "12", "14", "15", "17", "18",
        "19", "21", "22", "100", "101", "103", "104", "105", "106", "107", "-11",
    ] {
        assert!(
            counts.contains_key(&format!("C {op}")),
            "no request vector for op {op}"
        );
        assert!(
            counts.contains_key(&format!("S {op}")),
            "no reply vector for op {op}"
        );
    }
    assert!(counts.contains_key("S event"));
}
