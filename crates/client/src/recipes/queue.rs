//! The thesis's sequential-znode message queue (Dilli 2013, Fig 5.6): producers append
//! persistent sequential znodes `msg-<seq>` under the queue path; a consumer takes the lowest
//! by reading and deleting it. A consumer that loses the race for a message (its delete finds
//! NoNode) moves on to the next, so each message is taken exactly once; an empty queue is
//! waited on with a child watch.

use crate::{acl, Client, CreateMode, Error, ErrorCode, EventType, Result};

const PREFIX: &str = "msg-";

#[derive(Debug, Clone)]
pub struct Queue {
    zk: Client,
    dir: String,
}

impl Queue {
    pub fn new(zk: &Client, path: &str) -> Queue {
        Queue {
            zk: zk.clone(),
            dir: path.to_string(),
        }
    }

    /// Appends a message; returns its znode path.
    pub async fn put(&self, message: &[u8]) -> Result<String> {
        let path = crate::path::join(&self.dir, PREFIX);
        match self
            .zk
            .create(
                &path,
                message,
                &acl::open_unsafe(),
                CreateMode::PersistentSequential,
            )
            .await
        {
            Err(e) if e.code() == ErrorCode::NoNode => {
                super::sequential::ensure_containers(&self.zk, &self.dir).await?;
                Ok(self
                    .zk
                    .create(
                        &path,
                        message,
                        &acl::open_unsafe(),
                        CreateMode::PersistentSequential,
                    )
                    .await?
                    .0)
            }
            other => other.map(|(p, _)| p),
        }
    }

    /// Takes the oldest message if there is one.
    pub async fn try_take(&self) -> Result<Option<Vec<u8>>> {
        let (children, _) = match self.zk.get_children(&self.dir).await {
            Err(e) if e.code() == ErrorCode::NoNode => return Ok(None),
            other => other?,
        };
        self.take_first_of(children).await
    }

    /// Takes the oldest message, waiting while the queue is empty.
    pub async fn take(&self) -> Result<Vec<u8>> {
        super::sequential::ensure_containers(&self.zk, &self.dir).await?;
        loop {
            let (children, _, watch) = self.zk.get_children_w(&self.dir).await?;
            if let Some(message) = self.take_first_of(children).await? {
                return Ok(message);
            }
            let event = watch.await;
            if event.event_type == EventType::None {
                return Err(Error::keeper(ErrorCode::SessionExpired, self.dir.clone()));
            }
        }
    }

    async fn take_first_of(&self, children: Vec<String>) -> Result<Option<Vec<u8>>> {
        let mut messages: Vec<(u64, String)> = children
            .into_iter()
            .filter_map(|c| super::sequential::sequence(&c, PREFIX).map(|s| (s, c)))
            .collect();
        messages.sort();
        for (_, name) in messages {
            let path = crate::path::join(&self.dir, &name);
            let data = match self.zk.get_data(&path).await {
                Ok((data, _)) => data,
                Err(e) if e.code() == ErrorCode::NoNode => continue,
                Err(e) => return Err(e),
            };
            match self.zk.delete(&path, -1).await {
                Ok(()) => return Ok(Some(data)),
                // Another consumer took it first.
                Err(e) if e.code() == ErrorCode::NoNode => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Messages waiting.
    pub async fn len(&self) -> Result<usize> {
        match self.zk.get_children(&self.dir).await {
            Ok((children, _)) => Ok(children.len()),
            Err(e) if e.code() == ErrorCode::NoNode => Ok(0),
            Err(e) => Err(e),
        }
    }
}
