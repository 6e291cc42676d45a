//! Who votes and who observes, as a configuration of ZooKeeper's dynamic reconfiguration
//! (`/zookeeper/config`): the text `server.N=host:port:port[:participant|observer][;client]`
//! per member and a `version=<hex zxid>` line.
//!
//! Zab learns a new configuration from the log itself: a reconfiguration is a transaction
//! (op type `reconfig`, a `setData` of `/zookeeper/config` with the new text), and its zxid is
//! the configuration's version. From the moment a server holds it until it is committed, the
//! configuration is *pending* and every quorum must be a quorum of both the active and the
//! pending configuration (joint consensus, one change at a time, as ZooKeeper's
//! `QuorumVerifier`s of a reconfig proposal). At delivery it becomes the active one.
//!
//! Only ids and roles matter here; addresses are the host's.

use crate::config::Sid;
use crate::zxid::Zxid;
use proto::txn::{Txn, TxnBody};
use std::collections::BTreeSet;

/// The znode that holds the configuration.
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// ZooKeeper's op code of a reconfiguration transaction.
pub const RECONFIG_OP: i32 = 16;

/// One configuration: its version and its members.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Membership {
    /// The zxid of the transaction that made it; zero for a configuration from a file that no
    /// reconfiguration has replaced.
    pub version: Zxid,
    pub voters: BTreeSet<Sid>,
    pub observers: BTreeSet<Sid>,
}

/// Why a configuration text is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    #[error("line {0:?} is neither server.N=... nor version=...")]
    Line(String),
    #[error("server.{0} is listed twice")]
    Duplicate(Sid),
    #[error("a configuration needs at least one voter")]
    NoVoter,
}

impl Membership {
    pub fn new(voters: BTreeSet<Sid>, observers: BTreeSet<Sid>) -> Membership {
        Membership {
            version: Zxid::ZERO,
            voters,
            observers,
        }
    }

    /// Reads the ids, roles and version of a configuration text.
    pub fn parse(text: &str) -> Result<Membership, MembershipError> {
        let mut m = Membership::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let Some((key, value)) = line.split_once('=') else {
                return Err(MembershipError::Line(line.chars().take(80).collect()));
            };
            let key = key.trim();
            if key == "version" {
                let v = u64::from_str_radix(value.trim(), 16)
                    .map_err(|_| MembershipError::Line(line.chars().take(80).collect()))?;
                m.version = Zxid::from_i64(v as i64);
                continue;
            }
            let sid: Sid = key
                .strip_prefix("server.")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| MembershipError::Line(line.chars().take(80).collect()))?;
            let server_part = value.split(';').next().unwrap_or("");
            let observer = server_part
                .rsplit(':')
                .next()
                .is_some_and(|r| r.trim().eq_ignore_ascii_case("observer"));
            let fresh = if observer {
                !m.voters.contains(&sid) && m.observers.insert(sid)
            } else {
                !m.observers.contains(&sid) && m.voters.insert(sid)
            };
            if !fresh {
                return Err(MembershipError::Duplicate(sid));
            }
        }
        if m.voters.is_empty() {
            return Err(MembershipError::NoVoter);
        }
        Ok(m)
    }

    /// The configuration a transaction installs, if it is a reconfiguration. One that does
    /// not parse is no configuration: the leader's prep validated it, so only a damaged log
    /// could hold one, and ignoring it keeps the old, known-good configuration.
    pub fn of_txn(txn: &Txn) -> Option<Membership> {
        if txn.header.op_type != RECONFIG_OP {
            return None;
        }
        let TxnBody::SetData(set) = &txn.body else {
            return None;
        };
        if set.path != CONFIG_NODE {
            return None;
        }
        let text = std::str::from_utf8(set.data.as_deref()?).ok()?;
        let mut m = Membership::parse(text).ok()?;
        m.version = Zxid::from_i64(txn.header.zxid);
        Some(m)
    }

    pub fn is_voter(&self, sid: Sid) -> bool {
        self.voters.contains(&sid)
    }

    pub fn is_member(&self, sid: Sid) -> bool {
        self.voters.contains(&sid) || self.observers.contains(&sid)
    }

    pub fn quorum_size(&self) -> usize {
        self.voters.len() / 2 + 1
    }

    /// True when the servers `has` says yes to are a majority of the voters.
    pub fn is_quorum(&self, has: impl Fn(Sid) -> bool) -> bool {
        self.voters.iter().filter(|&&s| has(s)).count() >= self.quorum_size()
    }

    /// The highest zxid a majority of the voters holds, given what each holds (servers
    /// absent from `holds` hold nothing).
    pub fn quorum_point(&self, holds: impl Fn(Sid) -> Option<Zxid>) -> Option<Zxid> {
        nth_highest(
            self.voters.iter().filter_map(|&s| holds(s)),
            self.quorum_size(),
        )
    }
}

/// The `n`-th highest (1-based) of `values`, None if there are fewer than `n`.
pub(crate) fn nth_highest(values: impl Iterator<Item = Zxid>, n: usize) -> Option<Zxid> {
    const ON_STACK: usize = 16;
    let mut stack = [Zxid::default(); ON_STACK];
    let mut heap = Vec::new();
    let mut len = 0;
    for value in values {
        if len < ON_STACK {
            stack[len] = value;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(value);
        }
        len += 1;
    }
    let held = if len <= ON_STACK {
        &mut stack[..len]
    } else {
        &mut heap[..]
    };
    held.sort_unstable_by(|a, b| b.cmp(a));
    n.checked_sub(1).and_then(|i| held.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::txn::{SetDataTxn, TxnHeader};

    const TEXT: &str = "server.1=127.0.0.1:2888:3888:participant\n\
        server.2=127.0.0.1:2889:3889:participant;0.0.0.0:2182\n\
        server.3=[::1]:2890:3890:observer;2183\nversion=100000002";

    #[test]
    fn parses_roles_and_version() {
        let m = Membership::parse(TEXT).expect("parses");
        assert_eq!(m.voters, [1, 2].into());
        assert_eq!(m.observers, [3].into());
        assert_eq!(m.version, Zxid::new(1, 2));
        assert_eq!(m.quorum_size(), 2);
    }

    #[test]
    fn refuses_garbage_duplicates_and_no_voters() {
        assert!(matches!(
            Membership::parse("some thing"),
            Err(MembershipError::Line(_))
        ));
        assert!(matches!(
            Membership::parse("server.1=a:1:2\nserver.1=a:1:2:observer"),
            Err(MembershipError::Duplicate(1))
        ));
        assert_eq!(
            Membership::parse("server.1=a:1:2:observer"),
            Err(MembershipError::NoVoter)
        );
    }

    /// The definition: the highest value at least `n` of the values reach.
    fn by_counting(values: &[Zxid], n: usize) -> Option<Zxid> {
        values
            .iter()
            .copied()
            .filter(|&point| values.iter().filter(|&&v| v >= point).count() >= n)
            .max()
    }

    #[test]
    fn nth_highest_is_the_highest_point_n_values_reach() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        // Sizes on both sides of the stack buffer, duplicates common (values from 0..8).
        for _ in 0..2_000 {
            let len = next(24) as usize;
            let values: Vec<Zxid> = (0..len).map(|_| Zxid::new(1, next(8) as u32)).collect();
            for n in 1..=len + 1 {
                assert_eq!(
                    nth_highest(values.iter().copied(), n),
                    by_counting(&values, n),
                    "{values:?}, n = {n}"
                );
            }
        }
        assert_eq!(nth_highest(std::iter::empty(), 1), None);
        assert_eq!(nth_highest([Zxid::new(1, 1)].into_iter(), 0), None);
    }

    #[test]
    fn quorum_point_is_the_majority_minimum() {
        let m = Membership::new([1, 2, 3].into(), BTreeSet::new());
        let held = |s: Sid| match s {
            1 => Some(Zxid::new(1, 9)),
            2 => Some(Zxid::new(1, 5)),
            _ => None,
        };
        assert_eq!(m.quorum_point(held), Some(Zxid::new(1, 5)));
        assert_eq!(m.quorum_point(|s| (s == 1).then(|| Zxid::new(1, 9))), None);
        assert!(m.is_quorum(|s| s != 3));
        assert!(!m.is_quorum(|s| s == 3));
    }

    #[test]
    fn only_a_reconfig_of_the_config_node_is_a_configuration() {
        let txn = |op_type, path: &str| Txn {
            header: TxnHeader {
                client_id: 1,
                cxid: 1,
                zxid: Zxid::new(1, 7).as_i64(),
                time: 0,
                op_type,
            },
            body: TxnBody::SetData(SetDataTxn {
                path: path.into(),
                data: Some(TEXT.as_bytes().to_vec()),
                version: -1,
            }),
        };
        let m = Membership::of_txn(&txn(RECONFIG_OP, CONFIG_NODE)).expect("parses");
        assert_eq!(
            m.version,
            Zxid::new(1, 7),
            "the version is the transaction's zxid"
        );
        assert_eq!(Membership::of_txn(&txn(5, CONFIG_NODE)), None);
        assert_eq!(Membership::of_txn(&txn(RECONFIG_OP, "/other")), None);
    }
}
