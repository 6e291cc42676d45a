//! Sessions' expiry (`SessionTrackerImpl`, `ExpiryQueue`): each session expires at a time rounded
//! up to the next multiple of tickTime, so one timer pass per tick finds every due session.

use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Debug)]
pub struct SessionTracker {
    tick_ms: u64,
    /// Expiry time (ms on the server's monotonic clock) → sessions due then.
    /// Ordered sets, so that expiry happens in the same order in every run (the simulator's
    /// replays depend on it).
    buckets: BTreeMap<u64, BTreeSet<i64>>,
    expiry_of: HashMap<i64, u64>,
    timeout_of: HashMap<i64, u32>,
    next_session_id: i64,
}

impl SessionTracker {
    /// `server_id` goes into the top byte of every session id; `wall_ms` seeds the rest so ids
    /// stay unique across restarts (ZooKeeper's `initializeNextSessionId`).
    pub fn new(tick_ms: u32, server_id: u8, wall_ms: i64) -> SessionTracker {
        let mut next = ((wall_ms << 24) as u64 >> 8) as i64 | (i64::from(server_id) << 56);
        if next == i64::MIN {
            next += 1;
        }
        SessionTracker {
            tick_ms: u64::from(tick_ms.max(1)),
            buckets: BTreeMap::new(),
            expiry_of: HashMap::new(),
            timeout_of: HashMap::new(),
            next_session_id: next,
        }
    }

    pub fn next_session_id(&mut self) -> i64 {
        let id = self.next_session_id;
        self.next_session_id += 1;
        id
    }

    fn round_up(&self, t: u64) -> u64 {
        t.div_ceil(self.tick_ms) * self.tick_ms
    }

    /// Starts tracking a session (new, or recovered from the tree).
    pub fn add(&mut self, session_id: i64, timeout_ms: u32, now_ms: u64) {
        self.timeout_of.insert(session_id, timeout_ms);
        self.touch(session_id, now_ms);
    }

    pub fn timeout_ms(&self, session_id: i64) -> Option<u32> {
        self.timeout_of.get(&session_id).copied()
    }

    pub fn set_timeout(&mut self, session_id: i64, timeout_ms: u32) {
        if let Some(t) = self.timeout_of.get_mut(&session_id) {
            *t = timeout_ms;
        }
    }

    /// Pushes a session's expiry to now + its timeout. Returns false for unknown sessions.
    pub fn touch(&mut self, session_id: i64, now_ms: u64) -> bool {
        let Some(timeout) = self.timeout_of.get(&session_id) else {
            return false;
        };
        let expiry = self.round_up(now_ms + u64::from(*timeout));
        if let Some(old) = self.expiry_of.insert(session_id, expiry) {
            if old == expiry {
                return true;
            }
            if let Some(set) = self.buckets.get_mut(&old) {
                set.remove(&session_id);
                if set.is_empty() {
                    self.buckets.remove(&old);
                }
            }
        }
        self.buckets.entry(expiry).or_default().insert(session_id);
        true
    }

    pub fn remove(&mut self, session_id: i64) {
        self.timeout_of.remove(&session_id);
        if let Some(old) = self.expiry_of.remove(&session_id) {
            if let Some(set) = self.buckets.get_mut(&old) {
                set.remove(&session_id);
                if set.is_empty() {
                    self.buckets.remove(&old);
                }
            }
        }
    }

    /// Removes and returns up to `max` sessions whose expiry time has passed.
    pub fn take_expired(&mut self, now_ms: u64, max: usize) -> Vec<i64> {
        let mut expired = Vec::new();
        while expired.len() < max {
            let Some(mut entry) = self.buckets.first_entry() else {
                break;
            };
            if *entry.key() > now_ms {
                break;
            }
            let set = entry.get_mut();
            // At most `max`: the rest of the bucket stays due for the next pass.
            while expired.len() < max {
                let Some(id) = set.pop_first() else {
                    break;
                };
                expired.push(id);
            }
            if set.is_empty() {
                entry.remove();
            }
        }
        for id in &expired {
            self.timeout_of.remove(id);
            self.expiry_of.remove(id);
        }
        expired
    }

    /// Sessions grouped by expiry time, for the `dump` four-letter word.
    pub fn buckets(&self) -> impl Iterator<Item = (&u64, &BTreeSet<i64>)> {
        self.buckets.iter()
    }

    pub fn len(&self) -> usize {
        self.timeout_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timeout_of.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_on_tick_boundaries_and_touch_extends() {
        let mut t = SessionTracker::new(100, 0, 1);
        let s = t.next_session_id();
        t.add(s, 250, 1000); // due at round_up(1250) = 1300
        assert!(t.take_expired(1299, 10).is_empty());
        t.touch(s, 1200); // due at 1500
        assert!(t.take_expired(1300, 10).is_empty());
        assert_eq!(t.take_expired(1500, 10), vec![s]);
        assert!(!t.touch(s, 1600), "an expired session is gone");
    }

    #[test]
    fn at_most_max_expire_at_once_in_id_order_and_the_rest_stay_due() {
        let mut t = SessionTracker::new(100, 0, 1);
        for id in [9, 3, 7, 5] {
            t.add(id, 200, 0);
        }
        assert_eq!(t.take_expired(300, 3), vec![3, 5, 7]);
        assert_eq!(t.take_expired(300, 0), Vec::<i64>::new());
        assert_eq!(
            t.take_expired(300, 10),
            vec![9],
            "the one left over is still due"
        );
        assert!(t.is_empty());
    }

    #[test]
    fn session_ids_carry_server_id_and_increase() {
        let mut t = SessionTracker::new(100, 3, 1_700_000_000_000);
        let a = t.next_session_id();
        let b = t.next_session_id();
        assert_eq!(a >> 56, 3);
        assert_eq!(b, a + 1);
    }
}
