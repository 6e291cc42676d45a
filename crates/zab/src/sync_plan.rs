//! How a leader brings one learner to its history (ZAB.md §4.3, simplified and stricter).
//!
//! * The learner's last zxid is in our history: DIFF, then the entries after it.
//! * It is not, but the largest zxid we hold below it is of the *same epoch*: the learner holds
//!   that zxid too (a leader's counters are contiguous), so TRUNC to it, then the rest.
//! * Otherwise (older than our memory, or a divergent epoch in between): SNAP at what the host
//!   has applied, then the entries after it. A DIFF across a possible hole (ZOOKEEPER-2846) is
//!   never sent.

use crate::history::{History, Position};
use crate::zxid::Zxid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPlan {
    Diff { from: Zxid },
    Trunc { to: Zxid },
    Snap { at: Zxid },
}

impl SyncPlan {
    /// The zxid after which the leader streams its entries.
    pub fn stream_after(self) -> Zxid {
        match self {
            SyncPlan::Diff { from } => from,
            SyncPlan::Trunc { to } => to,
            SyncPlan::Snap { at } => at,
        }
    }
}

pub fn plan_sync(history: &History, learner_last: Zxid) -> SyncPlan {
    let snap = snap_plan(history);
    match history.position(learner_last) {
        Position::Found => SyncPlan::Diff { from: learner_last },
        Position::Below(below) if below.epoch() == learner_last.epoch() && below.counter() > 0 => {
            SyncPlan::Trunc { to: below }
        }
        Position::Below(_) | Position::BeforeBase => snap,
    }
}

/// SNAP at what the host has applied, whatever the learner holds.
pub fn snap_plan(history: &History) -> SyncPlan {
    // The image is the host's applied state; the stream after it must be our very next entry.
    assert!(
        history.delivered() >= history.base(),
        "leader's applied state is behind its log base"
    );
    SyncPlan::Snap {
        at: history.delivered(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(base: Zxid, zxids: &[(u32, u32)]) -> History {
        let entries = zxids
            .iter()
            .map(|&(e, c)| crate::entry::placeholder(Zxid::new(e, c)))
            .collect();
        History::new(base, entries)
    }

    #[test]
    fn chooses_diff_trunc_snap() {
        let h = history(Zxid::new(1, 1), &[(1, 2), (1, 3), (3, 1)]);
        assert_eq!(
            plan_sync(&h, Zxid::new(1, 3)),
            SyncPlan::Diff {
                from: Zxid::new(1, 3)
            }
        );
        assert_eq!(
            plan_sync(&h, Zxid::new(1, 1)),
            SyncPlan::Diff {
                from: Zxid::new(1, 1)
            }
        );
        // Same epoch, longer uncommitted tail: truncate to what we share.
        assert_eq!(
            plan_sync(&h, Zxid::new(1, 7)),
            SyncPlan::Trunc {
                to: Zxid::new(1, 3)
            }
        );
        // A divergent epoch 2 we never saw: the learner may lack (1,3); only SNAP is safe.
        assert_eq!(
            plan_sync(&h, Zxid::new(2, 4)),
            SyncPlan::Snap { at: h.delivered() }
        );
        assert_eq!(
            plan_sync(&h, Zxid::ZERO),
            SyncPlan::Snap { at: h.delivered() }
        );
        assert_eq!(
            plan_sync(&h, Zxid::new(3, 5)),
            SyncPlan::Trunc {
                to: Zxid::new(3, 1)
            }
        );
    }
}
