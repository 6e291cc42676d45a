//! Running the server as an ensemble member: the [`zab`] core driven over [`crate::peers`],
//! with storage persisting what Zab asks for.
//!
//! * [`host_message`]: the non-Zab messages between members (forwarded writes, sessions,
//!   digests).
//! * [`codec`]: the bytes of every peer frame.

pub mod codec;
pub mod host_message;
