//! The simulated network between servers: one connection per pair, FIFO in each direction
//! like TCP, with per-message delays, partitions (any set of blocked directed links), clogged
//! links (long delays) and connection breaks.
//!
//! A message sent over a blocked link is lost, and with it the connection: TCP cannot deliver
//! the rest of the stream without it. Neither end is told at once (a partition is silent); a
//! receiver notices when the next message arrives on a newer connection, and Zab's own
//! timeouts notice the rest. Explicit closes and crashes are reported to both ends at once.

use crate::rng::SimRng;
use std::collections::{BTreeMap, BTreeSet};
use zab::{Millis, Sid};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pair(Sid, Sid);

fn pair(a: Sid, b: Sid) -> Pair {
    Pair(a.min(b), a.max(b))
}

/// What the network decided about one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transit {
    /// Deliver at this time on this connection generation.
    Deliver {
        at: Millis,
        generation: u64,
    },
    Lost,
}

#[derive(Debug, Default)]
pub struct Network {
    generation: BTreeMap<Pair, u64>,
    /// The latest delivery time scheduled per directed link, to keep FIFO order.
    last_delivery: BTreeMap<(Sid, Sid), Millis>,
    /// The generation each receiver last saw from each sender.
    seen: BTreeMap<(Sid, Sid), u64>,
    blocked: BTreeSet<(Sid, Sid)>,
    /// Directed links delayed until the given time (clogging).
    clogged: BTreeMap<(Sid, Sid), Millis>,
    pub delay_min_ms: Millis,
    pub delay_max_ms: Millis,
}

impl Network {
    pub fn new(delay_min_ms: Millis, delay_max_ms: Millis) -> Network {
        Network {
            delay_min_ms,
            delay_max_ms,
            ..Network::default()
        }
    }

    fn generation_of(&self, a: Sid, b: Sid) -> u64 {
        self.generation.get(&pair(a, b)).copied().unwrap_or(0)
    }

    pub fn send(&mut self, rng: &mut SimRng, now: Millis, from: Sid, to: Sid) -> Transit {
        if self.blocked.contains(&(from, to)) {
            *self.generation.entry(pair(from, to)).or_insert(0) += 1;
            return Transit::Lost;
        }
        let mut at = now + rng.range(self.delay_min_ms, self.delay_max_ms);
        if let Some(&until) = self.clogged.get(&(from, to)) {
            at = at.max(until);
        }
        let last = self.last_delivery.entry((from, to)).or_insert(0);
        at = at.max(*last);
        *last = at;
        Transit::Deliver {
            at,
            generation: self.generation_of(from, to),
        }
    }

    /// At delivery: is the message still on the live connection, and did the receiver miss a
    /// break (then it must be told of the disconnect first)?
    pub fn receive(&mut self, from: Sid, to: Sid, generation: u64) -> Receive {
        let current = self.generation_of(from, to);
        if generation < current {
            return Receive::Stale;
        }
        let seen = self.seen.entry((from, to)).or_insert(0);
        if generation > *seen {
            *seen = generation;
            return Receive::AfterBreak;
        }
        Receive::Fresh
    }

    /// Closes the connection between `a` and `b`; both ends are told now.
    pub fn break_connection(&mut self, a: Sid, b: Sid) {
        let g = self.generation.entry(pair(a, b)).or_insert(0);
        *g += 1;
        let g = *g;
        self.seen.insert((a, b), g);
        self.seen.insert((b, a), g);
    }

    pub fn block(&mut self, from: Sid, to: Sid) {
        self.blocked.insert((from, to));
    }

    pub fn clog(&mut self, from: Sid, to: Sid, until: Millis) {
        self.clogged.insert((from, to), until);
    }

    pub fn heal(&mut self) {
        self.blocked.clear();
        self.clogged.clear();
    }

    pub fn is_blocked(&self, from: Sid, to: Sid) -> bool {
        self.blocked.contains(&(from, to))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receive {
    Fresh,
    /// Deliver, after telling the receiver its previous connection broke.
    AfterBreak,
    /// Sent on a connection that has since broken: dropped.
    Stale,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_per_link_and_stale_after_break() {
        let mut rng = SimRng::new(1);
        let mut net = Network::new(1, 50);
        let mut last = 0;
        for _ in 0..100 {
            match net.send(&mut rng, 10, 1, 2) {
                Transit::Deliver { at, generation } => {
                    assert!(at >= last);
                    assert_eq!(generation, 0);
                    last = at;
                }
                Transit::Lost => panic!("not blocked"),
            }
        }
        net.break_connection(1, 2);
        assert_eq!(net.receive(1, 2, 0), Receive::Stale);
        let Transit::Deliver { generation, .. } = net.send(&mut rng, 20, 1, 2) else {
            panic!("lost")
        };
        assert_eq!(net.receive(1, 2, generation), Receive::Fresh);
    }

    #[test]
    fn blocked_link_loses_the_connection_silently() {
        let mut rng = SimRng::new(2);
        let mut net = Network::new(1, 5);
        net.block(1, 2);
        assert_eq!(net.send(&mut rng, 0, 1, 2), Transit::Lost);
        net.heal();
        let Transit::Deliver { generation, .. } = net.send(&mut rng, 10, 2, 1) else {
            panic!("lost")
        };
        assert_eq!(net.receive(2, 1, generation), Receive::AfterBreak);
    }
}
