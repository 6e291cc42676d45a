//! Damaged bytes anywhere in a snapshot or a log: the reader answers with the data or an error,
//! never a panic, and never allocates what the file cannot back (a hostile length is refused
//! or read in steps). Deterministic: a fixed xorshift seed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn tree() -> tree::DataTree {
    use proto::txn::{CreateTxn, Txn, TxnBody, TxnHeader};
    let mut tree = tree::DataTree::new();
    for i in 1..=40i64 {
        let parent = if i % 3 == 0 { "" } else { "/p" };
        let path = if i == 1 {
            "/p".to_string()
        } else {
            format!("{parent}/n{i}")
        };
        let txn = Txn {
            header: TxnHeader {
                client_id: 7,
                cxid: 1,
                zxid: i,
                time: 1_000 + i,
                op_type: 1,
            },
            body: TxnBody::Create(CreateTxn {
                path,
                data: Some(vec![i as u8; (i as usize * 7) % 50]),
                acl: tree::acl::open_acl_unsafe().into(),
                ephemeral: false,
                parent_cversion: -1,
            }),
        };
        tree.apply(&txn, &mut Vec::new());
    }
    tree
}

fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    match rng.below(4) {
        0 => {
            let cut = rng.below(bytes.len());
            bytes.truncate(cut);
        }
        1 => {
            // A length-sized field made huge.
            let at = rng.below(bytes.len().saturating_sub(4));
            bytes[at..at + 4].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
        }
        _ => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
        }
    }
}

fn try_restore(dir: &Path) {
    if let Ok(source) = zkdata::locate(dir, None) {
        if let Ok(mut restored) = zkdata::restore(&source, &mut zkdata::progress::quiet) {
            let _ = zkdata::to_meerkat::to_meerkat(&mut restored, &mut zkdata::progress::quiet);
        }
    }
}

#[test]
fn mutated_snapshots_never_panic() {
    let base = tempfile::tempdir().unwrap();
    zkdata::export::export(&tree(), base.path(), &mut zkdata::progress::quiet).unwrap();
    let snap = std::fs::read_dir(base.path().join("version-2"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("snapshot."))
        .unwrap();
    let original = std::fs::read(&snap).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..400 {
        let mut bytes = original.clone();
        mutate(&mut rng, &mut bytes);
        std::fs::write(&snap, &bytes).unwrap();
        try_restore(base.path());
    }
}

#[test]
fn mutated_logs_never_panic() {
    let base = tempfile::tempdir().unwrap();
    let empty = tree::DataTree::new();
    zkdata::export::export(&empty, base.path(), &mut zkdata::progress::quiet).unwrap();
    // The same creates as a log after the empty snapshot.
    let mut log = Vec::new();
    log.extend_from_slice(&0x5a4b_4c47i32.to_be_bytes());
    log.extend_from_slice(&2i32.to_be_bytes());
    log.extend_from_slice(&0i64.to_be_bytes());
    for i in 1..=40i64 {
        use proto::jute::{Record, Writer};
        let mut w = Writer::new();
        proto::txn::TxnHeader {
            client_id: 7,
            cxid: 1,
            zxid: i,
            time: 1_000 + i,
            op_type: 1,
        }
        .encode(&mut w);
        proto::txn::CreateTxn {
            path: format!("/n{i}"),
            data: Some(vec![1; 10]),
            acl: tree::acl::open_acl_unsafe().into(),
            ephemeral: false,
            parent_cversion: -1,
        }
        .encode(&mut w);
        let e = w.into_inner();
        log.extend_from_slice(&i64::from(adler2::adler32_slice(&e)).to_be_bytes());
        log.extend_from_slice(&(e.len() as i32).to_be_bytes());
        log.extend_from_slice(&e);
        log.push(b'B');
    }
    log.extend(std::iter::repeat_n(0u8, 256));
    let path = base.path().join("version-2").join("log.1");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    std::fs::write(&path, &log).unwrap();
    try_restore(base.path());
    for _ in 0..400 {
        let mut bytes = log.clone();
        mutate(&mut rng, &mut bytes);
        std::fs::write(&path, &bytes).unwrap();
        try_restore(base.path());
    }
}
