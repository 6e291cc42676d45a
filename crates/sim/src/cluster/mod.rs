//! The simulator that runs the server's own code: each node is a `replica::Replica` over
//! `storage::Persistence` (stepped, on the fault-injecting in-memory disk), exactly what
//! `crates/server` runs over sockets and threads. Clients speak ZooKeeper's wire format to
//! it. What differs from production is only the executor: events instead of sockets, a
//! seeded clock instead of the machine's (docs/verification.md says what that leaves out).
//!
//! * [`node`]: one server: boot from its disk, crash to what the disk kept.
//! * [`client`]: a ZooKeeper client on the wire format; its history is what is judged.
//! * [`world`]: the event loop, the host of each node (inputs in, outputs executed), the
//!   network, the faults.
//! * [`durability`]: the diskless durability rules, judged on real nodes.
//! * [`run`]: one run and its checks (the Zab checker and client checker of this crate).

pub mod client;
pub mod durability;
pub mod node;
pub mod run;
pub mod world;

pub use run::{run_cluster, ClusterReport};
pub use world::{ClusterOptions, ClusterWorld};
