//! ZooKeeper's tree digest (3.6+, `DigestCalculator` version 2, `NodeHashMapImpl`, `AdHash`):
//! the wrapping sum over all nodes of a CRC-32 of the node's path, data and persisted stat.
//! Nodes under `/zookeeper/` do not count; the root counts under the path "".

use proto::StatPersisted;

/// The digest version this module computes; a recorded digest of another version is not
/// compared, as ZooKeeper does not compare it.
pub const DIGEST_VERSION: i32 = 2;

/// One node's share of the tree digest.
pub fn node_digest(path: &str, data: Option<&[u8]>, stat: &StatPersisted) -> i64 {
    if path.starts_with("/zookeeper/") {
        return 0;
    }
    let path = if path == "/" { "" } else { path };
    let mut fields = [0u8; 60];
    let mut at = 0;
    for v in [stat.czxid, stat.mzxid, stat.pzxid, stat.ctime, stat.mtime] {
        fields[at..at + 8].copy_from_slice(&v.to_be_bytes());
        at += 8;
    }
    for v in [stat.version, stat.cversion, stat.aversion] {
        fields[at..at + 4].copy_from_slice(&v.to_be_bytes());
        at += 4;
    }
    fields[at..at + 8].copy_from_slice(&stat.ephemeral_owner.to_be_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(path.as_bytes());
    if let Some(data) = data {
        crc.update(data);
    }
    crc.update(&fields);
    i64::from(crc.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_subtree_and_root_aliases() {
        let stat = StatPersisted::default();
        assert_eq!(node_digest("/zookeeper/quota", Some(b""), &stat), 0);
        assert_ne!(node_digest("/zookeeper", Some(b""), &stat), 0);
        assert_eq!(
            node_digest("/", Some(b""), &stat),
            node_digest("", Some(b""), &stat)
        );
        // null data and empty data hash alike, as in ZooKeeper (nothing is fed for either).
        assert_eq!(
            node_digest("/a", None, &stat),
            node_digest("/a", Some(b""), &stat)
        );
    }
}
