//! Leader election (paper §2.4 "Leader Election"), with Apache Curator's `LeaderLatch` layout:
//! each candidate creates an ephemeral sequential znode `_c_<uuid>-latch-<seq>` under the
//! election path; the lowest is the leader. Every other candidate watches only its
//! predecessor, so when the leader's session ends (its znode is deleted by the server) exactly
//! the next candidate takes over.

use super::sequential::{protected_create, sorted_children, wait_for_change};
use crate::{Client, CreateMode, Error, ErrorCode, Result};

/// Curator's `LeaderLatch` node name.
pub const LATCH_NAME: &str = "latch-";

/// One candidate in an election.
#[derive(Debug)]
pub struct LeaderLatch {
    zk: Client,
    dir: String,
    id: Vec<u8>,
    node: Option<String>,
}

impl LeaderLatch {
    /// `id` is stored in the candidate's znode (Curator's participant id).
    pub fn new(zk: &Client, path: &str, id: &str) -> LeaderLatch {
        LeaderLatch {
            zk: zk.clone(),
            dir: path.to_string(),
            id: id.as_bytes().to_vec(),
            node: None,
        }
    }

    /// Enters the election (creates our znode).
    pub async fn start(&mut self) -> Result<()> {
        if self.node.is_none() {
            let node = protected_create(
                &self.zk,
                &self.dir,
                LATCH_NAME,
                &self.id,
                CreateMode::EphemeralSequential,
            )
            .await?;
            self.node = Some(node);
        }
        Ok(())
    }

    /// Our candidate znode, once started. A leader can put `Op::check(node, -1)` in a `multi`
    /// so that its writes apply only while it still holds the latch (fencing).
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// Whether we lead now.
    pub async fn is_leader(&self) -> Result<bool> {
        let Some(node) = &self.node else {
            return Ok(false);
        };
        let children = sorted_children(&self.zk, &self.dir, &[LATCH_NAME]).await?;
        Ok(children.first().map(String::as_str) == Some(crate::path::name(node)))
    }

    /// Waits until we lead (starting the latch if needed).
    pub async fn await_leadership(&mut self) -> Result<()> {
        self.start().await?;
        let node = self.node.clone().unwrap_or_default();
        let name = crate::path::name(&node).to_string();
        loop {
            let children = sorted_children(&self.zk, &self.dir, &[LATCH_NAME]).await?;
            let Some(index) = children.iter().position(|c| *c == name) else {
                self.node = None;
                return Err(Error::keeper(ErrorCode::SessionExpired, node));
            };
            if index == 0 {
                return Ok(());
            }
            wait_for_change(
                &self.zk,
                &crate::path::join(&self.dir, &children[index - 1]),
            )
            .await?;
        }
    }

    /// The id stored by the current leader.
    pub async fn leader_id(&self) -> Result<Option<Vec<u8>>> {
        for child in sorted_children(&self.zk, &self.dir, &[LATCH_NAME]).await? {
            match self
                .zk
                .get_data(&crate::path::join(&self.dir, &child))
                .await
            {
                Ok((data, _)) => return Ok(Some(data)),
                Err(e) if e.code() == ErrorCode::NoNode => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Leaves the election (gives up leadership if held).
    pub async fn close(&mut self) -> Result<()> {
        if let Some(node) = self.node.take() {
            match self.zk.delete(&node, -1).await {
                Err(e) if e.code() != ErrorCode::NoNode => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}
