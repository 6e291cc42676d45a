//! A digest of the whole tree, updated incrementally: the wrapping sum of one hash per node
//! over its path, data and persisted stat. Two replicas with the same state have the same
//! digest whatever order their nodes were created in, so a proposal can carry the leader's
//! digest and a follower can check its own after applying (DESIGN.md §4).

use proto::StatPersisted;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NodeDigest {
    sum: u64,
}

impl NodeDigest {
    pub fn value(&self) -> u64 {
        self.sum
    }

    pub fn add(&mut self, path: &str, data: Option<&[u8]>, stat: &StatPersisted) {
        self.sum = self.sum.wrapping_add(node_hash(path, data, stat));
    }

    pub fn remove(&mut self, path: &str, data: Option<&[u8]>, stat: &StatPersisted) {
        self.sum = self.sum.wrapping_sub(node_hash(path, data, stat));
    }
}

/// A multiply-xorshift hash over the node's fields, eight bytes at a time, then a final
/// avalanche so that sums of hashes do not cancel on structured inputs. (Hashing byte by byte
/// cost an eighth of a snapshot load.)
fn node_hash(path: &str, data: Option<&[u8]>, stat: &StatPersisted) -> u64 {
    let mut h = Mixer(0xcbf2_9ce4_8422_2325);
    h.bytes(path.as_bytes());
    match data {
        Some(d) => h.bytes(d),
        None => h.word(u64::MAX),
    }
    for v in [
        stat.czxid,
        stat.mzxid,
        stat.ctime,
        stat.mtime,
        stat.ephemeral_owner,
        stat.pzxid,
    ] {
        h.word(v as u64);
    }
    for v in [stat.version, stat.cversion, stat.aversion] {
        h.word(u64::from(v as u32));
    }
    let h = h.0;
    let mut x = h;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

struct Mixer(u64);

impl Mixer {
    fn word(&mut self, w: u64) {
        self.0 = (self.0 ^ w)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }

    /// Length first, so that ("ab", "c") and ("a", "bc") differ.
    fn bytes(&mut self, bytes: &[u8]) {
        self.word(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(w));
        }
    }
}
