//! A znode's persisted stat, name and data packed into one reference-counted allocation.
//!
//! Memory per znode is the target here (DESIGN.md §9: a million znodes of 100 bytes within
//! 200 MB): one allocation instead of three (data, name, child-map key), a 4-byte count instead
//! of `Arc`'s two 8-byte ones, a thin pointer, and a stat that stores only the fields that
//! differ from their usual values. A freshly created leaf stores czxid and ctime only: mzxid
//! and pzxid equal czxid, mtime equals ctime, the versions and ephemeralOwner are 0.
//!
//! A record never changes once built; a change builds a new one. Sharing it is what makes a
//! frozen arena chunk cheap to copy (see [`crate::arena`]).
//!
//! Layout: `[count: u32][flags: u8][name length][data length][czxid][ctime][the flagged
//! fields][name][data]`. Every number after the flags is a LEB128 varint: lengths, czxid and
//! ctime as they are; mzxid and pzxid as (wrapping) differences from czxid, mtime from ctime,
//! these being normally forward and small; the versions as their 32 bits. ephemeralOwner (a
//! session id, using all 64 bits) takes 8 little-endian bytes. A znode of 100 bytes named with
//! up to 10 characters then takes at most 128 bytes fresh and, after setData within 2 million
//! transactions and 3 days of its creation, at most 136: one glibc size class (144)
//! either way, so updates reuse freed chunks (a record that moved to a bigger class on its first
//! setData left holes that cost 45 MB per 700,000 updates in a measurement).

use proto::StatPersisted;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

const MZXID: u8 = 1;
const PZXID: u8 = 1 << 1;
const MTIME: u8 = 1 << 2;
const OWNER: u8 = 1 << 3;
const VERSION: u8 = 1 << 4;
const CVERSION: u8 = 1 << 5;
const AVERSION: u8 = 1 << 6;
/// The data is null (as opposed to empty).
const NO_DATA: u8 = 1 << 7;

const COUNT_LEN: usize = 4;
/// Flags, two varints of at most 5 bytes, five of at most 10, three of at most 5, the owner.
/// (Lengths and versions are 32-bit: at most 5 bytes.)
const HEAD_MAX: usize = 1 + 2 * 5 + 5 * 10 + 3 * 5 + 8;
/// Beyond this the count is corrupt or leaking; aborting beats a use-after-free.
const COUNT_MAX: u32 = u32::MAX / 2;

/// One znode's stat, name and data; cloning shares it.
pub struct NodeRecord {
    ptr: NonNull<u8>,
}

// The bytes never change after construction and the count is atomic.
unsafe impl Send for NodeRecord {}
unsafe impl Sync for NodeRecord {}

/// Where the parts of a record are, decoded from its head.
struct Parts {
    flags: u8,
    stat_at: usize,
    name_at: usize,
    name_len: usize,
    data_len: usize,
}

impl Parts {
    fn data_at(&self) -> usize {
        self.name_at + self.name_len
    }

    fn total(&self) -> usize {
        self.data_at() + self.data_len
    }
}

impl NodeRecord {
    pub fn new(name: &str, data: Option<&[u8]>, stat: &StatPersisted) -> NodeRecord {
        let (head, head_len) = encode_head(name.len(), data, stat);
        let data_bytes = data.unwrap_or_default();
        let total = COUNT_LEN + head_len + name.len() + data_bytes.len();
        let layout = layout_of(total);
        // SAFETY: the layout has a non-zero size (the count alone is 4 bytes); every write
        // below stays within `total` bytes, which is what was allocated.
        unsafe {
            let raw = std::alloc::alloc(layout);
            let Some(ptr) = NonNull::new(raw) else {
                std::alloc::handle_alloc_error(layout)
            };
            ptr.as_ptr().cast::<AtomicU32>().write(AtomicU32::new(1));
            let mut at = ptr.as_ptr().add(COUNT_LEN);
            std::ptr::copy_nonoverlapping(head.as_ptr(), at, head_len);
            at = at.add(head_len);
            std::ptr::copy_nonoverlapping(name.as_ptr(), at, name.len());
            at = at.add(name.len());
            std::ptr::copy_nonoverlapping(data_bytes.as_ptr(), at, data_bytes.len());
            let record = NodeRecord { ptr };
            debug_assert_eq!(record.parts().total(), total);
            record
        }
    }

    /// The same name and data with another stat.
    pub fn with_stat(&self, stat: &StatPersisted) -> NodeRecord {
        NodeRecord::new(self.name(), self.data(), stat)
    }

    fn count(&self) -> &AtomicU32 {
        // SAFETY: the first four bytes are the count, written at construction, 4-aligned.
        unsafe { &*self.ptr.as_ptr().cast::<AtomicU32>() }
    }

    /// Decodes the head. Reads only bytes the head itself says are there.
    fn parts(&self) -> Parts {
        // SAFETY: every record starts with the count and a head written by `encode_head`;
        // the scan below reads exactly that head's bytes, no further.
        let byte = |at: usize| unsafe { *self.ptr.as_ptr().add(at) };
        let flags = byte(COUNT_LEN);
        let mut cursor = Cursor {
            byte,
            at: COUNT_LEN + 1,
        };
        let name_len = cursor.varint() as usize;
        let data_len = cursor.varint() as usize;
        let stat_at = cursor.at;
        cursor.varint();
        cursor.varint();
        for flag in [MZXID, PZXID, MTIME] {
            if flags & flag != 0 {
                cursor.varint();
            }
        }
        if flags & OWNER != 0 {
            cursor.at += 8;
        }
        for flag in [VERSION, CVERSION, AVERSION] {
            if flags & flag != 0 {
                cursor.varint();
            }
        }
        Parts {
            flags,
            stat_at,
            name_at: cursor.at,
            name_len,
            data_len,
        }
    }

    fn bytes(&self) -> (&[u8], Parts) {
        let parts = self.parts();
        // SAFETY: `total` is the size allocated for this record (asserted at construction).
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), parts.total()) };
        (bytes, parts)
    }

    pub fn name(&self) -> &str {
        let (bytes, p) = self.bytes();
        let name = &bytes[p.name_at..p.data_at()];
        // Built from a &str and never changed, so this cannot fail.
        std::str::from_utf8(name).expect("a record's name is the str it was built from")
    }

    pub fn data(&self) -> Option<&[u8]> {
        let (bytes, p) = self.bytes();
        if p.flags & NO_DATA != 0 {
            return None;
        }
        Some(&bytes[p.data_at()..p.total()])
    }

    pub fn data_len(&self) -> usize {
        self.parts().data_len
    }

    pub fn stat(&self) -> StatPersisted {
        let (bytes, p) = self.bytes();
        let mut cursor = Cursor {
            byte: |at: usize| bytes[at],
            at: p.stat_at,
        };
        let czxid = cursor.varint() as i64;
        let ctime = cursor.varint() as i64;
        let mut delta = |flag: u8, base: i64| {
            if p.flags & flag == 0 {
                return base;
            }
            base.wrapping_add(cursor.varint() as i64)
        };
        let mzxid = delta(MZXID, czxid);
        let pzxid = delta(PZXID, czxid);
        let mtime = delta(MTIME, ctime);
        let ephemeral_owner = if p.flags & OWNER != 0 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[cursor.at..cursor.at + 8]);
            cursor.at += 8;
            i64::from_le_bytes(w)
        } else {
            0
        };
        let mut int = |flag: u8| {
            if p.flags & flag == 0 {
                return 0;
            }
            cursor.varint() as u32 as i32
        };
        StatPersisted {
            czxid,
            mzxid,
            ctime,
            mtime,
            version: int(VERSION),
            cversion: int(CVERSION),
            aversion: int(AVERSION),
            ephemeral_owner,
            pzxid,
        }
    }
}

/// Reads varints through `byte`, so that the same code scans a raw head and a slice.
struct Cursor<F: Fn(usize) -> u8> {
    byte: F,
    at: usize,
}

impl<F: Fn(usize) -> u8> Cursor<F> {
    fn varint(&mut self) -> u64 {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = (self.byte)(self.at);
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        value
    }
}

fn write_varint(mut v: u64, out: &mut [u8], at: &mut usize) {
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        let more = if v != 0 { 0x80 } else { 0 };
        out[*at] = low | more;
        *at += 1;
        if v == 0 {
            break;
        }
    }
}

fn layout_of(total: usize) -> Layout {
    // 4-aligned for the count; only fails beyond isize::MAX, which no request can reach.
    Layout::from_size_align(total, 4).expect("a record's size fits a layout")
}

fn encode_head(name_len: usize, data: Option<&[u8]>, s: &StatPersisted) -> ([u8; HEAD_MAX], usize) {
    let mut head = [0u8; HEAD_MAX];
    let mut at = 1;
    let mut flags = 0;
    let data_len = data.map_or(0, <[u8]>::len);
    for v in [name_len, data_len] {
        // Both come from requests bounded far below 4 GiB (the jute frame limit).
        assert!(u32::try_from(v).is_ok(), "name or data over 4 GiB");
        write_varint(v as u64, &mut head, &mut at);
    }
    write_varint(s.czxid as u64, &mut head, &mut at);
    write_varint(s.ctime as u64, &mut head, &mut at);
    for (flag, value, base) in [
        (MZXID, s.mzxid, s.czxid),
        (PZXID, s.pzxid, s.czxid),
        (MTIME, s.mtime, s.ctime),
    ] {
        if value != base {
            flags |= flag;
            write_varint(value.wrapping_sub(base) as u64, &mut head, &mut at);
        }
    }
    if s.ephemeral_owner != 0 {
        flags |= OWNER;
        head[at..at + 8].copy_from_slice(&s.ephemeral_owner.to_le_bytes());
        at += 8;
    }
    for (flag, value) in [
        (VERSION, s.version),
        (CVERSION, s.cversion),
        (AVERSION, s.aversion),
    ] {
        if value != 0 {
            flags |= flag;
            write_varint(u64::from(value as u32), &mut head, &mut at);
        }
    }
    if data.is_none() {
        flags |= NO_DATA;
    }
    head[0] = flags;
    (head, at)
}

impl Clone for NodeRecord {
    fn clone(&self) -> Self {
        let before = self.count().fetch_add(1, Ordering::Relaxed);
        if before > COUNT_MAX {
            std::process::abort();
        }
        NodeRecord { ptr: self.ptr }
    }
}

impl Drop for NodeRecord {
    fn drop(&mut self) {
        // The same protocol as `Arc`: release on decrement, acquire before freeing.
        if self.count().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let layout = layout_of(self.parts().total());
        // SAFETY: this was the last reference; the layout is the one allocated.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for NodeRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeRecord")
            .field("name", &self.name())
            .field("data_len", &self.data_len())
            .field("stat", &self.stat())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stat(values: [i64; 6], ints: [i32; 3]) -> StatPersisted {
        StatPersisted {
            czxid: values[0],
            mzxid: values[1],
            ctime: values[2],
            mtime: values[3],
            ephemeral_owner: values[4],
            pzxid: values[5],
            version: ints[0],
            cversion: ints[1],
            aversion: ints[2],
        }
    }

    #[test]
    fn a_fresh_leaf_stores_czxid_and_ctime_only() {
        // A millionth create of epoch 1, at a 2026 wall-clock time: 5 and 6 varint bytes.
        let (zxid, time) = ((1 << 32) + 1_000_000, 1_795_000_000_000);
        let s = stat([zxid, zxid, time, time, 0, zxid], [0, 0, 0]);
        let r = NodeRecord::new("c3-123456", Some(&[1u8; 100]), &s);
        assert_eq!(r.parts().total(), COUNT_LEN + 3 + 5 + 6 + 9 + 100);
        assert!(r.parts().total() <= 128);
        assert_eq!(r.stat(), s);
        // A setData a minute and 500,000 transactions later: still within 136 bytes.
        let updated = StatPersisted {
            mzxid: zxid + 500_000,
            mtime: time + 60_000,
            version: 1,
            ..s.clone()
        };
        let r = r.with_stat(&updated);
        assert_eq!(r.stat(), updated);
        assert!(r.parts().total() <= 136);
        assert_eq!(r.name(), "c3-123456");
        assert_eq!(r.data(), Some(&[1u8; 100][..]));
    }

    #[test]
    fn null_and_empty_data_differ() {
        let s = StatPersisted::default();
        assert_eq!(NodeRecord::new("a", None, &s).data(), None);
        assert_eq!(NodeRecord::new("a", Some(&[]), &s).data(), Some(&[][..]));
        assert_eq!(NodeRecord::new("", None, &s).name(), "");
    }

    #[test]
    fn clones_share_and_outlive_the_original() {
        let r = NodeRecord::new("n", Some(b"data"), &StatPersisted::default());
        let copy = r.clone();
        assert_eq!(r.count().load(Ordering::Relaxed), 2);
        drop(r);
        assert_eq!(copy.data(), Some(&b"data"[..]));
        assert_eq!(copy.count().load(Ordering::Relaxed), 1);
    }

    proptest! {
        #[test]
        fn round_trips(
            values in proptest::array::uniform6(any::<i64>()),
            ints in proptest::array::uniform3(any::<i32>()),
            name in "[a-zé0-9]{0,300}",
            data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20_000)),
        ) {
            let s = stat(values, ints);
            let r = NodeRecord::new(&name, data.as_deref(), &s);
            prop_assert_eq!(r.stat(), s.clone());
            prop_assert_eq!(r.name(), name.as_str());
            prop_assert_eq!(r.data(), data.as_deref());
            let again = r.with_stat(&StatPersisted::default());
            prop_assert_eq!(again.name(), name.as_str());
            prop_assert_eq!(again.data(), data.as_deref());
        }
    }
}
