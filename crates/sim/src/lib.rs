//! Deterministic simulation of meerkat ensembles (test support).
//!
//! Runs 3, 5 or 7 servers of the real `zab` state machine and the real `tree` (prep and apply)
//! over a simulated network, clock and disk, with faults drawn from a seed, and checks the Zab
//! properties and the client guarantees on every run. Any failure replays exactly from its seed.
//!
//! # Layout
//! * [`world`]: the event loop, crashes and restarts; [`host`]: executing Zab's actions;
//!   [`request_path`]: the server's request path; [`client_driver`]: the clients.
//! * [`network`], [`disk`], [`rng`]: the simulated environment.
//! * [`nemesis`], [`options`]: the faults, and the per-seed choice of everything.
//! * [`client`], [`ops`]: simulated clients and the history they record.
//! * [`diskless`]: the diskless host contract (busy snapshots, failure checkpoints, boot).
//! * [`zab_checker`], [`client_checker`], [`durability`]: the properties checked.
//! * [`run`]: one run (safety phase, liveness phase, checks); [`scenario`]: scripted
//!   regressions of known ZooKeeper bugs.
//! * [`cluster`]: the simulator that runs the server's own replica and storage code (which
//!   replaces the model above as it grows; see docs/verification.md).

pub mod client;
pub mod client_checker;
pub mod client_driver;
pub mod cluster;
pub mod disk;
pub mod diskless;
pub mod durability;
pub mod host;
pub mod nemesis;
pub mod network;
pub mod ops;
pub mod options;
pub mod request_path;
pub mod rng;
pub mod run;
pub mod server;
pub mod trace;
pub mod world;
pub mod zab_checker;

pub use options::SimOptions;
pub use run::{run, RunReport};
