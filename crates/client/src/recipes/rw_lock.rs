//! A read/write lock (paper §2.4 "Read/Write Locks"), with Apache Curator's
//! `InterProcessReadWriteLock` layout: contenders create ephemeral sequential znodes
//! `_c_<uuid>-__READ__<seq>` or `_c_<uuid>-__WRIT__<seq>` under the lock path.
//!
//! * A writer holds the lock when its node is the lowest; it watches only its predecessor.
//! * A reader holds it when no writer node comes before its own; it watches only the last
//!   writer node before its own. Readers therefore share the lock, and a writer's release wakes
//!   the readers queued right behind it (the paper's design: each waits on "the write lock
//!   before it"), but never the writers behind them.

use super::sequential::{protected_create, sorted_children, wait_for_change};
use crate::{Client, CreateMode, Error, ErrorCode, Result};

pub const READ_NAME: &str = "__READ__";
pub const WRITE_NAME: &str = "__WRIT__";

/// A read/write lock on one path.
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    zk: Client,
    dir: String,
}

/// A held read or write lock; release it with [`Held::release`].
#[derive(Debug)]
pub struct Held {
    zk: Client,
    node: String,
}

impl Held {
    pub fn node(&self) -> &str {
        &self.node
    }

    pub async fn release(self) -> Result<()> {
        match self.zk.delete(&self.node, -1).await {
            Err(e) if e.code() != ErrorCode::NoNode => Err(e),
            _ => Ok(()),
        }
    }
}

impl ReadWriteLock {
    pub fn new(zk: &Client, path: &str) -> ReadWriteLock {
        ReadWriteLock {
            zk: zk.clone(),
            dir: path.to_string(),
        }
    }

    /// Waits for a shared (read) hold.
    pub async fn read(&self) -> Result<Held> {
        self.acquire(READ_NAME).await
    }

    /// Waits for the exclusive (write) hold.
    pub async fn write(&self) -> Result<Held> {
        self.acquire(WRITE_NAME).await
    }

    async fn acquire(&self, kind: &str) -> Result<Held> {
        let node = protected_create(
            &self.zk,
            &self.dir,
            kind,
            b"",
            CreateMode::EphemeralSequential,
        )
        .await?;
        let held = Held {
            zk: self.zk.clone(),
            node: node.clone(),
        };
        let name = crate::path::name(&node).to_string();
        loop {
            let children =
                match sorted_children(&self.zk, &self.dir, &[READ_NAME, WRITE_NAME]).await {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = held.release().await;
                        return Err(e);
                    }
                };
            let Some(index) = children.iter().position(|c| *c == name) else {
                return Err(Error::keeper(ErrorCode::SessionExpired, node));
            };
            let blocker = if kind == WRITE_NAME {
                index.checked_sub(1)
            } else {
                children[..index]
                    .iter()
                    .rposition(|c| c.contains(WRITE_NAME))
            };
            let Some(blocker) = blocker else {
                return Ok(held);
            };
            let before = crate::path::join(&self.dir, &children[blocker]);
            if let Err(e) = wait_for_change(&self.zk, &before).await {
                let _ = held.release().await;
                return Err(e);
            }
        }
    }
}
