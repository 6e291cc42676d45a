//! The ensemble member's side of the replica: the [`zab`] core, and what a member does beyond
//! a standalone server.
//!
//! * [`state`]: the member's state ([`Ensemble`]); [`actions`] executes what Zab asks;
//!   [`requests`] is the request path (forwarding, sessions, the leader's proposals and
//!   backlog), and the inputs from peers and timers.
//! * [`hold`]: what a member does for its clients between losing a leader and having one;
//!   [`hand_over`]: a leader handing over on purpose.
//! * [`reconfig`]: dynamic reconfiguration (the leader's prep, `/zookeeper/config`, the
//!   members' addresses); [`server_spec`]: a member's text.
//! * [`host_message`]: the non-Zab messages between members (forwarded writes, sessions,
//!   digests); [`codec`]: the bytes of every peer frame.

mod actions;
pub mod codec;
pub mod hand_over;
mod hold;
pub mod host_message;
pub mod reconfig;
mod requests;
pub mod server_spec;
mod state;

pub use state::{Ensemble, EnsembleStats};
pub(crate) use state::{Waiting, Work};
