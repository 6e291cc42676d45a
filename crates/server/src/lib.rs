//! The meerkat server: the I/O shell around the data tree.
//!
//! # Layout
//! * [`config`]: zoo.cfg as Apache ZooKeeper reads it.
//! * [`listener`], [`connection`]: sockets, framing, flow control, batched writes.
//! * [`core`]: the single task that owns the tree, sessions and watches and answers requests in
//!   order; [`reads`] answers the requests that need no transaction.
//! * [`session_tracker`], [`watch_manager`], [`java_random`]: sessions' expiry, watches,
//!   ZooKeeper-compatible session passwords.
//! * [`four_letter`], [`stats`]: operators' view.
//! * [`limits`]: every bound, in one place.

pub mod config;
pub mod connection;
pub mod core;
pub mod four_letter;
pub mod java_random;
pub mod limits;
pub mod listener;
mod reads;
mod replies;
pub mod session_tracker;
pub mod stats;
pub mod watch_manager;

use crate::config::ServerConfig;
use crate::connection::Shared;
use crate::core::{Core, CoreMsg};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

/// A server started with [`start`]: where it listens, and how to stop it.
pub struct RunningServer {
    pub client_address: SocketAddr,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl RunningServer {
    /// Stops accepting and processing; open connections end when their tasks see the core gone.
    pub fn stop(self) {
        for task in self.tasks {
            task.abort();
        }
    }

    /// Waits until the server stops (it runs until the process ends or [`RunningServer::stop`]).
    pub async fn wait(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Binds the client port and starts serving. Must be called inside a tokio runtime.
pub async fn start(config: ServerConfig) -> std::io::Result<RunningServer> {
    let config = Arc::new(config);
    let listener = TcpListener::bind(config.client_address()).await?;
    let client_address = listener.local_addr()?;
    let global_limit = config.global_outstanding_limit.max(1) as usize;
    let global_permits = Arc::new(Semaphore::new(global_limit));
    let (core_tx, core_rx) = mpsc::channel(limits::CORE_QUEUE_LEN_MAX);
    let shared = Arc::new(Shared {
        core_tx,
        global_permits: global_permits.clone(),
        jute_max_buffer: config.jute_max_buffer as usize,
        four_letter_words: config.four_letter_words.clone(),
    });
    let permits = global_permits.clone();
    let outstanding = Arc::new(move || global_limit.saturating_sub(permits.available_permits()));
    let core = Core::new(config.clone(), global_permits, outstanding);
    let core_task = tokio::spawn(run_core(core, core_rx, config.tick_time_ms));
    let accept_task = tokio::spawn(listener::accept_loop(
        listener,
        shared,
        config.max_client_cnxns,
    ));
    tracing::info!(address = %client_address, mode = "standalone", durability = "in-memory", "meerkat serving");
    Ok(RunningServer {
        client_address,
        tasks: vec![core_task, accept_task],
    })
}

/// The core's loop: messages in arrival order, and a tick for expiry.
async fn run_core(mut core: Core, mut rx: mpsc::Receiver<CoreMsg>, tick_ms: u32) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(
        u64::from(tick_ms.clamp(1, 1000)) / 2 + 1,
    ));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(msg) => core.handle(msg),
                None => return,
            },
            _ = tick.tick() => core.tick(),
        }
    }
}
