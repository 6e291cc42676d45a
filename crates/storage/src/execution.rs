//! How persistence does its background work, and what time it is.
//!
//! In production a writer thread does group commit and each snapshot gets a thread of its own
//! ([`Execution::Threads`]). The deterministic simulator runs the very same code without
//! threads or clocks ([`Execution::Stepped`]): the host says when the log is written and
//! synced ([`crate::Persistence::flush_log`]), when a snapshot is written
//! ([`crate::Persistence::run_snapshot`]) and what time it is ([`crate::Persistence::set_clock`]),
//! so a seed decides every interleaving.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Execution {
    /// A log writer thread (group commit) and a thread per snapshot.
    #[default]
    Threads,
    /// No threads, no clock and no ambient randomness: `seed` draws the snapshot intervals.
    Stepped { seed: u64 },
}

impl Execution {
    pub fn is_stepped(self) -> bool {
        matches!(self, Execution::Stepped { .. })
    }
}

/// Milliseconds since persistence opened: real, or set by the host.
#[derive(Debug, Clone)]
pub enum Clock {
    Real(Instant),
    Manual(Arc<AtomicU64>),
}

impl Clock {
    pub fn for_execution(execution: Execution) -> Clock {
        match execution {
            Execution::Threads => Clock::Real(Instant::now()),
            Execution::Stepped { .. } => Clock::Manual(Arc::default()),
        }
    }

    pub fn now_ms(&self) -> u64 {
        match self {
            Clock::Real(start) => start.elapsed().as_millis() as u64,
            Clock::Manual(ms) => ms.load(Ordering::Acquire),
        }
    }

    /// Wall-clock ms for the snapshot header; a manual clock's own time, so that a stepped
    /// run writes the same bytes every time.
    pub fn wall_ms(&self) -> i64 {
        match self {
            Clock::Real(_) => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
            Clock::Manual(ms) => ms.load(Ordering::Acquire) as i64,
        }
    }

    /// Moves a manual clock to `now_ms` (never back); a real clock ignores it.
    pub fn set(&self, now_ms: u64) {
        if let Clock::Manual(ms) = self {
            ms.fetch_max(now_ms, Ordering::AcqRel);
        }
    }
}
