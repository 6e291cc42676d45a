//! The AdminServer's `leader` command in a three-member ensemble over real loopback sockets:
//! ZooKeeper 3.9.3's fields (`LeaderCommand`: `is_leader`, `leader_id`, `leader_ip` from
//! `QuorumPeer.getLeaderId`/`getLeaderAddress`, the leader's quorum host as its `server.N`
//! line has it). Every member names the same leader; only that one says it is the leader;
//! after the leader stops, the other two name the new one. (The differential AdminServer suite
//! runs a standalone pair, where both servers answer an error.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use server::config::ServerConfig;
use server::RunningServer;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WITHIN: Duration = Duration::from_secs(30);

struct Members {
    dirs: Vec<std::path::PathBuf>,
    client_ports: Vec<u16>,
    lines: String,
}

impl Members {
    fn new() -> Self {
        let (mut dirs, mut client_ports, mut lines) = (Vec::new(), Vec::new(), String::new());
        for sid in 1..=3 {
            let client = ports::free_port().unwrap();
            let (q, e) = (ports::free_port().unwrap(), ports::free_port().unwrap());
            lines.push_str(&format!(
                "server.{sid}=127.0.0.1:{q}:{e};127.0.0.1:{client}\n"
            ));
            let dir = fresh_data_dir();
            std::fs::write(dir.join("myid"), format!("{sid}\n")).unwrap();
            dirs.push(dir);
            client_ports.push(client);
        }
        Members {
            dirs,
            client_ports,
            lines,
        }
    }

    fn config(&self, sid: usize) -> ServerConfig {
        let text = format!(
            "tickTime=100\ninitLimit=20\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
             clientPortAddress=127.0.0.1\npreAllocSize=1024\n4lw.commands.whitelist=*\n\
             admin.enableServer=true\nadmin.serverAddress=127.0.0.1\n{}",
            self.dirs[sid - 1].display(),
            self.client_ports[sid - 1],
            self.lines
        );
        let mut config = ServerConfig::parse(&text, "zoo.cfg").expect("valid zoo.cfg");
        config.admin.port = 0;
        config
    }

    async fn start(&self, sid: usize) -> RunningServer {
        let mut attempts = 0;
        loop {
            match server::start(self.config(sid)).await {
                Ok(running) => return running,
                Err(
                    server::StartError::PeerListen { source, .. }
                    | server::StartError::Listen { source, .. },
                ) if source.kind() == std::io::ErrorKind::AddrInUse && attempts < 50 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("member {sid} starts: {e:?}"),
            }
        }
    }
}

/// `GET /commands/leader` as JSON; `None` when there is no answer.
async fn leader_json(admin: SocketAddr) -> Option<Value> {
    let mut tcp = tokio::net::TcpStream::connect(admin).await.ok()?;
    tcp.write_all(b"GET /commands/leader HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out);
    let body = text.split_once("\r\n\r\n")?.1;
    serde_json::from_str(body).ok()
}

/// Waits (bounded) until every member answers with a leader id, and returns the answers.
async fn answers(admins: &[SocketAddr]) -> Vec<Value> {
    let deadline = Instant::now() + WITHIN;
    loop {
        let mut all = Vec::new();
        for &admin in admins {
            if let Some(json) = leader_json(admin).await {
                if json["error"].is_null() && json["leader_id"].as_i64().unwrap_or(-1) > 0 {
                    all.push(json);
                }
            }
        }
        let same = all
            .windows(2)
            .all(|w| w[0]["leader_id"] == w[1]["leader_id"]);
        if all.len() == admins.len() && same {
            return all;
        }
        assert!(Instant::now() < deadline, "no agreed leader: {all:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Checks ZooKeeper's fields and returns the leader id all of them name.
fn check(answers: &[Value], sids: &[usize]) -> i64 {
    let leader = answers[0]["leader_id"].as_i64().unwrap();
    assert!(
        sids.contains(&(leader as usize)),
        "leader {leader} is a member"
    );
    for (json, &sid) in answers.iter().zip(sids) {
        let mut fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["command", "error", "is_leader", "leader_id", "leader_ip"]
        );
        assert_eq!(json["command"], "leader");
        assert_eq!(json["leader_ip"], "127.0.0.1", "the leader's server.N host");
        assert_eq!(
            json["is_leader"],
            sid as i64 == leader,
            "member {sid}: {json}"
        );
    }
    leader
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_member_names_the_leader_with_zookeepers_fields() {
    let members = Members::new();
    let mut servers = Vec::new();
    for sid in 1..=3 {
        servers.push(Some(members.start(sid).await));
    }
    let admin = |s: &Option<RunningServer>| s.as_ref().unwrap().admin_address.unwrap();
    let admins: Vec<SocketAddr> = servers.iter().map(admin).collect();
    let leader = check(&answers(&admins).await, &[1, 2, 3]);

    // The leader stops; the other two agree on a new one.
    if let Some(s) = servers[leader as usize - 1].take() {
        s.shutdown().await;
    }
    let rest: Vec<usize> = (1..=3).filter(|&s| s as i64 != leader).collect();
    let rest_admins: Vec<SocketAddr> = rest.iter().map(|&s| admins[s - 1]).collect();
    let new_leader = check(&answers(&rest_admins).await, &rest);
    assert_ne!(new_leader, leader);
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}
