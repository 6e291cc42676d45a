//! A mutual-exclusion lock without herd effect (paper §2.4 "Simple Locks without Herd
//! Effect"), with Apache Curator's `InterProcessMutex` znode layout so that Curator-based
//! processes and this one exclude each other on the same path.
//!
//! Layout: under the lock path, each contender creates an ephemeral sequential znode
//! `_c_<uuid>-lock-<seq>` (parents created as containers). The contender with the lowest
//! sequence holds the lock. Every other contender watches only the znode just before its own
//! (getData with a watch, as Curator), so a release wakes exactly one waiter, and a holder whose
//! session ends releases the lock when the server deletes its ephemeral znode.
//!
//! Unlike Curator's, this lock is not re-entrant: acquiring twice from one [`Lock`] is refused.

use super::sequential::{
    ensure_containers, protected_create, sorted_children, wait_for_change_observed,
};
use crate::{Client, CreateMode, Error, ErrorCode, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Curator's `LockInternals` name for mutex nodes.
pub const LOCK_NAME: &str = "lock-";

/// A lock on one path for one session.
pub struct Lock {
    zk: Client,
    dir: String,
    node: Option<String>,
    data: Vec<u8>,
    wakeups: Arc<AtomicU64>,
    observer: Option<Observer>,
}

/// Progress of an acquisition, for logging and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockEvent {
    /// Our znode is queued and a watch is armed on the predecessor (`on`).
    Waiting {
        node: String,
        on: String,
    },
    /// A watch notification woke us.
    Woken {
        node: String,
    },
    Acquired {
        node: String,
    },
}

type Observer = Arc<dyn Fn(LockEvent) + Send + Sync>;

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("dir", &self.dir)
            .field("node", &self.node)
            .finish()
    }
}

impl Lock {
    pub fn new(zk: &Client, path: &str) -> Lock {
        Lock {
            zk: zk.clone(),
            dir: path.to_string(),
            node: None,
            data: Vec::new(),
            wakeups: Arc::new(AtomicU64::new(0)),
            observer: None,
        }
    }

    /// Calls `observer` as the acquisition progresses.
    pub fn with_observer(mut self, observer: impl Fn(LockEvent) + Send + Sync + 'static) -> Lock {
        self.observer = Some(Arc::new(observer));
        self
    }

    fn notify(&self, event: LockEvent) {
        if let Some(observer) = &self.observer {
            observer(event);
        }
    }

    /// Data stored in the lock znode (Curator stores the host address by default).
    pub fn with_data(mut self, data: &[u8]) -> Lock {
        self.data = data.to_vec();
        self
    }

    /// Waits until the lock is held.
    pub async fn acquire(&mut self) -> Result<()> {
        if self.node.is_some() {
            return Err(Error::InvalidArgument("lock already held".into()));
        }
        let node = protected_create(
            &self.zk,
            &self.dir,
            LOCK_NAME,
            &self.data,
            CreateMode::EphemeralSequential,
        )
        .await?;
        match self.wait_until_first(&node, [LOCK_NAME]).await {
            Ok(()) => {
                self.node = Some(node);
                Ok(())
            }
            Err(e) => {
                // Do not leave a node that would block the others.
                let _ = self.zk.delete(&node, -1).await;
                Err(e)
            }
        }
    }

    /// As [`Lock::acquire`], giving up after `limit`; `Ok(false)` if not acquired in time.
    pub async fn try_acquire(&mut self, limit: Duration) -> Result<bool> {
        if self.node.is_some() {
            return Err(Error::InvalidArgument("lock already held".into()));
        }
        let node = protected_create(
            &self.zk,
            &self.dir,
            LOCK_NAME,
            &self.data,
            CreateMode::EphemeralSequential,
        )
        .await?;
        match tokio::time::timeout(limit, self.wait_until_first(&node, [LOCK_NAME])).await {
            Ok(Ok(())) => {
                self.node = Some(node);
                Ok(true)
            }
            Ok(Err(e)) => {
                let _ = self.zk.delete(&node, -1).await;
                Err(e)
            }
            Err(_) => {
                self.zk.delete(&node, -1).await.or_else(ignore_no_node)?;
                Ok(false)
            }
        }
    }

    /// Releases the lock (deletes our znode).
    pub async fn release(&mut self) -> Result<()> {
        let Some(node) = self.node.take() else {
            return Err(Error::InvalidArgument("lock not held".into()));
        };
        self.zk.delete(&node, -1).await.or_else(ignore_no_node)
    }

    pub fn is_held(&self) -> bool {
        self.node.is_some()
    }

    /// The znode that represents our hold on the lock.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// How many times a watch woke this lock while waiting (the herd-effect measure: one per
    /// release ahead of us at most).
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::SeqCst)
    }

    /// Loops until `node` is the first of the contenders: each round watches only the
    /// predecessor.
    async fn wait_until_first<const N: usize>(&self, node: &str, markers: [&str; N]) -> Result<()> {
        let name = crate::path::name(node).to_string();
        loop {
            let children = sorted_children(&self.zk, &self.dir, &markers).await?;
            let Some(index) = children.iter().position(|c| *c == name) else {
                // Our node vanished: the session expired under us.
                return Err(Error::keeper(ErrorCode::SessionExpired, node));
            };
            if index == 0 {
                self.notify(LockEvent::Acquired {
                    node: node.to_string(),
                });
                return Ok(());
            }
            let before = crate::path::join(&self.dir, &children[index - 1]);
            let observer = self.observer.clone();
            let waiting = LockEvent::Waiting {
                node: node.to_string(),
                on: before.clone(),
            };
            let woken = wait_for_change_observed(&self.zk, &before, move || {
                if let Some(observer) = &observer {
                    observer(waiting.clone());
                }
            })
            .await?;
            if woken {
                self.wakeups.fetch_add(1, Ordering::SeqCst);
                self.notify(LockEvent::Woken {
                    node: node.to_string(),
                });
            }
        }
    }

    /// The contenders in order (Curator's `getParticipantNodes`).
    pub async fn participants(&self) -> Result<Vec<String>> {
        ensure_containers(&self.zk, &self.dir).await?;
        sorted_children(&self.zk, &self.dir, &[LOCK_NAME]).await
    }
}

fn ignore_no_node(e: Error) -> Result<()> {
    if e.code() == ErrorCode::NoNode {
        Ok(())
    } else {
        Err(e)
    }
}
