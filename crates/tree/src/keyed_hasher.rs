//! The hasher of the server's hot tables: foldhash, keyed once per process.
//!
//! std's SipHash was ~3 % of a leader's time under creating clients, spread over tables keyed
//! by paths, names, ACL lists and ids. None of these tables is replicated state or read in hash
//! order, so the key may differ between servers and runs; a per-process random key keeps
//! clients from choosing keys that collide.

use std::hash::BuildHasher;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, Default)]
pub struct KeyedHasher;

impl BuildHasher for KeyedHasher {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        static KEYS: OnceLock<foldhash::fast::RandomState> = OnceLock::new();
        KEYS.get_or_init(foldhash::fast::RandomState::default)
            .build_hasher()
    }
}
