//! Zab (Reed & Junqueira 2008; Junqueira, Reed, Serafini 2011) as a deterministic, sans-IO
//! state machine: no threads, sockets, clocks or randomness inside.
//!
//! # Contract
//! * Inputs: [`Zab::handle_message`], [`Zab::handle_tick`], [`Zab::handle_log_durable`],
//!   [`Zab::handle_peer_disconnected`], [`Zab::propose`]; each takes the host's time `now`.
//! * After every input the host drains [`Zab::poll_actions`] and executes the [`Action`]s in
//!   order. Epoch saves, truncation and snapshot saves are synchronous: durable before the next
//!   action runs. Appends are asynchronous and reported with `handle_log_durable`.
//! * Zab never emits a `Send` that depends on durability before that durability was reported
//!   (ZAB.md §2): ACKEPOCH after acceptedEpoch, NEWLEADER after currentEpoch (leader), the
//!   NEWLEADER ACK after the sync stream is fsynced and currentEpoch saved (learner), proposal
//!   ACKs after the fsync.
//! * Connections are FIFO; the host reports breaks. Messages of a broken connection are never
//!   delivered after the break is reported.
//! * Diskless mode (`Durability::Diskless`, DESIGN.md §5): appends are acknowledged from memory
//!   and the host reports them durable at once; the host saves a failure checkpoint (applied
//!   state plus [`Zab::undelivered`]) when a serving server goes LOOKING, and boots amnesiac
//!   with its snapshot's epoch label unless that checkpoint is still whole (see [`Boot`]).
//!   Amnesiac voters never count toward a quorum, except in a *full house* (every voter present
//!   and the whole ones fewer than a quorum; see [`election`] and `leader.rs`).
//!
//! # Layout
//! * [`election`]: Fast Leader Election.
//! * [`leader`], [`learner`]: discovery, synchronisation and broadcast per role;
//!   [`sync_plan`] chooses DIFF/TRUNC/SNAP.
//! * `transfer`: a leader handing over to its most up-to-date follower (ABDICATE).
//! * [`history`]: the in-memory log with its durable / delivered marks.
//! * [`membership`]: configurations and their changes (dynamic reconfiguration).
//! * [`message`], [`action`], [`entry`], [`zxid`], [`config`], [`error`]: the vocabulary.

pub mod action;
mod activation;
pub mod config;
pub mod election;
pub mod entry;
pub mod error;
pub mod history;
mod leader;
mod learner;
pub mod membership;
pub mod message;
pub mod sync_plan;
mod transfer;
mod zab;
pub mod zxid;

pub use action::{Action, Role};
#[cfg(feature = "planted-bugs")]
pub use config::PlantedBug;
pub use config::{Config, Durability, Millis, Sid};
pub use entry::{Entry, Image, SharedEntry};
pub use error::{DigestMismatch, ProposeError, TransferError, ZabError};
pub use leader::LearnerStatus;
pub use membership::{Membership, MembershipError};
pub use message::{Message, Notification, PeerState, Vote};
pub use zab::{Boot, Zab, RETAINED_BYTES_MAX, RETAINED_ENTRIES_MAX};
pub use zxid::Zxid;
