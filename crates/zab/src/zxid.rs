//! The transaction id: `epoch << 32 | counter`. `(e, 0)` names no transaction; it marks the
//! start of epoch `e` and is the zxid of NEWLEADER and of its ACK.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Zxid(pub u64);

impl Zxid {
    pub const ZERO: Zxid = Zxid(0);

    pub fn new(epoch: u32, counter: u32) -> Zxid {
        Zxid((u64::from(epoch) << 32) | u64::from(counter))
    }

    pub fn epoch(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub fn counter(self) -> u32 {
        self.0 as u32
    }

    /// The zxid as the signed 64-bit value of ZooKeeper's wire format and `TxnHeader`.
    pub fn as_i64(self) -> i64 {
        self.0 as i64
    }

    pub fn from_i64(value: i64) -> Zxid {
        Zxid(value as u64)
    }

    /// True when `next` may directly follow `self` in one log: either the next counter of the
    /// same epoch, or any transaction of a later epoch.
    pub fn is_followed_by(self, next: Zxid) -> bool {
        if next.epoch() == self.epoch() {
            u64::from(next.counter()) == u64::from(self.counter()) + 1
        } else {
            next.epoch() > self.epoch()
        }
    }
}

impl fmt::Display for Zxid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.epoch(), self.counter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_counter_round_trip() {
        let z = Zxid::new(7, 42);
        assert_eq!(z.epoch(), 7);
        assert_eq!(z.counter(), 42);
        assert_eq!(Zxid::from_i64(z.as_i64()), z);
        assert!(Zxid::new(1, 9) < Zxid::new(2, 0));
    }

    #[test]
    fn contiguity() {
        assert!(Zxid::new(1, 1).is_followed_by(Zxid::new(1, 2)));
        assert!(!Zxid::new(1, 1).is_followed_by(Zxid::new(1, 3)));
        assert!(Zxid::new(1, 5).is_followed_by(Zxid::new(3, 1)));
        assert!(!Zxid::new(2, 5).is_followed_by(Zxid::new(1, 6)));
    }
}
