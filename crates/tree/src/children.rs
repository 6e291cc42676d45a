//! A znode's children: a hash set of node ids keyed by the names the children's own records
//! hold, so a name is stored once (in the child) and an entry costs about five bytes.
//!
//! The set does not keep name order; [`Children::sorted`] sorts on demand (snapshots and
//! getChildren list children in name order). Copy-on-write: a copy shares the set until one
//! side changes it, and a childless node holds no set at all.
//!
//! Every method that needs names takes `name_of`, which must give the name of each id in the
//! set (the arena the ids point into). Growing the set rehashes every id in it; it takes the
//! ids' hashes from `hash_of` rather than their names, because reading a million names from
//! the arena (two cache misses each) stalled the applying thread for 350 ms when a set of a
//! million children doubled. The caller keeps each node's [`name_hash32`] in a dense array.

use crate::node::NodeId;
use std::hash::BuildHasher;
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct Children(Option<Arc<hashbrown::HashTable<NodeId>>>);

/// Hashes a child name to 32 bits, the form [`Children::insert`]'s `hash_of` returns. Keyed
/// once per process: the table's layout is not replicated state (nothing reads it in hash
/// order), and a fixed key would let a client pick colliding names.
pub fn name_hash32(name: &str) -> u32 {
    crate::keyed_hasher::KeyedHasher.hash_one(name) as u32
}

/// The table's 64-bit hash of a 32-bit one: the table indexes buckets by the low bits and
/// filters by the top seven, so both come from the 32 bits.
pub fn widen(hash: u32) -> u64 {
    (u64::from(hash) << 32) | u64::from(hash)
}

fn name_hash(name: &str) -> u64 {
    widen(name_hash32(name))
}

impl Children {
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |t| t.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The child ids in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.0.iter().flat_map(|t| t.iter().copied())
    }

    pub fn get<'a>(&self, name: &str, name_of: impl Fn(NodeId) -> &'a str) -> Option<NodeId> {
        let table = self.0.as_ref()?;
        table
            .find(name_hash(name), |&id| name_of(id) == name)
            .copied()
    }

    /// Adds `id`, whose name must not be in the set yet. `hash_of` gives [`name_hash32`] of
    /// any id's name.
    pub fn insert<'a>(
        &mut self,
        id: NodeId,
        name_of: impl Fn(NodeId) -> &'a str,
        hash_of: impl Fn(NodeId) -> u32,
    ) {
        let name = name_of(id);
        debug_assert!(
            self.get(name, &name_of).is_none(),
            "{name} is already a child"
        );
        debug_assert_eq!(hash_of(id), name_hash32(name), "a stale hash for {name}");
        let table = Arc::make_mut(self.0.get_or_insert_with(Default::default));
        table.insert_unique(name_hash(name), id, |&other| widen(hash_of(other)));
    }

    pub fn remove<'a>(
        &mut self,
        name: &str,
        name_of: impl Fn(NodeId) -> &'a str,
    ) -> Option<NodeId> {
        let hash = name_hash(name);
        let table = self.0.as_mut()?;
        table.find(hash, |&id| name_of(id) == name)?;
        let table = Arc::make_mut(table);
        let (id, _) = table
            .find_entry(hash, |&id| name_of(id) == name)
            .ok()?
            .remove();
        if table.is_empty() {
            self.0 = None;
        }
        Some(id)
    }

    /// A set of `ids`, whose names must be distinct.
    pub fn from_ids<'a>(ids: &[NodeId], name_of: impl Fn(NodeId) -> &'a str) -> Children {
        if ids.is_empty() {
            return Children::default();
        }
        let mut table = hashbrown::HashTable::with_capacity(ids.len());
        for &id in ids {
            table.insert_unique(name_hash(name_of(id)), id, |&other| {
                name_hash(name_of(other))
            });
        }
        Children(Some(Arc::new(table)))
    }

    /// The child ids in name order. Sorts by the names' first eight bytes, then each run of
    /// equal words by the next eight bytes, and so on: every name is read once per word its
    /// run needs, not once per comparison. A parent of a million sequential children
    /// (`c0-1234-0000012345`) shares its first sixteen bytes in runs of a thousand; comparing
    /// whole names from the arena in the sort made the diskless compaction a third of a
    /// leader's CPU.
    pub fn sorted<'a>(&self, name_of: impl Fn(NodeId) -> &'a str) -> Vec<NodeId> {
        let mut keyed: Vec<(u64, NodeId)> =
            self.ids().map(|id| (word(name_of(id), 0), id)).collect();
        sort_by_words(&mut keyed, 0, &name_of);
        keyed.into_iter().map(|(_, id)| id).collect()
    }
}

/// Words deeper than this (names sharing 256 bytes) are ordered by whole names instead.
const WORDS_MAX: usize = 32;

/// Sorts `keyed`, whose keys are the names' word `depth`, into name order.
fn sort_by_words<'a>(
    keyed: &mut [(u64, NodeId)],
    depth: usize,
    name_of: &impl Fn(NodeId) -> &'a str,
) {
    keyed.sort_unstable_by_key(|k| k.0);
    let mut start = 0;
    while start < keyed.len() {
        let key = keyed[start].0;
        let end = start + keyed[start..].iter().take_while(|k| k.0 == key).count();
        let run = &mut keyed[start..end];
        start = end;
        if run.len() < 2 {
            continue;
        }
        let next = depth + 1;
        let longer = run.iter().any(|k| name_of(k.1).len() > next * 8);
        if !longer || next >= WORDS_MAX {
            // Names no longer than the words compared (or very long shared prefixes): whole
            // names decide, so padding can never order two names wrongly.
            run.sort_unstable_by(|a, b| name_of(a.1).cmp(name_of(b.1)));
            continue;
        }
        for k in run.iter_mut() {
            k.0 = word(name_of(k.1), next);
        }
        sort_by_words(run, next, name_of);
    }
}

/// Bytes `8 * index ..` of `name`, zero-padded, as a number that orders as the bytes do.
fn word(name: &str, index: usize) -> u64 {
    let bytes = name.as_bytes().get(index * 8..).unwrap_or_default();
    let mut w = [0u8; 8];
    let n = bytes.len().min(8);
    w[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        let mut v: Vec<String> = (0..2000)
            .map(|i| format!("n-{}", i * 7919 % 2000))
            .collect();
        v.extend(
            [
                "",
                "a",
                "a\u{1}",
                "ab",
                "abcdefgh",
                "abcdefgh0",
                "abcdefg",
                "é",
                "c0-61369-0000012345",
                "c0-61369-0000012346",
                "c0-61369-0000002345",
                "c0-61369-000001234",
                "c0-61369-00000123450",
                "c0-61369-0000012345\u{1}",
            ]
            .map(String::from),
        );
        // Runs sharing many words, and names sharing more than WORDS_MAX words.
        v.extend((0..300).map(|i| format!("seq-{:010}", i * 7 % 300)));
        let long = "x".repeat(300);
        v.extend((0..5).map(|i| format!("{long}{}", 4 - i)));
        v.push(long);
        v
    }

    #[test]
    fn inserts_finds_removes_and_sorts() {
        let names = names();
        let name_of = |id: NodeId| names[id as usize].as_str();
        let mut children = Children::default();
        let hash_of = |id: NodeId| name_hash32(name_of(id));
        for id in 0..names.len() as NodeId {
            children.insert(id, name_of, hash_of);
        }
        assert_eq!(children.len(), names.len());
        for (id, name) in names.iter().enumerate() {
            assert_eq!(children.get(name, name_of), Some(id as NodeId));
        }
        let sorted: Vec<&str> = children.sorted(name_of).into_iter().map(name_of).collect();
        let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
        expected.sort();
        assert_eq!(sorted, expected);
        let frozen = children.clone();
        for name in &names {
            assert!(children.remove(name, name_of).is_some());
            assert!(children.remove(name, name_of).is_none());
        }
        assert!(children.is_empty());
        assert_eq!(frozen.len(), names.len());
        let rebuilt = Children::from_ids(&frozen.sorted(name_of), name_of);
        assert_eq!(rebuilt.get("ab", name_of), frozen.get("ab", name_of));
    }
}
