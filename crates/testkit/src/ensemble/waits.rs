//! What the members say (`srvr`, `mntr`), and bounded waits on it.

use super::{Converged, Ensemble, POLL_INTERVAL};
use crate::four_letter::{self, Role, ServerStatus};
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

impl Ensemble {
    /// `srvr` of member `sid`, parsed; a stopped or dead member is [`Role::NoAnswer`].
    pub async fn status(&self, sid: u32) -> ServerStatus {
        four_letter::srvr(self.client_address(sid)).await
    }

    pub async fn role(&self, sid: u32) -> Role {
        self.status(sid).await.role
    }

    /// `mntr` of member `sid` as key → value.
    pub async fn mntr(&self, sid: u32) -> Result<BTreeMap<String, String>> {
        Ok(four_letter::mntr(self.client_address(sid)).await?)
    }

    /// The status of every member, in server id order.
    pub async fn statuses(&self) -> Vec<(u32, ServerStatus)> {
        let mut all = Vec::new();
        for sid in self.sids() {
            all.push((sid, self.status(sid).await));
        }
        all
    }

    /// Waits until member `sid` serves clients (leader, follower, observer or standalone).
    pub async fn wait_serving(&self, sid: u32) -> Result<()> {
        let deadline = Instant::now() + self.options.start_timeout;
        loop {
            self.fail_if_exited(sid)?;
            let status = self.status(sid).await;
            if status.role.is_serving() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(anyhow!(
                    "server {sid} did not serve within {:?} (last srvr: {:?})\n{}",
                    self.options.start_timeout,
                    status.role,
                    self.log_tail(sid)
                ));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Fails with the log tail if member `sid` was started and its process has ended.
    pub fn fail_if_exited(&self, sid: u32) -> Result<()> {
        match self.exit_status(sid) {
            Some(status) => Err(anyhow!(
                "server {sid} ({}) exited by itself: {status}\n{}",
                self.flavor.name(),
                self.log_tail(sid)
            )),
            None => Ok(()),
        }
    }

    /// The leader, once there is one: see [`Self::wait_leader`].
    pub async fn leader(&self) -> Result<u32> {
        self.wait_leader(&[]).await
    }

    /// Waits until exactly one live member outside `excluded` says it leads and a majority of
    /// all members serve (leader plus followers among the live ones); returns the leader.
    /// Members that exited by themselves fail the wait.
    pub async fn wait_leader(&self, excluded: &[u32]) -> Result<u32> {
        let deadline = Instant::now() + self.options.leader_timeout;
        let majority = self.members.len() / 2 + 1;
        loop {
            let mut leaders = Vec::new();
            let mut serving = 0;
            for sid in self.live_sids() {
                let role = self.role(sid).await;
                serving += usize::from(matches!(role, Role::Leader | Role::Follower));
                if role == Role::Leader && !excluded.contains(&sid) {
                    leaders.push(sid);
                }
            }
            if let ([leader], true) = (leaders.as_slice(), serving >= majority) {
                return Ok(*leader);
            }
            if Instant::now() >= deadline {
                return Err(anyhow!(
                    "no single leader (outside {excluded:?}) within {:?}; members say {}",
                    self.options.leader_timeout,
                    self.describe().await
                ));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Waits until every live member serves, exactly one leads, and all report the same zxid
    /// and znode count (stop writing first).
    pub async fn wait_converged(&self) -> Result<Converged> {
        let deadline = Instant::now() + self.options.leader_timeout;
        loop {
            let mut statuses = Vec::new();
            for sid in self.live_sids() {
                self.fail_if_exited(sid)?;
                statuses.push((sid, self.status(sid).await));
            }
            if let Some(converged) = agreement(&statuses) {
                return Ok(converged);
            }
            if Instant::now() >= deadline {
                return Err(anyhow!(
                    "members did not converge within {:?}: {}",
                    self.options.leader_timeout,
                    self.describe().await
                ));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// One line per member: role, zxid, znodes, or down/stopped.
    pub async fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (sid, status) in self.statuses().await {
            let state = if !self.is_running(sid) {
                "down".to_string()
            } else if self.is_stopped(sid) {
                "stopped".to_string()
            } else {
                format!(
                    "{:?} zxid={} nodes={}",
                    status.role,
                    status.zxid.map_or("?".into(), |z| format!("0x{z:x}")),
                    status.node_count.map_or("?".into(), |n| n.to_string())
                )
            };
            parts.push(format!("server {sid}: {state}"));
        }
        parts.join("; ")
    }

    /// Polls `condition` every [`POLL_INTERVAL`] until it holds or `limit` passes.
    pub async fn wait_until<F, Fut>(&self, limit: Duration, mut condition: F) -> bool
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + limit;
        loop {
            if condition().await {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
}

/// The agreed state if all members serve, one leads, and zxids and node counts are equal.
fn agreement(statuses: &[(u32, crate::four_letter::ServerStatus)]) -> Option<Converged> {
    let leaders: Vec<u32> = statuses
        .iter()
        .filter(|(_, s)| s.role == Role::Leader)
        .map(|(sid, _)| *sid)
        .collect();
    let [leader] = leaders.as_slice() else {
        return None;
    };
    let (_, first) = statuses.first()?;
    let all_same = statuses.iter().all(|(_, s)| {
        s.role.is_serving() && s.zxid == first.zxid && s.node_count == first.node_count
    });
    all_same.then(|| Converged {
        leader: *leader,
        zxid: first.zxid.unwrap_or(0),
        node_count: first.node_count.unwrap_or(0),
    })
}
