//! A planned leadership hand-over (SIGTERM on the leader, or an operator's command): the
//! leader stops proposing, waits until its most up-to-date follower holds everything, and
//! abdicates in its favour (the `zab` crate's `transfer.rs`). Clients of the other members
//! are held meanwhile, as in any leader change (see [`super::hold`]), and see no error.

use crate::now::Now;
use crate::replica::Replica;
use crate::store::Store;
use zab::{Sid, TransferError};

/// Where a hand-over stands, for the shell that asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandOver {
    /// None asked for, or the last one was abandoned (this server leads on, or lost its
    /// leadership some other way).
    Idle,
    /// The leader waits for `successor` to hold every proposal.
    Underway { successor: Sid },
    /// ABDICATE went out: `successor` is taking over.
    Done { successor: Sid },
}

impl<S: Store> Replica<S> {
    /// Starts handing leadership over, to complete within `within_ms`; returns the successor.
    pub fn transfer_leadership(&mut self, now: Now, within_ms: u64) -> Result<Sid, TransferError> {
        self.now = now;
        let Some(ensemble) = self.ensemble() else {
            return Err(TransferError::NotLeader);
        };
        ensemble.handed_over_to = None;
        let successor = ensemble.zab.transfer_leadership(now.mono_ms, within_ms)?;
        self.run_zab();
        Ok(successor)
    }

    /// Where the last hand-over stands.
    pub fn hand_over(&self) -> HandOver {
        let Some(ensemble) = self.ensemble.as_deref() else {
            return HandOver::Idle;
        };
        if let Some(successor) = ensemble.handed_over_to {
            return HandOver::Done { successor };
        }
        match ensemble.zab.transfer_underway() {
            Some(successor) => HandOver::Underway { successor },
            None => HandOver::Idle,
        }
    }
}
