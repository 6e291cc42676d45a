//! Linearizability of a history over independent registers, one per key.
//!
//! Each key is checked on its own (registers compose: a history is linearizable iff each key's
//! sub-history is). The search is Wing and Gong's, with Lowe's memoization of (set of
//! linearized operations, register value), as in Porcupine: walk the events in time order; at
//! an invocation, try to make the operation take effect now if the register allows it and the
//! resulting configuration was not seen before; at a completion of an operation not yet taken
//! effect, undo the most recent choice. Bounded by [`STEPS_MAX`] per key.
//!
//! What takes part:
//! * writes that succeeded, and writes whose outcome is unknown: those may take effect at any
//!   time after their invocation, or never (their completion is "at infinity"). An unknown write
//!   whose value nobody read is left out: it can always be placed after everything else;
//! * `sync`+read that succeeded (ZooKeeper's linearizable read);
//! * not failed writes (they had no effect), not failed or unknown reads (they saw nothing);
//! * not plain reads: ZooKeeper serves them from the local replica, so they may be stale
//!   (sequential consistency, checked per session by [`crate::sessions`]). A plain read must
//!   still return a value somebody wrote ([`check`] verifies that too).
//!
//! The register starts absent (`None`): record the creates that set up the keys.

use crate::history::{Operation, Outcome, Record};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

/// Search steps per key before the checker gives up (an inconclusive result is a failure).
pub const STEPS_MAX: usize = 20_000_000;
/// Operations per key the search accepts.
pub const OPS_PER_KEY_MAX: usize = 50_000;
/// Operations printed around a violation.
const SHOWN_MAX: usize = 24;

/// Why a history is not accepted: the key, and the operations that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub key: String,
    pub explanation: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key {}: {}", self.key, self.explanation)
    }
}

/// What a successful check covered.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub key_count: usize,
    /// Operations that took part in the search, over all keys.
    pub op_count: usize,
    pub step_count: usize,
}

/// One operation of one key, as the search sees it.
#[derive(Debug, Clone, Copy)]
struct KeyOp {
    /// `Some(value)` for a write, `None` for a read.
    writes: Option<u32>,
    /// The value a read returned.
    reads: u32,
    call: u64,
    ret: u64,
    /// Index into the records.
    record: usize,
}

/// Checks every key of `records`; the first violation found is returned.
pub fn check(records: &[Record]) -> Result<Stats, Violation> {
    let mut by_key: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, record) in records.iter().enumerate() {
        by_key
            .entry(record.operation.key())
            .or_default()
            .push(index);
    }
    let mut stats = Stats::default();
    for (key, indices) in by_key {
        check_plain_reads(key, records, &indices)?;
        let ops = key_ops(records, &indices);
        if ops.len() > OPS_PER_KEY_MAX {
            return Err(Violation {
                key: key.to_string(),
                explanation: format!("{} operations: more than the checker takes", ops.len()),
            });
        }
        stats.key_count += 1;
        stats.op_count += ops.len();
        stats.step_count += search(&ops).map_err(|stuck| Violation {
            key: key.to_string(),
            explanation: stuck.explain(records, &ops),
        })?;
    }
    Ok(stats)
}

/// The operations of one key that take part, with values interned (0: absent).
fn key_ops(records: &[Record], indices: &[usize]) -> Vec<KeyOp> {
    let mut values: HashMap<String, u32> = HashMap::new();
    let mut intern = |value: &Option<String>| match value {
        None => 0,
        Some(v) => {
            let next = values.len() as u32 + 1;
            *values.entry(v.clone()).or_insert(next)
        }
    };
    let read_values: HashSet<&str> = indices
        .iter()
        .filter(|&&i| matches!(records[i].operation, Operation::SyncRead { .. }))
        .filter_map(|&i| records[i].read_value().and_then(|v| v.as_deref()))
        .collect();
    let mut ops = Vec::new();
    for &index in indices {
        let record = &records[index];
        let ret = match (&record.outcome, record.complete_ns) {
            (Outcome::Ok { .. }, Some(ret)) => ret,
            (Outcome::Ok { .. }, None) | (Outcome::Pending | Outcome::Unknown(_), _) => u64::MAX,
            (Outcome::Fail(_), _) => continue,
        };
        let (writes, reads) = match (&record.operation, &record.outcome) {
            (Operation::Write { value, .. }, Outcome::Ok { .. }) => {
                (Some(intern(&Some(value.clone()))), 0)
            }
            (Operation::Write { value, .. }, _) if read_values.contains(value.as_str()) => {
                (Some(intern(&Some(value.clone()))), 0)
            }
            (Operation::SyncRead { .. }, Outcome::Ok { value }) => (None, intern(value)),
            _ => continue,
        };
        ops.push(KeyOp {
            writes,
            reads,
            call: record.invoke_ns,
            ret,
            record: index,
        });
    }
    ops
}

/// A plain read must return the initial absence or a value some write (ok or unknown) of the
/// same key had been invoked with before the read completed.
fn check_plain_reads(key: &str, records: &[Record], indices: &[usize]) -> Result<(), Violation> {
    let mut first_invoked: HashMap<&str, u64> = HashMap::new();
    for &i in indices {
        if let (Operation::Write { value, .. }, false) = (
            &records[i].operation,
            matches!(records[i].outcome, Outcome::Fail(_)),
        ) {
            let at = first_invoked.entry(value.as_str()).or_insert(u64::MAX);
            *at = (*at).min(records[i].invoke_ns);
        }
    }
    for &i in indices {
        let record = &records[i];
        let Some(Some(value)) = record.read_value() else {
            continue;
        };
        let written_before = first_invoked
            .get(value.as_str())
            .is_some_and(|&at| at <= record.complete_ns.unwrap_or(u64::MAX));
        if !written_before {
            return Err(Violation {
                key: key.to_string(),
                explanation: format!("a read returned a value nobody had written:\n    {record}"),
            });
        }
    }
    Ok(())
}

/// Where the search got stuck at its deepest: the operations taken so far, the register
/// value, and the operation that completed before it could take effect.
struct Stuck {
    taken: Vec<usize>,
    value: u32,
    blocked: usize,
    inconclusive: bool,
}

/// The events in time order as a doubly linked list over indices, so that an operation can be
/// lifted out (call and return) and put back in LIFO order (dancing links).
struct Events {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// Per node: the op, and whether it is the call.
    op_of: Vec<(usize, bool)>,
    call_node: Vec<usize>,
    ret_node: Vec<usize>,
    tail: usize,
}

impl Events {
    fn new(ops: &[KeyOp]) -> Events {
        let mut order: Vec<(u64, bool, usize)> = Vec::with_capacity(2 * ops.len());
        for (op, k) in ops.iter().enumerate() {
            order.push((k.call, false, op));
            order.push((k.ret, true, op));
        }
        // At equal times calls come first: the permissive reading of a tie.
        order.sort_unstable();
        let tail = order.len() + 1;
        let mut events = Events {
            next: (1..=tail + 1).collect(),
            prev: (0..=tail).map(|i| i.saturating_sub(1)).collect(),
            op_of: vec![(usize::MAX, false); tail + 1],
            call_node: vec![0; ops.len()],
            ret_node: vec![0; ops.len()],
            tail,
        };
        for (position, &(_, is_return, op)) in order.iter().enumerate() {
            let node = position + 1;
            events.op_of[node] = (op, !is_return);
            if is_return {
                events.ret_node[op] = node;
            } else {
                events.call_node[op] = node;
            }
        }
        events
    }

    fn first(&self) -> usize {
        self.next[0]
    }

    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        self.prev[n] = node;
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_node[op]);
        self.unlink(self.ret_node[op]);
    }

    fn unlift(&mut self, op: usize) {
        self.relink(self.ret_node[op]);
        self.relink(self.call_node[op]);
    }
}

/// The register: a write always applies; a read applies if it saw the current value.
fn apply(value: u32, op: &KeyOp) -> Option<u32> {
    match op.writes {
        Some(written) => Some(written),
        None => (op.reads == value).then_some(value),
    }
}

/// Returns the steps taken if the operations are linearizable.
fn search(ops: &[KeyOp]) -> Result<usize, Stuck> {
    let mut events = Events::new(ops);
    let mut taken_set = vec![0u64; ops.len().div_ceil(64)];
    let mut seen: HashSet<(Vec<u64>, u32)> = HashSet::new();
    let mut stack: Vec<(usize, u32)> = Vec::new();
    let mut value = 0u32;
    let mut deepest: Option<Stuck> = None;
    let mut node = events.first();
    let mut steps = 0usize;
    while events.first() != events.tail {
        steps += 1;
        if steps > STEPS_MAX || node == events.tail {
            let mut stuck = deepest.unwrap_or(Stuck::empty(value, ops.len()));
            stuck.inconclusive = true;
            return Err(stuck);
        }
        let (op, is_call) = events.op_of[node];
        if is_call {
            if let Some(after) = apply(value, &ops[op]) {
                taken_set[op / 64] |= 1 << (op % 64);
                if seen.insert((taken_set.clone(), after)) {
                    stack.push((op, value));
                    value = after;
                    events.lift(op);
                    node = events.first();
                    continue;
                }
                taken_set[op / 64] &= !(1 << (op % 64));
            }
            node = events.next[node];
            continue;
        }
        // `op` completes before it could take effect: undo the latest choice.
        let deeper = match &deepest {
            None => true,
            Some(d) => stack.len() > d.taken.len(),
        };
        if deeper {
            deepest = Some(Stuck {
                taken: stack.iter().map(|&(o, _)| o).collect(),
                value,
                blocked: op,
                inconclusive: false,
            });
        }
        let Some((undone, before)) = stack.pop() else {
            return Err(deepest.unwrap_or(Stuck::empty(value, op)));
        };
        value = before;
        taken_set[undone / 64] &= !(1 << (undone % 64));
        events.unlift(undone);
        node = events.next[events.call_node[undone]];
    }
    Ok(steps)
}

impl Stuck {
    fn empty(value: u32, blocked: usize) -> Stuck {
        Stuck {
            taken: Vec::new(),
            value,
            blocked,
            inconclusive: false,
        }
    }

    /// The offending operations, as the records print them.
    fn explain(&self, records: &[Record], ops: &[KeyOp]) -> String {
        let mut text = String::new();
        if self.inconclusive {
            text.push_str(&format!(
                "the checker gave up after {STEPS_MAX} steps ({} operations); \
                 the deepest point reached:\n",
                ops.len()
            ));
        } else {
            text.push_str(&format!(
                "not linearizable ({} operations checked).\n",
                ops.len()
            ));
        }
        let shown = self.taken.len().min(SHOWN_MAX / 2);
        text.push_str(&format!(
            "  the longest linearization found takes {} operations; its last {shown}:\n",
            self.taken.len()
        ));
        for &op in &self.taken[self.taken.len() - shown..] {
            text.push_str(&format!("    {}\n", records[ops[op].record]));
        }
        let value = self.value_text(records, ops);
        let Some(blocked) = ops.get(self.blocked) else {
            return text;
        };
        text.push_str(&format!(
            "  leaving the register at {value}; then this operation completed before any \
             remaining one could take effect:\n    {}\n  operations concurrent with it:\n",
            records[blocked.record]
        ));
        let concurrent = ops
            .iter()
            .filter(|o| {
                o.record != blocked.record && o.call <= blocked.ret && blocked.call <= o.ret
            })
            .take(SHOWN_MAX);
        for o in concurrent {
            text.push_str(&format!("    {}\n", records[o.record]));
        }
        text
    }

    fn value_text(&self, records: &[Record], ops: &[KeyOp]) -> String {
        if self.value == 0 {
            return "absent".to_string();
        }
        let writer = ops.iter().find(|o| o.writes == Some(self.value));
        match writer.map(|o| &records[o.record].operation) {
            Some(Operation::Write { value, .. }) => format!("{value:?}"),
            _ => format!("value #{}", self.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record by hand: `outcome` "ok", "fail" or "unknown"; times in ms.
    fn op(
        process: u64,
        operation: Operation,
        invoke_ms: u64,
        complete_ms: Option<u64>,
        outcome: Outcome,
    ) -> Record {
        Record {
            process,
            operation,
            invoke_ns: invoke_ms * 1_000_000,
            complete_ns: complete_ms.map(|ms| ms * 1_000_000),
            outcome,
            zxid: None,
            session_zxid: None,
        }
    }

    fn write(p: u64, value: &str, from: u64, to: u64) -> Record {
        let w = Operation::Write {
            key: "/k".into(),
            value: value.into(),
        };
        op(p, w, from, Some(to), Outcome::Ok { value: None })
    }

    fn write_unknown(p: u64, value: &str, from: u64) -> Record {
        let w = Operation::Write {
            key: "/k".into(),
            value: value.into(),
        };
        op(p, w, from, None, Outcome::Unknown("connection loss".into()))
    }

    fn write_failed(p: u64, value: &str, from: u64, to: u64) -> Record {
        let w = Operation::Write {
            key: "/k".into(),
            value: value.into(),
        };
        op(p, w, from, Some(to), Outcome::Fail("BadVersion".into()))
    }

    fn sync_read(p: u64, value: Option<&str>, from: u64, to: u64) -> Record {
        let r = Operation::SyncRead { key: "/k".into() };
        op(
            p,
            r,
            from,
            Some(to),
            Outcome::Ok {
                value: value.map(str::to_string),
            },
        )
    }

    fn plain_read(p: u64, value: Option<&str>, from: u64, to: u64) -> Record {
        let r = Operation::Read { key: "/k".into() };
        op(
            p,
            r,
            from,
            Some(to),
            Outcome::Ok {
                value: value.map(str::to_string),
            },
        )
    }

    #[test]
    fn sequential_history_is_linearizable() {
        let h = [
            write(1, "a", 0, 10),
            sync_read(2, Some("a"), 20, 30),
            write(1, "b", 40, 50),
            sync_read(2, Some("b"), 60, 70),
        ];
        let stats = check(&h).expect("linearizable");
        assert_eq!(stats.op_count, 4);
    }

    #[test]
    fn concurrent_read_may_see_either_value() {
        for seen in ["a", "b"] {
            let h = [
                write(1, "a", 0, 10),
                write(1, "b", 20, 60),
                sync_read(2, Some(seen), 30, 40),
            ];
            check(&h).expect("a read concurrent with a write may see old or new");
        }
        let h = [sync_read(2, None, 0, 5), write(1, "a", 1, 10)];
        check(&h).expect("absent before the first write");
    }

    #[test]
    fn stale_read_after_completed_write_is_caught() {
        let h = [
            write(1, "a", 0, 10),
            write(1, "b", 20, 30),
            sync_read(2, Some("a"), 40, 50),
        ];
        let violation = check(&h).expect_err("stale read");
        assert_eq!(violation.key, "/k");
        let text = violation.to_string();
        assert!(text.contains("sync+read(/k) -> Some(\"a\")"), "{text}");
        assert!(text.contains("not linearizable"), "{text}");
    }

    #[test]
    fn reads_going_back_in_time_are_caught() {
        // Both reads overlap both writes... except the second read starts after the first read
        // saw "b": seeing "a" afterwards needs "a" to be written twice.
        let h = [
            write(1, "a", 0, 100),
            write(2, "b", 0, 100),
            sync_read(3, Some("b"), 10, 20),
            sync_read(3, Some("a"), 30, 40),
            sync_read(4, Some("b"), 50, 60),
        ];
        check(&h).expect_err("b, a, b with one write each");
    }

    #[test]
    fn unknown_write_may_or_may_not_have_happened() {
        let happened = [
            write(1, "a", 0, 10),
            write_unknown(2, "b", 20),
            sync_read(3, Some("b"), 100, 110),
        ];
        check(&happened).expect("the unknown write took effect");
        let not_happened = [
            write(1, "a", 0, 10),
            write_unknown(2, "b", 20),
            sync_read(3, Some("a"), 100, 110),
        ];
        check(&not_happened).expect("the unknown write never took effect");
        let late = [
            write(1, "a", 0, 10),
            write_unknown(2, "b", 20),
            sync_read(3, Some("a"), 100, 110),
            sync_read(3, Some("b"), 200, 210),
        ];
        check(&late).expect("the unknown write took effect late");
        let flip_back = [
            write(1, "a", 0, 10),
            write_unknown(2, "b", 20),
            sync_read(3, Some("b"), 100, 110),
            sync_read(3, Some("a"), 200, 210),
        ];
        check(&flip_back).expect_err("a written once cannot come back after b");
    }

    #[test]
    fn unknown_write_cannot_take_effect_before_its_invocation() {
        let h = [
            write(1, "a", 0, 10),
            sync_read(3, Some("b"), 20, 30),
            write_unknown(2, "b", 40),
        ];
        check(&h).expect_err("read b before b was written");
    }

    #[test]
    fn failed_write_never_happened() {
        let h = [
            write(1, "a", 0, 10),
            write_failed(2, "b", 20, 30),
            sync_read(3, Some("b"), 40, 50),
        ];
        check(&h).expect_err("a failed write's value was read");
        let h = [
            write(1, "a", 0, 10),
            write_failed(2, "b", 20, 30),
            sync_read(3, Some("a"), 40, 50),
        ];
        check(&h).expect("failed write ignored");
    }

    #[test]
    fn plain_reads_may_be_stale_but_not_invented() {
        let stale = [
            write(1, "a", 0, 10),
            write(1, "b", 20, 30),
            plain_read(2, Some("a"), 40, 50),
        ];
        check(&stale).expect("plain reads are not linearizable in ZooKeeper");
        let invented = [write(1, "a", 0, 10), plain_read(2, Some("zz"), 40, 50)];
        let violation = check(&invented).expect_err("a value nobody wrote");
        assert!(violation.explanation.contains("nobody had written"));
    }

    #[test]
    fn keys_are_independent() {
        let mut other = sync_read(2, Some("x"), 40, 50);
        other.operation = Operation::SyncRead {
            key: "/other".into(),
        };
        let mut write_other = write(1, "x", 0, 10);
        write_other.operation = Operation::Write {
            key: "/other".into(),
            value: "x".into(),
        };
        let h = [
            write(1, "a", 0, 10),
            write_other,
            other,
            sync_read(2, Some("a"), 60, 70),
        ];
        let stats = check(&h).expect("linearizable per key");
        assert_eq!(stats.key_count, 2);
    }

    #[test]
    fn a_long_concurrent_history_checks_quickly() {
        // 5 processes, 400 operations, overlapping in waves; every read sees the latest write.
        let mut h = Vec::new();
        let mut last = None::<String>;
        for round in 0..80u64 {
            let base = round * 100;
            for p in 0..4u64 {
                let value = format!("p{p}-{round}");
                h.push(write(p, &value, base + p, base + 50 + p));
                if p == 3 {
                    last = Some(value);
                }
            }
            h.push(sync_read(9, last.as_deref(), base + 60, base + 70));
        }
        // The read in each round can see p3's write only if p3's write is ordered last: allowed
        // since the writes overlap.
        let stats = check(&h).expect("linearizable");
        assert!(stats.step_count < 100_000, "{stats:?}");
    }

    /// xorshift64*, for the generated histories below.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
        }
    }

    /// A linearizable history by construction: each operation takes effect at a random point
    /// inside its interval; some writes end unknown, and those take effect or not at random.
    fn generated(seed: u64, count: u64) -> Vec<Record> {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut ops: Vec<(u64, Record, bool)> = Vec::new();
        for i in 0..count {
            let invoke = rng.below(1000);
            let complete = invoke + 1 + rng.below(80);
            let point = invoke + rng.below(complete - invoke);
            let process = rng.below(5);
            let record = if rng.below(2) == 0 {
                if rng.below(8) == 0 {
                    let mut w = write_unknown(process, &format!("v{i}"), invoke);
                    w.invoke_ns = invoke;
                    let happened = rng.below(2) == 0;
                    ops.push((point, w, happened));
                    continue;
                }
                write(process, &format!("v{i}"), 0, 0)
            } else {
                sync_read(process, None, 0, 0)
            };
            let mut record = record;
            record.invoke_ns = invoke;
            record.complete_ns = Some(complete);
            ops.push((point, record, true));
        }
        ops.sort_by_key(|(point, _, _)| *point);
        let mut value: Option<String> = None;
        let mut history = Vec::new();
        for (_, mut record, takes_effect) in ops {
            match &record.operation {
                Operation::Write { value: v, .. } if takes_effect => value = Some(v.clone()),
                Operation::SyncRead { .. } => {
                    record.outcome = Outcome::Ok {
                        value: value.clone(),
                    }
                }
                _ => {}
            }
            history.push(record);
        }
        history
    }

    #[test]
    fn generated_linearizable_histories_pass() {
        for seed in 0..300 {
            let history = generated(seed, 60);
            if let Err(v) = check(&history) {
                panic!("seed {seed}: {v}");
            }
        }
    }

    #[test]
    fn generated_histories_with_a_stale_read_fail() {
        let mut caught = 0;
        for seed in 0..300 {
            let mut history = generated(seed, 60);
            // A read that starts after two successful writes completed, the later one invoked
            // after the earlier one completed, returns the earlier one's value: stale.
            let writes: Vec<(u64, u64, String)> = history
                .iter()
                .filter(|r| r.is_ok())
                .filter_map(|r| match &r.operation {
                    Operation::Write { value, .. } => {
                        Some((r.invoke_ns, r.complete_ns?, value.clone()))
                    }
                    _ => None,
                })
                .collect();
            let stale = history.iter().position(|r| {
                matches!(r.operation, Operation::SyncRead { .. })
                    && writes.iter().any(|(_, c1, _)| {
                        writes
                            .iter()
                            .any(|(i2, c2, _)| *i2 > *c1 && *c2 < r.invoke_ns)
                            && *c1 < r.invoke_ns
                    })
            });
            let Some(at) = stale else { continue };
            let read_at = history[at].invoke_ns;
            let older = writes
                .iter()
                .find(|(_, c1, _)| {
                    writes.iter().any(|(i2, c2, _)| *i2 > *c1 && *c2 < read_at) && *c1 < read_at
                })
                .map(|(_, _, v)| v.clone());
            history[at].outcome = Outcome::Ok { value: older };
            check(&history).expect_err(&format!("seed {seed}: stale read not caught"));
            caught += 1;
        }
        assert!(
            caught > 100,
            "only {caught} histories had a read to make stale"
        );
    }
}
