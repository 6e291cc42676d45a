//! What each session may observe, checked with zxids (ZooKeeper's ordering guarantees, in the
//! paper's §2.3 and the programmer's guide: "a client will never see an older view").
//!
//! * The last zxid a session has seen (the reply header's) never goes backwards.
//! * A read never returns data older than what the session had already seen: if the session
//!   had seen zxid `z` when it invoked a read of key `k`, no successful write to `k` with a zxid
//!   in `(m, z]` may exist, `m` being the mzxid the read returned.
//! * Successful writes have distinct zxids, and a read's mzxid is the zxid of the write whose
//!   value it returned (a replica that applied different data under one zxid diverged).

use crate::history::{Operation, Record};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A broken session guarantee and the operations that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionViolation {
    pub explanation: String,
}

impl fmt::Display for SessionViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explanation)
    }
}

/// Runs every check; the first violation found is returned.
pub fn check(records: &[Record]) -> Result<(), SessionViolation> {
    let writes = successful_writes(records)?;
    let mut by_process: BTreeMap<u64, Vec<&Record>> = BTreeMap::new();
    for record in records {
        by_process.entry(record.process).or_default().push(record);
    }
    for (_, mut ops) in by_process {
        ops.sort_by_key(|r| r.invoke_ns);
        check_one_session(&ops, &writes)?;
    }
    Ok(())
}

/// Per key: the zxid of every successful write and the value it wrote.
type Writes<'a> = HashMap<&'a str, BTreeMap<i64, &'a Record>>;

fn successful_writes(records: &[Record]) -> Result<Writes<'_>, SessionViolation> {
    let mut writes: Writes<'_> = HashMap::new();
    let mut by_zxid: HashMap<i64, &Record> = HashMap::new();
    for record in records
        .iter()
        .filter(|r| r.is_ok() && r.operation.is_write())
    {
        let Some(zxid) = record.zxid else {
            continue;
        };
        if let Some(other) = by_zxid.insert(zxid, record) {
            return Err(SessionViolation {
                explanation: format!(
                    "two successful writes have zxid 0x{zxid:x}:\n    {other}\n    {record}"
                ),
            });
        }
        writes
            .entry(record.operation.key())
            .or_default()
            .insert(zxid, record);
    }
    Ok(writes)
}

fn check_one_session(ops: &[&Record], writes: &Writes<'_>) -> Result<(), SessionViolation> {
    let mut seen: Option<&Record> = None;
    for &record in ops {
        let seen_zxid = seen.and_then(|r| r.session_zxid).unwrap_or(0);
        if let Some(read) = record.read_value() {
            check_read(record, read, seen_zxid, writes)?;
        }
        let Some(now) = record.session_zxid else {
            continue;
        };
        if let Some(before) = seen.filter(|_| now < seen_zxid) {
            return Err(SessionViolation {
                explanation: format!(
                    "session p{} saw its last zxid go backwards, 0x{seen_zxid:x} then \
                     0x{now:x}:\n    {before}\n    {record}",
                    record.process
                ),
            });
        }
        seen = Some(record);
    }
    Ok(())
}

fn check_read(
    record: &Record,
    value: &Option<String>,
    seen_zxid: i64,
    writes: &Writes<'_>,
) -> Result<(), SessionViolation> {
    let (Some(mzxid), Some(key_writes)) = (record.zxid, writes.get(record.operation.key())) else {
        return Ok(());
    };
    // A newer write the session had already seen makes this read stale.
    let newer = (mzxid < seen_zxid)
        .then(|| key_writes.range(mzxid + 1..=seen_zxid).next())
        .flatten();
    if let Some((_, newer)) = newer {
        return Err(SessionViolation {
            explanation: format!(
                "session p{} read data older than it had seen (last zxid seen \
                 0x{seen_zxid:x}):\n    {record}\n  \
                 but this write had committed before:\n    {newer}",
                record.process
            ),
        });
    }
    // The write with the read's mzxid must have written the value read.
    if let (Some(writer), Some(value)) = (key_writes.get(&mzxid), value) {
        if let Operation::Write { value: written, .. } = &writer.operation {
            if written != value {
                return Err(SessionViolation {
                    explanation: format!(
                        "a read returned {value:?} with mzxid 0x{mzxid:x}, but the write with that \
                         zxid wrote {written:?}:\n    {record}\n    {writer}"
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Outcome;

    fn record(
        process: u64,
        operation: Operation,
        at: u64,
        zxid: i64,
        session_zxid: i64,
        value: Option<&str>,
    ) -> Record {
        Record {
            process,
            operation,
            invoke_ns: at,
            complete_ns: Some(at + 1),
            outcome: Outcome::Ok {
                value: value.map(str::to_string),
            },
            zxid: Some(zxid),
            session_zxid: Some(session_zxid),
        }
    }

    fn write(p: u64, value: &str, at: u64, zxid: i64) -> Record {
        let w = Operation::Write {
            key: "/k".into(),
            value: value.into(),
        };
        record(p, w, at, zxid, zxid, None)
    }

    fn read(p: u64, value: &str, at: u64, mzxid: i64, session_zxid: i64) -> Record {
        record(
            p,
            Operation::Read { key: "/k".into() },
            at,
            mzxid,
            session_zxid,
            Some(value),
        )
    }

    #[test]
    fn consistent_sessions_pass() {
        let h = [
            write(1, "a", 0, 10),
            read(2, "a", 5, 10, 10),
            write(1, "b", 10, 12),
            read(2, "b", 20, 12, 13),
        ];
        check(&h).expect("fine");
    }

    #[test]
    fn session_zxid_going_backwards_is_caught() {
        let h = [write(1, "a", 0, 10), read(1, "a", 5, 10, 9)];
        let v = check(&h).expect_err("backwards");
        assert!(v.explanation.contains("go backwards"), "{v}");
    }

    #[test]
    fn read_older_than_the_session_has_seen_is_caught() {
        // p2 wrote b (zxid 12), then read a (mzxid 10) on a lagging server.
        let h = [
            write(1, "a", 0, 10),
            write(2, "b", 10, 12),
            read(2, "a", 20, 10, 12),
        ];
        let v = check(&h).expect_err("stale for the session");
        assert!(v.explanation.contains("older than it had seen"), "{v}");
        // Another session may read the older value: it had not seen zxid 12.
        let h = [
            write(1, "a", 0, 10),
            write(2, "b", 10, 12),
            read(3, "a", 20, 10, 10),
        ];
        check(&h).expect("sequential consistency allows it");
    }

    #[test]
    fn divergent_data_under_one_zxid_is_caught() {
        let h = [write(1, "a", 0, 10), read(2, "x", 5, 10, 10)];
        let v = check(&h).expect_err("diverged");
        assert!(v.explanation.contains("wrote \"a\""), "{v}");
        let h = [write(1, "a", 0, 10), write(2, "b", 5, 10)];
        check(&h).expect_err("duplicate zxid");
    }
}
