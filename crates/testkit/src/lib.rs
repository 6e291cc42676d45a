//! meerkat's real-process test kit (DESIGN.md §7, the "server" row): ensembles of real server
//! processes on loopback, faults injected into them, and checkers for what clients observed.
//!
//! The same tests run against meerkat and against Apache ZooKeeper 3.9.3, the reference.
//!
//! # Layout
//! * [`ensemble`]: start N members of either flavor with per-member `zoo.cfg`, `myid` and log;
//!   SIGKILL/SIGSTOP/SIGCONT by pid, restart, roles via `srvr`, bounded waits for a leader and
//!   for convergence; optional peer proxies for partitions.
//! * [`proxy`]: a fault-injecting TCP proxy (block, blackhole, delay, heal).
//! * [`process`]: client processes a test starts (the examples), their output lines, SIGKILL
//!   by pid; where the `meerkat` binary is.
//! * [`four_letter`]: `srvr` and `mntr` over TCP.
//! * [`history`]: a recorded history of concurrent operations on registers.
//! * [`workload`]: recorded operations on a session, and a light concurrent workload.
//! * [`linearizability`]: a Wing–Gong/Lowe checker for independent registers.
//! * [`sessions`]: per-session zxid checks (never backwards, no read older than seen).
//! * [`standalone`]: a standalone server's zoo.cfg for the process tests.
//!
//! Everything waits with a bound: a test that cannot make progress fails with what it saw.

pub mod ensemble;
pub mod four_letter;
pub mod history;
pub mod linearizability;
pub mod process;
pub mod proxy;
pub mod sessions;
pub mod standalone;
pub mod workload;

pub use ensemble::{Cut, Ensemble, Flavor, Options, Signal};
pub use four_letter::Role;
pub use history::{History, Operation, Outcome, Record};
pub use process::{meerkat_binary, Process};

/// Runs both checkers on `records`: linearizability per key, then the session checks.
/// Returns a one-line summary, or the violation with the operations that show it.
pub fn check_history(records: &[Record]) -> Result<String, String> {
    let summary = history::Summary::of(records);
    let stats =
        linearizability::check(records).map_err(|v| format!("linearizability violation: {v}"))?;
    sessions::check(records).map_err(|v| format!("session guarantee violated: {v}"))?;
    Ok(format!(
        "{} operations: {summary}; linearizable over {} keys ({} ops, {} search steps); \
         session zxids monotonic",
        records.len(),
        stats.key_count,
        stats.op_count,
        stats.step_count
    ))
}
