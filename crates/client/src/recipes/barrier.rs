//! A double barrier (paper §2.4 "Double Barrier"): `size` processes enter together and leave
//! together.
//!
//! Layout: under the barrier path, each participant has an ephemeral znode named after it, and
//! the last to arrive creates `ready`.
//! * enter: create our node; if fewer than `size` participants are there, wait for `ready`
//!   to exist (an exists watch), else create `ready`.
//! * leave (the paper's protocol): if ours is the only node left, delete it and go. If ours is
//!   the lowest, wait for the highest to go; otherwise delete ours and wait for the lowest to
//!   go. Repeat. Everyone therefore leaves only once all have started leaving.

use crate::{acl, Client, CreateMode, Error, ErrorCode, EventType, Result};

const READY: &str = "ready";

#[derive(Debug)]
pub struct DoubleBarrier {
    zk: Client,
    dir: String,
    name: String,
    size: usize,
}

impl DoubleBarrier {
    /// `name` must be unique among the participants.
    pub fn new(zk: &Client, path: &str, name: &str, size: usize) -> DoubleBarrier {
        DoubleBarrier {
            zk: zk.clone(),
            dir: path.to_string(),
            name: name.to_string(),
            size,
        }
    }

    fn node(&self) -> String {
        crate::path::join(&self.dir, &self.name)
    }

    async fn participants(&self) -> Result<Vec<String>> {
        let (mut children, _) = self.zk.get_children(&self.dir).await?;
        children.retain(|c| c != READY);
        children.sort();
        Ok(children)
    }

    /// Waits until `size` participants have entered.
    pub async fn enter(&self) -> Result<()> {
        super::sequential::ensure_containers(&self.zk, &self.dir).await?;
        let ready = crate::path::join(&self.dir, READY);
        // Watch `ready` before joining, so its creation cannot be missed.
        let (exists, watch) = self.zk.exists_w(&ready).await?;
        match self
            .zk
            .create(
                &self.node(),
                b"",
                &acl::open_unsafe(),
                CreateMode::Ephemeral,
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == ErrorCode::NodeExists => {}
            Err(e) => return Err(e),
        }
        if exists.is_some() {
            return Ok(());
        }
        if self.participants().await?.len() >= self.size {
            match self
                .zk
                .create(&ready, b"", &acl::open_unsafe(), CreateMode::Persistent)
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if e.code() == ErrorCode::NodeExists => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        let event = watch.await;
        if event.event_type == EventType::None {
            return Err(Error::keeper(ErrorCode::SessionExpired, ready));
        }
        Ok(())
    }

    /// Waits until every participant has left.
    pub async fn leave(&self) -> Result<()> {
        let mine = self.name.clone();
        loop {
            let children = self.participants().await?;
            if children.is_empty() || (children.len() == 1 && children[0] == mine) {
                self.delete_mine().await?;
                return self.remove_ready().await;
            }
            if !children.contains(&mine) {
                // Ours is gone: wait for the lowest remaining to go.
                self.wait_gone(&children[0]).await?;
                continue;
            }
            if children[0] == mine {
                let highest = children.last().cloned().unwrap_or_default();
                self.wait_gone(&highest).await?;
            } else {
                self.delete_mine().await?;
                self.wait_gone(&children[0]).await?;
            }
        }
    }

    async fn delete_mine(&self) -> Result<()> {
        match self.zk.delete(&self.node(), -1).await {
            Err(e) if e.code() != ErrorCode::NoNode => Err(e),
            _ => Ok(()),
        }
    }

    /// The last one out removes `ready` so the barrier can be used again.
    async fn remove_ready(&self) -> Result<()> {
        if self.participants().await?.is_empty() {
            match self
                .zk
                .delete(&crate::path::join(&self.dir, READY), -1)
                .await
            {
                Err(e) if e.code() != ErrorCode::NoNode => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    async fn wait_gone(&self, child: &str) -> Result<()> {
        let path = crate::path::join(&self.dir, child);
        let (stat, watch) = self.zk.exists_w(&path).await?;
        if stat.is_some() {
            let event = watch.await;
            if event.event_type == EventType::None {
                return Err(Error::keeper(ErrorCode::SessionExpired, path));
            }
        }
        Ok(())
    }
}
