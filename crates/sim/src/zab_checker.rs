//! The Zab properties (ZAB.md §1, DSN'11), checked on every delivery and once more at the end:
//! integrity, agreement, total order / prefix, primary order, primary integrity, one leader
//! per epoch, and that durable logs never hold an uncommitted record before committed ones.
//!
//! Diskless mode may lose committed writes legitimately (see `durability.rs`): the lost ones
//! are *pruned* from the committed order into `lost` (a branch the ensemble abandoned), and a
//! lost write delivered again is revived. The end-of-run prefix checks then judge each window
//! only up to its first lost delivery, images only if they hold no lost write, and primary
//! integrity is judged at each establishment instead (a missing committed write is a loss).

use proto::txn::Txn;
use std::collections::BTreeMap;
use zab::{Millis, SharedEntry, Sid, Zxid};

/// One server's deliveries from one starting point (a boot or an installed snapshot).
#[derive(Debug)]
struct Window {
    sid: Sid,
    base: Zxid,
    delivered: Vec<Zxid>,
}

#[derive(Debug, Default)]
pub struct ZabChecker {
    diskless: bool,
    proposals: BTreeMap<Zxid, (Sid, SharedEntry)>,
    /// The global order: every zxid some server delivered, with what it delivered.
    pub committed: BTreeMap<Zxid, SharedEntry>,
    /// Diskless: committed writes legitimately lost (pruned from `committed`).
    pub lost: BTreeMap<Zxid, SharedEntry>,
    /// The zxid each committed write was first applied after (its parent in the tree of
    /// branches; a line unless writes were lost).
    pub parents: BTreeMap<Zxid, Zxid>,
    pub revived: usize,
    /// Epoch → (leader, its last delivered zxid when established, time).
    pub leaders: BTreeMap<u32, (Sid, Zxid, Millis)>,
    windows: Vec<Window>,
    open_window: BTreeMap<Sid, usize>,
    images: Vec<(Sid, Zxid, Vec<Zxid>)>,
    pub failures: Vec<String>,
}

impl ZabChecker {
    pub fn new(diskless: bool) -> ZabChecker {
        ZabChecker {
            diskless,
            ..ZabChecker::default()
        }
    }

    /// Diskless: `zxid` was lost legitimately; it leaves the committed order.
    pub fn prune(&mut self, zxid: Zxid) {
        assert!(
            self.diskless,
            "a durable ensemble never loses a committed write"
        );
        if let Some(e) = self.committed.remove(&zxid) {
            self.lost.insert(zxid, e);
        }
    }

    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }

    pub fn on_propose(&mut self, sid: Sid, entry: &SharedEntry) {
        let epoch = entry.zxid.epoch();
        match self.leaders.get(&epoch) {
            Some((leader, _, _)) if *leader == sid => {}
            other => {
                let other = other.map(|l| l.0);
                self.fail(format!(
                    "primary order: {sid} proposed {} but the leader of epoch {epoch} is {other:?}",
                    entry.zxid
                ));
            }
        }
        if let Some((prev_sid, prev)) = self.proposals.get(&entry.zxid) {
            if prev.txn != entry.txn {
                let msg = format!(
                    "two proposals for {}: by {prev_sid} and by {sid}",
                    entry.zxid
                );
                self.fail(msg);
            }
            return;
        }
        self.proposals.insert(entry.zxid, (sid, entry.clone()));
    }

    pub fn on_established(&mut self, sid: Sid, epoch: u32, delivered: Zxid, now: Millis) {
        if let Some((other, _, _)) = self.leaders.get(&epoch) {
            if *other != sid {
                let msg = format!("leadership: {other} and {sid} both established epoch {epoch}");
                self.fail(msg);
            }
            return;
        }
        self.leaders.insert(epoch, (sid, delivered, now));
    }

    pub fn start_window(&mut self, sid: Sid, base: Zxid) {
        self.windows.push(Window {
            sid,
            base,
            delivered: Vec::new(),
        });
        self.open_window.insert(sid, self.windows.len() - 1);
    }

    /// A snapshot image was installed or loaded: its transactions must be the committed prefix.
    pub fn on_image(&mut self, sid: Sid, zxid: Zxid, txns: &[Txn]) {
        let mut zxids = Vec::with_capacity(txns.len());
        let mut prev = Zxid::ZERO;
        for t in txns {
            let z = Zxid::from_i64(t.header.zxid);
            let known = self.committed.get(&z).or_else(|| self.lost.get(&z));
            match known {
                Some(e) if e.txn == *t => {}
                Some(_) => self.fail(format!("agreement: {sid}'s snapshot differs at {z}")),
                None => self.fail(format!("integrity: {sid}'s snapshot holds undelivered {z}")),
            }
            self.parents.entry(z).or_insert(prev);
            prev = z;
            zxids.push(z);
        }
        self.images.push((sid, zxid, zxids));
        self.start_window(sid, zxid);
    }

    /// `sid` applied `entry` right after `parent` (its previous applied zxid).
    pub fn on_deliver(&mut self, sid: Sid, entry: &SharedEntry, parent: Zxid) {
        let z = entry.zxid;
        self.parents.entry(z).or_insert(parent);
        if let Some(lost) = self.lost.get(&z) {
            if lost.txn == entry.txn {
                // A later leader had it after all: back into the committed order.
                self.lost.remove(&z);
                self.revived += 1;
            }
        }
        match self.proposals.get(&z) {
            Some((_, p)) if p.txn == entry.txn => {}
            _ => self.fail(format!(
                "integrity: {sid} delivered {z}, which no leader proposed"
            )),
        }
        if let Some(prev) = self.committed.get(&z) {
            if prev.txn != entry.txn {
                self.fail(format!(
                    "agreement: {sid} delivered a different transaction at {z}"
                ));
            }
        } else {
            self.committed.insert(z, entry.clone());
        }
        if let Some(&w) = self.open_window.get(&sid) {
            if let Some(last) = self.windows[w].delivered.last() {
                if *last >= z {
                    self.fail(format!("total order: {sid} delivered {z} after {last}"));
                }
            }
            self.windows[w].delivered.push(z);
        }
    }

    /// End of run: no server skipped a committed transaction (prefix / total order), snapshots
    /// were exact prefixes, every leader had all earlier epochs' commits (primary integrity).
    pub fn finish(&mut self, disks: &[(Sid, Vec<SharedEntry>)]) {
        let mut found = Vec::new();
        for w in &self.windows {
            let mut prev = w.base;
            for &z in &w.delivered {
                if self.lost.contains_key(&z) {
                    break; // the rest of this window is on an abandoned branch
                }
                if let Some((&missing, _)) = self.committed.range(prev..z).find(|(k, _)| **k > prev)
                {
                    found.push(format!(
                        "prefix: {} delivered {z} after {prev} but skipped committed {missing}",
                        w.sid
                    ));
                    break;
                }
                prev = z;
            }
        }
        for (sid, at, zxids) in &self.images {
            if zxids.iter().any(|z| self.lost.contains_key(z)) {
                continue; // an image of an abandoned branch
            }
            let expected: Vec<Zxid> = self.committed.range(..=*at).map(|(k, _)| *k).collect();
            if *zxids != expected {
                found.push(format!(
                    "prefix: {sid}'s snapshot at {at} is not the committed prefix"
                ));
            }
        }
        // Diskless: judged at each establishment (a missing committed write is a loss).
        let leaders = if self.diskless {
            BTreeMap::new()
        } else {
            self.leaders.clone()
        };
        for (epoch, (sid, delivered, _)) in &leaders {
            if let Some((&z, _)) = self
                .committed
                .range(delivered.next_after()..)
                .find(|(k, _)| k.epoch() < *epoch)
            {
                found.push(format!(
                    "primary integrity: {sid} led epoch {epoch} from {delivered} without {z}"
                ));
            }
        }
        // Diskless servers have no log on disk.
        let disks = if self.diskless { &[][..] } else { disks };
        for (sid, log) in disks {
            for pair in log.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let b_committed = self.committed.get(&b.zxid).is_some_and(|e| e.txn == b.txn);
                let a_committed = self.committed.get(&a.zxid).is_some_and(|e| e.txn == a.txn);
                if b_committed && !a_committed {
                    found.push(format!(
                        "log prefix: {sid}'s disk holds uncommitted {} before committed {}",
                        a.zxid, b.zxid
                    ));
                    break;
                }
            }
        }
        for f in found {
            self.fail(f);
        }
    }
}

trait NextAfter {
    fn next_after(self) -> Zxid;
}

impl NextAfter for Zxid {
    fn next_after(self) -> Zxid {
        Zxid(self.0 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::txn::{ErrorTxn, Txn, TxnBody, TxnHeader};
    use std::sync::Arc;
    use zab::Entry;

    fn entry(e: u32, c: u32, cxid: i32) -> SharedEntry {
        let zxid = Zxid::new(e, c);
        Arc::new(Entry {
            zxid,
            txn: Txn {
                header: TxnHeader {
                    client_id: 1,
                    cxid,
                    zxid: zxid.as_i64(),
                    time: 0,
                    op_type: -1,
                },
                body: TxnBody::Error(ErrorTxn { err: 0 }),
            },
            digest: None,
        })
    }

    fn checker() -> ZabChecker {
        let mut c = ZabChecker::new(false);
        c.on_established(1, 1, Zxid::ZERO, 0);
        for s in [1, 2] {
            c.start_window(s, Zxid::ZERO);
        }
        c
    }

    #[test]
    fn agreement_and_integrity_violations_are_caught() {
        let mut c = checker();
        c.on_propose(1, &entry(1, 1, 1));
        c.on_deliver(1, &entry(1, 1, 1), Zxid::ZERO);
        c.on_deliver(2, &entry(1, 1, 99), Zxid::ZERO);
        assert!(c.failures.iter().any(|f| f.starts_with("agreement")));
        assert!(c.failures.iter().any(|f| f.starts_with("integrity")));
    }

    #[test]
    fn a_skipped_commit_is_caught_at_the_end() {
        let mut c = checker();
        for k in 1..=3 {
            c.on_propose(1, &entry(1, k, 1));
            c.on_deliver(1, &entry(1, k, 1), Zxid::new(1, k - 1));
        }
        c.on_deliver(2, &entry(1, 1, 1), Zxid::ZERO);
        c.on_deliver(2, &entry(1, 3, 1), Zxid::new(1, 1));
        c.finish(&[]);
        assert!(
            c.failures.iter().any(|f| f.starts_with("prefix")),
            "{:?}",
            c.failures
        );
    }

    #[test]
    fn two_leaders_of_one_epoch_are_caught() {
        let mut c = checker();
        c.on_established(2, 1, Zxid::ZERO, 5);
        assert!(c.failures.iter().any(|f| f.starts_with("leadership")));
    }

    #[test]
    fn uncommitted_record_before_a_committed_one_on_disk_is_caught() {
        let mut c = checker();
        c.on_propose(1, &entry(1, 1, 1));
        c.on_deliver(1, &entry(1, 1, 1), Zxid::ZERO);
        c.on_established(2, 2, Zxid::new(1, 1), 9);
        c.on_propose(2, &entry(2, 1, 1));
        c.on_deliver(2, &entry(2, 1, 1), Zxid::new(1, 1));
        c.finish(&[(3, vec![entry(1, 1, 1), entry(1, 2, 5), entry(2, 1, 1)])]);
        assert!(
            c.failures.iter().any(|f| f.starts_with("log prefix")),
            "{:?}",
            c.failures
        );
    }
}
