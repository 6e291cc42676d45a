//! Which worker serves which shard: a pure function of who is alive and what they serve now.

use std::collections::{BTreeMap, BTreeSet};

/// Worker name → the shards it serves.
pub type Assignment = BTreeMap<String, BTreeSet<String>>;

/// The next assignment for `live` workers: every shard on exactly one live worker, each keeps
/// what it serves (shards move only when they must), a dead worker's shards go to the least
/// loaded, and then shards move one at a time from the most to the least loaded until loads
/// differ by at most one. Empty when nobody is alive.
pub fn assign(live: &BTreeSet<String>, shards: &BTreeSet<String>, now: &Assignment) -> Assignment {
    if live.is_empty() {
        return Assignment::new();
    }
    let mut next: Assignment = live.iter().map(|w| (w.clone(), BTreeSet::new())).collect();
    let mut placed = BTreeSet::new();
    for (worker, served) in now {
        if let Some(keep) = next.get_mut(worker) {
            for shard in served {
                // A shard that no longer exists, or one listed twice, is dropped.
                if shards.contains(shard) && placed.insert(shard.clone()) {
                    keep.insert(shard.clone());
                }
            }
        }
    }
    for orphan in shards.difference(&placed) {
        if let Some(served) = next.values_mut().min_by_key(|s| s.len()) {
            served.insert(orphan.clone());
        }
    }
    // Bounded: each move narrows the gap between the most and the least loaded.
    for _ in 0..shards.len() {
        let most = next
            .iter()
            .max_by_key(|(_, s)| s.len())
            .map(|(w, _)| w.clone());
        let least = next
            .iter()
            .min_by_key(|(_, s)| s.len())
            .map(|(w, _)| w.clone());
        let (Some(most), Some(least)) = (most, least) else {
            break;
        };
        if next[&most].len() <= next[&least].len() + 1 {
            break;
        }
        let moved = next.get_mut(&most).and_then(|s| s.pop_last());
        if let (Some(shard), Some(target)) = (moved, next.get_mut(&least)) {
            target.insert(shard);
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn shards(count: usize) -> BTreeSet<String> {
        (0..count).map(|i| format!("shard-{i}")).collect()
    }

    fn every_shard_once(plan: &Assignment, all: &BTreeSet<String>) -> bool {
        let served: Vec<&String> = plan.values().flatten().collect();
        served.len() == all.len() && served.into_iter().collect::<BTreeSet<_>>().len() == all.len()
    }

    #[test]
    fn a_first_assignment_spreads_the_shards_evenly() {
        let all = shards(8);
        let plan = assign(&set(&["w1", "w2", "w3"]), &all, &Assignment::new());
        assert!(every_shard_once(&plan, &all));
        let loads: BTreeSet<usize> = plan.values().map(BTreeSet::len).collect();
        assert_eq!(loads, BTreeSet::from([2, 3]));
    }

    #[test]
    fn a_dead_workers_shards_move_and_nothing_else_does() {
        let all = shards(6);
        let before = assign(&set(&["w1", "w2", "w3"]), &all, &Assignment::new());
        let after = assign(&set(&["w1", "w3"]), &all, &before);
        assert!(every_shard_once(&after, &all));
        assert!(!after.contains_key("w2"));
        for worker in ["w1", "w3"] {
            assert!(
                after[worker].is_superset(&before[worker]),
                "{worker} lost a shard"
            );
            assert_eq!(after[worker].len(), 3);
        }
    }

    #[test]
    fn a_new_worker_takes_load_and_nobody_alive_means_no_plan() {
        let all = shards(4);
        let alone = assign(&set(&["w1"]), &all, &Assignment::new());
        assert_eq!(alone["w1"], all);
        let two = assign(&set(&["w1", "w2"]), &all, &alone);
        assert!(every_shard_once(&two, &all));
        assert_eq!((two["w1"].len(), two["w2"].len()), (2, 2));
        assert!(assign(&BTreeSet::new(), &all, &two).is_empty());
    }
}
