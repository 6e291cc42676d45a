//! A znode's ACL list and children, behind one pointer that leaves with the same ACL list
//! share: most znodes are leaves with one of a handful of ACL lists, so a stored node needs 8
//! bytes for both instead of 16 (DESIGN.md §9's memory target).
//!
//! A leaf that gains a child gets its own copy (`Arc::make_mut`); a node that loses its last
//! child goes back to the shared one.

use crate::acl::AclList;
use crate::children::Children;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Links {
    pub acl: AclList,
    pub children: Children,
}

/// The shared [`Links`] of childless nodes, one per ACL list.
#[derive(Debug, Default)]
pub struct LeafLinks {
    /// By the address of the (interned) ACL list.
    by_acl: HashMap<usize, Arc<Links>>,
}

impl LeafLinks {
    /// The shared links of a childless node with `acl`.
    pub fn of(&mut self, acl: &AclList) -> Arc<Links> {
        let key = Arc::as_ptr(acl) as usize;
        self.by_acl
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Links {
                    acl: acl.clone(),
                    children: Children::default(),
                })
            })
            .clone()
    }

    /// Drops the entries no node uses, so that their ACL lists can be purged in turn.
    pub fn purge_unused(&mut self) {
        self.by_acl.retain(|_, links| Arc::strong_count(links) > 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_with_one_acl_share_and_unused_entries_go() {
        let acl: AclList = Arc::new(crate::acl::open_acl_unsafe());
        let mut leaves = LeafLinks::default();
        let a = leaves.of(&acl);
        let b = leaves.of(&acl);
        assert!(Arc::ptr_eq(&a, &b));
        leaves.purge_unused();
        assert_eq!(leaves.by_acl.len(), 1);
        drop((a, b));
        leaves.purge_unused();
        assert!(leaves.by_acl.is_empty());
        assert_eq!(Arc::strong_count(&acl), 1);
    }
}
