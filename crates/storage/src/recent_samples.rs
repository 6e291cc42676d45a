//! The most recent observations of a duration, for the quantiles ZooKeeper's Prometheus
//! summaries report (`fsynctime{quantile="0.5"}`). A fixed ring: memory stays bounded however
//! long the server runs, and a quantile reflects the last [`RecentSamples::CAPACITY`]
//! observations (ZooKeeper's summaries reflect the last ten minutes).

use std::sync::Mutex;

#[derive(Debug)]
pub struct RecentSamples {
    ring: Mutex<Ring>,
}

#[derive(Debug, Default)]
struct Ring {
    values: Vec<u64>,
    /// Where the next value goes once the ring is full.
    next: usize,
}

impl Default for RecentSamples {
    fn default() -> Self {
        Self {
            ring: Mutex::new(Ring {
                values: Vec::with_capacity(Self::CAPACITY),
                next: 0,
            }),
        }
    }
}

impl RecentSamples {
    pub const CAPACITY: usize = 1024;

    pub fn record(&self, value: u64) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.values.len() < Self::CAPACITY {
            ring.values.push(value);
        } else {
            let at = ring.next;
            ring.values[at] = value;
            ring.next = (at + 1) % Self::CAPACITY;
        }
    }

    /// The `q` quantile (0 ≤ q ≤ 1) of the recent observations by the nearest-rank rule;
    /// `None` before the first.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        assert!((0.0..=1.0).contains(&q), "quantile {q} outside [0, 1]");
        let mut values = self
            .ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values
            .clone();
        if values.is_empty() {
            return None;
        }
        values.sort_unstable();
        let rank = (q * values.len() as f64).ceil() as usize;
        Some(values[rank.clamp(1, values.len()) - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let s = RecentSamples::default();
        assert_eq!(s.quantile(0.5), None);
        for v in [5, 1, 4, 2, 3] {
            s.record(v);
        }
        assert_eq!(s.quantile(0.5), Some(3));
        assert_eq!(s.quantile(0.0), Some(1));
        assert_eq!(s.quantile(1.0), Some(5));
        assert_eq!(s.quantile(0.99), Some(5));
    }

    #[test]
    fn only_the_most_recent_count() {
        let s = RecentSamples::default();
        for _ in 0..RecentSamples::CAPACITY {
            s.record(1_000);
        }
        // A full ring of fast observations replaces the slow ones entirely.
        for _ in 0..RecentSamples::CAPACITY {
            s.record(7);
        }
        assert_eq!(s.quantile(1.0), Some(7));
        s.record(9);
        assert_eq!(s.quantile(1.0), Some(9));
        assert_eq!(s.quantile(0.5), Some(7));
    }
}
