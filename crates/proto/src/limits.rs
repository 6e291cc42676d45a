//! Limits the decoder enforces before it allocates anything a peer asked for.

/// Apache ZooKeeper's default `jute.maxbuffer`: the largest frame (and znode data) accepted.
pub const JUTE_MAX_BUFFER_DEFAULT: u32 = 0xfffff;

/// Vectors on the wire are bounded by the frame they arrive in; this caps the element count of
/// any single vector so a tiny frame cannot claim a huge allocation.
pub const VECTOR_LEN_MAX: usize = 1 << 20;

/// The number of operations in one multi request. ZooKeeper has no explicit limit (only the
/// frame size); the smallest op is about 20 bytes, so a 1 MiB frame holds at most this many.
pub const MULTI_OPS_MAX: usize = 1 << 16;

/// Length of a session password.
pub const SESSION_PASSWORD_LEN: usize = 16;

const _: () = assert!(MULTI_OPS_MAX <= VECTOR_LEN_MAX);
