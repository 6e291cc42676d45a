//! meerkat's ZooKeeper client: an async API on tokio, a blocking wrapper, and the coordination
//! recipes of the ZooKeeper paper (§2.4) built on it.
//!
//! It speaks the ZooKeeper wire protocol (through the `proto` crate) and works against Apache
//! ZooKeeper 3.9 as well as against meerkat.
//!
//! # Layout
//! * [`client`]: [`Client`], every operation, async.
//! * [`blocking`]: [`blocking::Client`], the same operations for threads without a runtime.
//! * [`session`]: the task behind a client: connection, pipelining, heartbeats, failover,
//!   reconnection with setWatches.
//! * [`connection`]: frames over one TCP connection; `submit_queue`: calls to the session in
//!   call order, bounded.
//! * [`watch`]: one-shot and persistent watches and the registry that routes events to them.
//! * [`event`]: watch events and session states.
//! * [`error`]: typed errors mapped to ZooKeeper's error codes.
//! * [`connect_string`], [`path`]: connect strings with several hosts and a chroot; paths.
//! * [`create_mode`], [`acl`], [`op`], [`config`], [`limits`]: the vocabulary of requests.
//! * [`recipes`]: configuration, rendezvous, group membership, locks, barriers, election,
//!   queue.
//!
//! # Example
//! ```no_run
//! # async fn demo() -> client::Result<()> {
//! use client::{acl, Client, ClientConfig, CreateMode};
//! let zk = Client::connect("127.0.0.1:2181/app", ClientConfig::default()).await?;
//! zk.create("/config", b"v1", &acl::open_unsafe(), CreateMode::Persistent).await?;
//! let (data, _stat, watch) = zk.get_data_w("/config").await?;
//! assert_eq!(data, b"v1");
//! let event = watch.await; // fires on the next change
//! # let _ = event; Ok(()) }
//! ```

pub mod acl;
pub mod blocking;
pub mod client;
pub mod config;
pub mod connect_string;
mod connection;
pub mod create_mode;
pub mod error;
pub mod event;
pub mod limits;
pub mod op;
pub mod path;
pub mod recipes;
pub mod session;
mod submit_queue;
pub mod tls;
pub mod watch;

pub use client::Client;
pub use config::ClientConfig;
pub use create_mode::CreateMode;
pub use error::{Error, Result};
pub use event::{SessionState, WatchedEvent};
pub use op::{Op, OpResult};
pub use proto::watch::{AddWatchMode, EventType, KeeperState, WatcherType};
pub use proto::{Acl, ClientInfo, ErrorCode, Id, Stat};
pub use tls::{StoreLocation, TlsConfig};
pub use watch::{OneshotWatch, PersistentWatch};
