//! Who this server is in its ensemble: the `myid` file and the `server.N` lines, read as
//! Apache ZooKeeper reads them, turned into Zab's configuration and the peer transport's.

use crate::config::{ServerConfig, ServerRole};
use crate::peers::{Sid, TransportConfig, PEER_QUEUE_FRAMES};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Why this server cannot take its place in the ensemble.
#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("cannot read {path}: {source}; an ensemble member needs its id (the N of its server.N line) in dataDir/myid")]
    MyIdUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds {text:?}, which is not a server id (a whole number from 1 to 255)")]
    MyIdInvalid { path: PathBuf, text: String },
    #[error("myid is {0}, but no server.{0} line lists this server")]
    NotListed(Sid),
    #[error("server.{sid}: cannot resolve {host}: {detail}")]
    Unresolvable {
        sid: Sid,
        host: String,
        detail: String,
    },
    #[error("initLimit and syncLimit must be set for an ensemble")]
    LimitsMissing,
}

/// This server's place in the ensemble.
#[derive(Debug, Clone)]
pub struct Membership {
    pub me: Sid,
    pub voters: BTreeSet<Sid>,
    pub observers: BTreeSet<Sid>,
    /// Where this server accepts its peers (its quorum port).
    pub listen: SocketAddr,
    /// Every other member's quorum address.
    pub peers: BTreeMap<Sid, SocketAddr>,
    /// The client address from this server's `;[host:]clientPort` part, if it has one.
    pub client: Option<SocketAddr>,
    pub init_limit_ticks: u32,
    pub sync_limit_ticks: u32,
}

impl Membership {
    /// Reads `dataDir/myid` and the `server.N` lines. Call only when there are two or more.
    pub fn read(config: &ServerConfig) -> Result<Membership, MembershipError> {
        let path = config.data_dir.join("myid");
        let text =
            std::fs::read_to_string(&path).map_err(|source| MembershipError::MyIdUnreadable {
                path: path.clone(),
                source,
            })?;
        let me: Sid = match text.trim().parse() {
            Ok(id) if (1..=255).contains(&id) => id,
            _ => {
                return Err(MembershipError::MyIdInvalid {
                    path,
                    text: text.trim().chars().take(40).collect(),
                })
            }
        };
        let (Some(init), Some(sync)) = (config.init_limit, config.sync_limit) else {
            return Err(MembershipError::LimitsMissing);
        };
        let mut membership = Membership {
            me,
            voters: BTreeSet::new(),
            observers: BTreeSet::new(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            peers: BTreeMap::new(),
            client: None,
            init_limit_ticks: init,
            sync_limit_ticks: sync,
        };
        let mut listed = false;
        for line in &config.servers {
            match line.role {
                ServerRole::Participant => membership.voters.insert(line.id),
                ServerRole::Observer => membership.observers.insert(line.id),
            };
            let quorum = resolve(line.id, &line.host, line.quorum_port)?;
            if line.id == me {
                listed = true;
                membership.listen = quorum;
                if let Some(client) = &line.client {
                    membership.client = Some(resolve(line.id, &client.host, client.port)?);
                }
            } else {
                membership.peers.insert(line.id, quorum);
            }
        }
        if !listed {
            return Err(MembershipError::NotListed(me));
        }
        Ok(membership)
    }

    pub fn transport(&self) -> TransportConfig {
        TransportConfig {
            me: self.me,
            listen: self.listen,
            peers: self.peers.clone(),
            queue_frames: PEER_QUEUE_FRAMES,
        }
    }

    /// Zab's configuration: ZooKeeper's tick and limits, meerkat's election timing.
    pub fn zab_config(&self, tick_ms: u32, proposals_in_flight_max: usize) -> zab::Config {
        let mut config = zab::Config::new(self.me, self.voters.clone(), self.observers.clone());
        config.tick_ms = u64::from(tick_ms.max(1));
        config.init_limit_ticks = u64::from(self.init_limit_ticks.max(1));
        config.sync_limit_ticks = u64::from(self.sync_limit_ticks.max(1));
        config.proposals_in_flight_max = proposals_in_flight_max.max(1);
        config
    }

    pub fn members(&self) -> usize {
        self.voters.len() + self.observers.len()
    }
}

fn resolve(sid: Sid, host: &str, port: u16) -> Result<SocketAddr, MembershipError> {
    let unresolvable = |detail: String| MembershipError::Unresolvable {
        sid,
        host: host.to_string(),
        detail,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(|e| unresolvable(e.to_string()))?
        .next()
        .ok_or_else(|| unresolvable("no address".into()))
}
