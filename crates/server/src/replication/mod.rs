//! Running the server as an ensemble member: the [`zab`] core driven over [`crate::peers`],
//! with storage persisting what Zab asks for.
//!
//! * [`host_message`]: the non-Zab messages between members (forwarded writes, sessions,
//!   digests).
//! * [`codec`]: the bytes of every peer frame.
//! * [`membership`]: `myid` and the `server.N` lines.
//! * [`replica`]: the ensemble member's state; [`actions`] executes what Zab asks;
//!   [`requests`] is the request path (forwarding, sessions, the leader's proposals).

mod actions;
pub mod codec;
pub mod host_message;
pub mod membership;
mod replica;
mod requests;

pub use membership::{Membership, MembershipError};
pub use replica::ReplicaStats;
pub(crate) use replica::{Replica, Work};
