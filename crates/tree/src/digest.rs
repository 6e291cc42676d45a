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

/// FNV-1a over the node's fields, then a final avalanche so that sums of hashes do not cancel
/// on structured inputs.
fn node_hash(path: &str, data: Option<&[u8]>, stat: &StatPersisted) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(path.as_bytes());
    eat(&[0]);
    match data {
        Some(d) => {
            eat(&(d.len() as u64).to_be_bytes());
            eat(d);
        }
        None => eat(&u64::MAX.to_be_bytes()),
    }
    for v in [
        stat.czxid,
        stat.mzxid,
        stat.ctime,
        stat.mtime,
        stat.ephemeral_owner,
        stat.pzxid,
    ] {
        eat(&v.to_be_bytes());
    }
    for v in [stat.version, stat.cversion, stat.aversion] {
        eat(&v.to_be_bytes());
    }
    let mut x = h;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}
