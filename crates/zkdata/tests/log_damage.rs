//! Log files as ZooKeeper writes them (header, Adler-32, length, entry, `B`, zero padding),
//! damaged in the ways a crash or a disk can damage them, read from real files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proto::jute::{Record, Writer};
use proto::txn::{CreateTxn, TxnHeader};
use std::path::Path;
use zkdata::txn_log::{read_file, FileEnd};
use zkdata::ZkDataError;

fn entry(zxid: i64) -> Vec<u8> {
    let mut w = Writer::new();
    TxnHeader {
        client_id: 1,
        cxid: zxid as i32,
        zxid,
        time: 1000 + zxid,
        op_type: 1,
    }
    .encode(&mut w);
    CreateTxn {
        path: format!("/n{zxid}"),
        data: Some(vec![7; 20]),
        acl: tree::acl::open_acl_unsafe().into(),
        ephemeral: false,
        parent_cversion: zxid as i32,
    }
    .encode(&mut w);
    w.into_inner()
}

/// A log of `count` entries from zxid 1 and `padding` zero bytes; the offsets of the entries.
fn log_bytes(count: i64, padding: usize) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    out.extend_from_slice(&0x5a4b_4c47i32.to_be_bytes());
    out.extend_from_slice(&2i32.to_be_bytes());
    out.extend_from_slice(&0i64.to_be_bytes());
    let mut offsets = Vec::new();
    for zxid in 1..=count {
        offsets.push(out.len());
        let e = entry(zxid);
        out.extend_from_slice(&i64::from(adler2::adler32_slice(&e)).to_be_bytes());
        out.extend_from_slice(&(e.len() as i32).to_be_bytes());
        out.extend_from_slice(&e);
        out.push(b'B');
    }
    out.extend(std::iter::repeat_n(0u8, padding));
    (out, offsets)
}

fn read(path: &Path) -> (Result<FileEnd, ZkDataError>, Vec<i64>) {
    let mut zxids = Vec::new();
    let end = read_file(
        path,
        &mut |_, e| {
            zxids.push(e.header.zxid);
            Ok(())
        },
        &mut |_| {},
    );
    (end, zxids)
}

#[test]
fn a_whole_log_reads_to_the_padding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.1");
    std::fs::write(&path, log_bytes(5, 4096).0).unwrap();
    let (end, zxids) = read(&path);
    assert_eq!(end.unwrap(), FileEnd::Clean);
    assert_eq!(zxids, vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_torn_last_entry_is_cut_where_zookeeper_cuts_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.1");
    let (mut bytes, offsets) = log_bytes(5, 4096);
    // The last entry's tail never reached the disk: zeros from its middle on.
    let last = offsets[4];
    for b in &mut bytes[last + 20..] {
        *b = 0;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (end, zxids) = read(&path);
    assert!(matches!(end, Ok(FileEnd::Torn { offset, .. }) if offset == last as u64));
    assert_eq!(zxids, vec![1, 2, 3, 4]);
    // The file simply ending inside the entry is torn too.
    std::fs::write(&path, &bytes[..last + 30]).unwrap();
    let (end, _) = read(&path);
    assert!(matches!(end, Ok(FileEnd::Torn { offset, .. }) if offset == last as u64));
}

#[test]
fn a_flipped_byte_is_damage_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.1");
    let (mut bytes, offsets) = log_bytes(5, 4096);
    bytes[offsets[2] + 12 + 30] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let (end, zxids) = read(&path);
    let message = end.unwrap_err().to_string();
    assert!(message.contains("log.1"), "{message}");
    assert!(
        message.contains(&format!("byte offset {}", offsets[2])),
        "{message}"
    );
    assert!(message.contains("checksum mismatch"), "{message}");
    assert_eq!(zxids, vec![1, 2]);
}

#[test]
fn an_incomplete_entry_with_data_after_it_is_damage_not_a_torn_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.1");
    let (mut bytes, offsets) = log_bytes(5, 4096);
    // A wrong end-of-record byte in the middle of the log.
    let eor = offsets[3] - 1;
    bytes[eor] = b'X';
    std::fs::write(&path, &bytes).unwrap();
    let (end, _) = read(&path);
    let message = end.unwrap_err().to_string();
    assert!(
        message.contains(&format!("byte offset {}", offsets[2])) && message.contains("more data"),
        "{message}"
    );
    // And data after the zero padding.
    let (mut bytes, _) = log_bytes(2, 4096);
    let at = bytes.len() - 100;
    bytes[at] = 9;
    std::fs::write(&path, &bytes).unwrap();
    assert!(read(&path).0.is_err());
}

#[test]
fn not_a_log_and_hostile_lengths_are_refused_without_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.1");
    std::fs::write(&path, b"ZKSNxxxxxxxxxxxxxxxx").unwrap();
    assert!(read(&path).0.unwrap_err().to_string().contains("magic"));
    let (mut bytes, offsets) = log_bytes(1, 0);
    let len_at = offsets[0] + 8;
    bytes[len_at..len_at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let message = read(&path).0.unwrap_err().to_string();
    assert!(message.contains("unreasonable entry length"), "{message}");
}
