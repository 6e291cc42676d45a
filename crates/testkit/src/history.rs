//! A recorded history of concurrent client operations on registers (one znode each).
//!
//! Every operation is recorded twice: when it is invoked and when it completes, both as
//! nanoseconds on one monotonic clock since the history began. A *process* is one client
//! session doing one operation at a time; a new session is a new process.
//!
//! Outcomes follow what a client can know:
//! * [`Outcome::Ok`]: the server answered; a read carries the value it saw (`None`: no znode);
//! * [`Outcome::Fail`]: the server answered with an error that means "not done" (NoNode,
//!   NodeExists, BadVersion...): the operation had no effect;
//! * [`Outcome::Unknown`]: no answer (connection loss, timeout): a write may or may not have
//!   taken effect, at any time after its invocation. An operation never completed is unknown.
//!
//! The checkers are [`crate::linearizability`] and [`crate::sessions`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Operations one history holds at most; more are an error of the test, not of the server.
pub const RECORDS_MAX: usize = 1_000_000;

/// What a client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// `set_data` (or `create`) of `value` at `key`.
    Write { key: String, value: String },
    /// A plain `get_data`: sequentially consistent in ZooKeeper, not linearizable.
    Read { key: String },
    /// `sync` then `get_data` on the same session: the linearizable read ZooKeeper offers.
    SyncRead { key: String },
}

impl Operation {
    pub fn key(&self) -> &str {
        match self {
            Operation::Write { key, .. }
            | Operation::Read { key }
            | Operation::SyncRead { key } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(self, Operation::Write { .. })
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not completed yet; counts as [`Outcome::Unknown`] when checked.
    Pending,
    /// Done. A read carries the value it returned (`None`: the znode did not exist).
    Ok { value: Option<String> },
    /// Answered with an error that means the operation had no effect.
    Fail(String),
    /// No answer: the operation may or may not have taken effect.
    Unknown(String),
}

/// One operation, invoked and (maybe) completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The session that ran it.
    pub process: u64,
    pub operation: Operation,
    /// Nanoseconds since the history began.
    pub invoke_ns: u64,
    /// Nanoseconds since the history began; `None` if it never completed.
    pub complete_ns: Option<u64>,
    pub outcome: Outcome,
    /// The zxid the answer carries: a write's own zxid (its Stat's mzxid), a read's mzxid
    /// (0 when the znode did not exist). `None` without an answer.
    pub zxid: Option<i64>,
    /// The session's last seen zxid (the reply header's) right after completion.
    pub session_zxid: Option<i64>,
}

impl Record {
    /// True if the server answered and the operation was done.
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, Outcome::Ok { .. })
    }

    /// True if nobody knows whether the operation took effect.
    pub fn is_unknown(&self) -> bool {
        matches!(self.outcome, Outcome::Unknown(_) | Outcome::Pending)
    }

    /// The value a successful read returned.
    pub fn read_value(&self) -> Option<&Option<String>> {
        match (&self.operation, &self.outcome) {
            (Operation::Read { .. } | Operation::SyncRead { .. }, Outcome::Ok { value }) => {
                Some(value)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |ns: u64| ns as f64 / 1e6;
        write!(f, "p{} [{:.3}ms..", self.process, ms(self.invoke_ns))?;
        match self.complete_ns {
            Some(ns) => write!(f, "{:.3}ms] ", ms(ns))?,
            None => write!(f, "never] ")?,
        }
        match &self.operation {
            Operation::Write { key, value } => write!(f, "write({key}, {value:?})")?,
            Operation::Read { key } => write!(f, "read({key})")?,
            Operation::SyncRead { key } => write!(f, "sync+read({key})")?,
        }
        match &self.outcome {
            Outcome::Pending => write!(f, " pending")?,
            Outcome::Ok { value: _ } if self.operation.is_write() => write!(f, " ok")?,
            Outcome::Ok { value } => write!(f, " -> {value:?}")?,
            Outcome::Fail(why) => write!(f, " failed: {why}")?,
            Outcome::Unknown(why) => write!(f, " unknown: {why}")?,
        }
        if let Some(zxid) = self.zxid {
            write!(f, " zxid=0x{zxid:x}")?;
        }
        if let Some(zxid) = self.session_zxid {
            write!(f, " session_zxid=0x{zxid:x}")?;
        }
        Ok(())
    }
}

/// A handle to the ticket of an invoked operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(usize);

/// A history being recorded; cheap to clone and share between tasks.
#[derive(Clone)]
pub struct History {
    origin: Instant,
    records: Arc<Mutex<Vec<Record>>>,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    pub fn new() -> History {
        History {
            origin: Instant::now(),
            records: Arc::default(),
        }
    }

    /// Nanoseconds since the history began.
    pub fn now_ns(&self) -> u64 {
        self.ns_at(Instant::now())
    }

    /// `at` as nanoseconds since the history began (0 for earlier instants).
    pub fn ns_at(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64
    }

    /// Records an invocation now.
    ///
    /// # Panics
    /// If the history already holds [`RECORDS_MAX`] operations.
    pub fn invoke(&self, process: u64, operation: Operation) -> Ticket {
        let invoke_ns = self.now_ns();
        let mut records = self.lock();
        assert!(records.len() < RECORDS_MAX, "history is full");
        records.push(Record {
            process,
            operation,
            invoke_ns,
            complete_ns: None,
            outcome: Outcome::Pending,
            zxid: None,
            session_zxid: None,
        });
        Ticket(records.len() - 1)
    }

    /// Records the completion of `ticket` now.
    pub fn complete(
        &self,
        ticket: Ticket,
        outcome: Outcome,
        zxid: Option<i64>,
        session_zxid: Option<i64>,
    ) {
        let complete_ns = self.now_ns();
        let mut records = self.lock();
        if let Some(record) = records.get_mut(ticket.0) {
            record.complete_ns = Some(complete_ns);
            record.outcome = outcome;
            record.zxid = zxid;
            record.session_zxid = session_zxid;
        }
    }

    /// A copy of everything recorded so far.
    pub fn records(&self) -> Vec<Record> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Record>> {
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Counts of a history, for the test's report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub ok_count: usize,
    pub fail_count: usize,
    pub unknown_count: usize,
    pub write_ok_count: usize,
}

impl Summary {
    pub fn of(records: &[Record]) -> Summary {
        let mut summary = Summary::default();
        for record in records {
            match record.outcome {
                Outcome::Ok { .. } => {
                    summary.ok_count += 1;
                    summary.write_ok_count += usize::from(record.operation.is_write());
                }
                Outcome::Fail(_) => summary.fail_count += 1,
                Outcome::Pending | Outcome::Unknown(_) => summary.unknown_count += 1,
            }
        }
        summary
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ok ({} writes), {} failed, {} unknown",
            self.ok_count, self.write_ok_count, self.fail_count, self.unknown_count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_invocation_and_completion_in_order() {
        let history = History::new();
        let write = Operation::Write {
            key: "/a".into(),
            value: "1".into(),
        };
        let ticket = history.invoke(3, write.clone());
        assert_eq!(history.records()[0].outcome, Outcome::Pending);
        history.complete(ticket, Outcome::Ok { value: None }, Some(5), Some(5));
        let records = history.records();
        assert_eq!(records.len(), 1);
        let record = &records[0];
        assert_eq!(record.operation, write);
        assert!(record.complete_ns.is_some_and(|c| c >= record.invoke_ns));
        assert!(record.is_ok());
        let text = record.to_string();
        assert!(
            text.contains("p3") && text.contains("write(/a, \"1\") ok zxid=0x5"),
            "{text}"
        );
        assert_eq!(Summary::of(&records).write_ok_count, 1);
    }
}
