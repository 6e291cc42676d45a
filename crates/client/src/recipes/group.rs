//! Group membership (paper §2.4 "Group Membership"): each member is an ephemeral child of the
//! group znode, so a member whose session ends leaves the group by itself; anyone can list the
//! members and watch the list change.

use crate::{acl, Client, CreateMode, OneshotWatch, Result};

#[derive(Debug, Clone)]
pub struct Group {
    zk: Client,
    dir: String,
}

impl Group {
    pub fn new(zk: &Client, path: &str) -> Group {
        Group {
            zk: zk.clone(),
            dir: path.to_string(),
        }
    }

    /// Joins as `name` with `data` (e.g. an address); `sequential` appends a unique suffix.
    /// Returns the member znode's path.
    pub async fn join(&self, name: &str, data: &[u8], sequential: bool) -> Result<String> {
        super::sequential::ensure_containers(&self.zk, &self.dir).await?;
        let mode = if sequential {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::Ephemeral
        };
        let path = crate::path::join(&self.dir, name);
        Ok(self
            .zk
            .create(&path, data, &acl::open_unsafe(), mode)
            .await?
            .0)
    }

    /// Leaves (deletes the member znode).
    pub async fn leave(&self, member_path: &str) -> Result<()> {
        self.zk.delete(member_path, -1).await
    }

    /// The member names, sorted.
    pub async fn members(&self) -> Result<Vec<String>> {
        let (mut children, _) = self.zk.get_children(&self.dir).await?;
        children.sort();
        Ok(children)
    }

    /// The member names and a watch that fires when the membership changes.
    pub async fn members_w(&self) -> Result<(Vec<String>, OneshotWatch)> {
        let (mut children, _, watch) = self.zk.get_children_w(&self.dir).await?;
        children.sort();
        Ok((children, watch))
    }

    /// A member's data.
    pub async fn member_data(&self, name: &str) -> Result<Vec<u8>> {
        Ok(self
            .zk
            .get_data(&crate::path::join(&self.dir, name))
            .await?
            .0)
    }
}
