//! Who the ensemble members are: `myid` and the `server.N` lines. What a member does is the
//! replica's (`replica::ensemble`); this server carries its messages over [`crate::peers`].

pub mod membership;

pub use membership::{Membership, MembershipError};
