//! Configuration management (paper §2.4 "Configuration Management"): the configuration lives in
//! one znode; readers read it with a watch and read again when the watch fires, so they always
//! converge on the newest configuration without polling (they may skip intermediate versions,
//! which is the point: only the latest matters).

use crate::{Client, CreateMode, ErrorCode, OneshotWatch, Result, Stat};

#[derive(Debug)]
pub struct ConfigWatch {
    zk: Client,
    path: String,
    watch: Option<OneshotWatch>,
}

impl ConfigWatch {
    pub fn new(zk: &Client, path: &str) -> ConfigWatch {
        ConfigWatch {
            zk: zk.clone(),
            path: path.to_string(),
            watch: None,
        }
    }

    /// Publishes a new configuration (creating the znode if needed).
    pub async fn publish(zk: &Client, path: &str, config: &[u8]) -> Result<Stat> {
        match zk.set_data(path, config, -1).await {
            Err(e) if e.code() == ErrorCode::NoNode => {
                match zk
                    .create(
                        path,
                        config,
                        &crate::acl::open_unsafe(),
                        CreateMode::Persistent,
                    )
                    .await
                {
                    Ok((_, stat)) => Ok(stat),
                    Err(e) if e.code() == ErrorCode::NodeExists => {
                        zk.set_data(path, config, -1).await
                    }
                    Err(e) => Err(e),
                }
            }
            other => other,
        }
    }

    /// The current configuration (`None` while the znode does not exist); arms the watch.
    pub async fn current(&mut self) -> Result<Option<(Vec<u8>, Stat)>> {
        match self.zk.get_data_w(&self.path).await {
            Ok((data, stat, watch)) => {
                self.watch = Some(watch);
                Ok(Some((data, stat)))
            }
            Err(e) if e.code() == ErrorCode::NoNode => {
                // Watch for its creation instead; re-check in case it appeared meanwhile.
                let (stat, watch) = self.zk.exists_w(&self.path).await?;
                self.watch = Some(watch);
                if stat.is_some() {
                    return Box::pin(self.current()).await;
                }
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Waits for the configuration to change from what [`ConfigWatch::current`] last returned,
    /// then returns the new one (and re-arms the watch).
    pub async fn changed(&mut self) -> Result<Option<(Vec<u8>, Stat)>> {
        if let Some(watch) = self.watch.take() {
            let event = watch.await;
            if event.event_type == crate::EventType::None {
                return Err(crate::Error::keeper(
                    ErrorCode::SessionExpired,
                    self.path.clone(),
                ));
            }
        }
        self.current().await
    }
}
