//! One meerkat server's decisions, without I/O: the replica that production and the simulator
//! both run (DESIGN.md §2).
//!
//! The replica owns the data tree, sessions, watches, every connection's request queue, prep
//! and the Zab core. It is driven by inputs that carry the time ([`Now`]): a client connected,
//! sent a request or went away; a peer sent a frame or went away; the log made a zxid durable;
//! a tick. It answers with [`Output`]s, plain data the I/O shell executes in order: frames for
//! clients, frames for peers, connections to close, snapshots to send. What must be on disk
//! before the next output (epoch files, log truncation, a leader's snapshot, a failure
//! checkpoint) goes through the [`Store`] the replica is built with, synchronously; log appends
//! go there too and come back as durability reports.
//!
//! No sockets, threads, clocks or ambient randomness live here: the same inputs give the same
//! outputs, which is what lets the simulator replay a failure from its seed.
//!
//! # Layout
//! * [`replica`]: the state and the client-facing inputs; [`reads`] answers what needs no
//!   transaction; [`ensemble`] is the member's side (forwarding, the leader's proposals and
//!   backlog, executing Zab's actions, digest checks, the diskless checkpoint).
//! * [`output`], [`now`], [`store`], [`settings`]: the replica's contract with its host;
//!   [`boot`]: what a member starts Zab from.
//! * [`session_tracker`], [`watch_manager`], [`java_random`], [`replies`], [`stats`]: sessions'
//!   expiry, watches, ZooKeeper-compatible session passwords, reply frames, counters.
//! * [`local_sessions`], [`read_only`]: sessions that live on one server only, and serving
//!   reads while cut off from the quorum (`localSessionsEnabled`, `readonlymode.enabled`).
//! * [`limits`]: every bound the replica enforces.

pub mod boot;
pub mod ensemble;
pub mod java_random;
pub mod limits;
pub mod local_sessions;
pub mod now;
pub mod output;
#[cfg(feature = "planted-bugs")]
pub mod planted;
pub mod read_only;
mod reads;
#[allow(clippy::module_inception)]
pub mod replica;
mod replies;
pub mod sasl;
pub mod session_tracker;
pub mod settings;
pub mod stats;
pub mod store;
pub mod watch_manager;

pub use now::Now;
pub use output::{Observation, Output};
pub use replica::{ClientInput, Conn, Replica, Startup};
pub use settings::Settings;
pub use store::Store;
pub use watch_manager::ConnId;
