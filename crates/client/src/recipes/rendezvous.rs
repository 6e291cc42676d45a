//! Rendezvous (paper §2.4 "Rendezvous"): a client creates an empty rendezvous znode and passes
//! its path to processes it starts (workers); the master fills it in with its address once it
//! is up. Workers read it, and wait with a watch while it is still empty.

use crate::{acl, Client, CreateMode, Error, ErrorCode, Result};

/// Creates an empty rendezvous znode; returns its path.
pub async fn create(zk: &Client, path: &str) -> Result<String> {
    Ok(zk
        .create(path, b"", &acl::open_unsafe(), CreateMode::Persistent)
        .await?
        .0)
}

/// The master's side: fills the rendezvous in.
pub async fn publish(zk: &Client, path: &str, info: &[u8]) -> Result<()> {
    zk.set_data(path, info, -1).await.map(drop)
}

/// A worker's side: waits until the rendezvous is filled in, returns its content.
pub async fn wait(zk: &Client, path: &str) -> Result<Vec<u8>> {
    loop {
        let (data, _, watch) = zk.get_data_w(path).await?;
        if !data.is_empty() {
            return Ok(data);
        }
        let event = watch.await;
        if event.event_type == crate::EventType::None {
            return Err(Error::keeper(ErrorCode::SessionExpired, path));
        }
    }
}
