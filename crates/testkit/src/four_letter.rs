//! ZooKeeper's four-letter words over TCP (`srvr`, `mntr`), and what their answers say.
//!
//! Both Apache ZooKeeper and meerkat answer them on the client port when the cfg has
//! `4lw.commands.whitelist=*`. A server that is up but not part of a working quorum answers
//! "This ZooKeeper instance is not currently serving requests".

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one question may take in all (connect, write, read to the end).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest answer read; `mntr` and `srvr` are a few hundred bytes.
pub const ANSWER_BYTES_MAX: usize = 64 * 1024;

const NOT_SERVING: &str = "not currently serving requests";

/// What a server says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Leader,
    Follower,
    Observer,
    Standalone,
    /// Up, but not serving: looking for a leader, or syncing with one.
    NotServing,
    /// No answer: refused, stopped (SIGSTOP) or too slow.
    NoAnswer,
}

impl Role {
    /// True for the roles that serve client requests.
    pub fn is_serving(self) -> bool {
        matches!(
            self,
            Role::Leader | Role::Follower | Role::Observer | Role::Standalone
        )
    }
}

/// The parts of a `srvr` answer the tests use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub role: Role,
    /// The last zxid the server processed (`Zxid: 0x...`).
    pub zxid: Option<i64>,
    /// Znodes in its tree (`Node count: N`).
    pub node_count: Option<u64>,
}

impl ServerStatus {
    /// The epoch part of the zxid (its high 32 bits).
    pub fn epoch(&self) -> Option<i64> {
        self.zxid.map(|zxid| zxid >> 32)
    }

    fn no_answer() -> ServerStatus {
        ServerStatus {
            role: Role::NoAnswer,
            zxid: None,
            node_count: None,
        }
    }
}

/// Sends `word` and returns the whole answer, or the reason there was none.
pub async fn ask(address: SocketAddr, word: &str) -> std::io::Result<String> {
    let exchange = async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut answer = Vec::new();
        let mut limited = (&mut stream).take(ANSWER_BYTES_MAX as u64);
        limited.read_to_end(&mut answer).await?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("{word} to {address}: no answer within {ANSWER_TIMEOUT:?}"),
        )),
    }
}

/// Waits until the server at `address` answers `srvr` (it serves), for at most `limit`.
pub async fn wait_serving(address: SocketAddr, limit: Duration) -> anyhow::Result<()> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        let answer = ask(address, "srvr").await.unwrap_or_default();
        if answer.starts_with("Zookeeper version") {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{address} did not answer srvr within {limit:?}")
}

/// `srvr`, parsed; a server that does not answer is [`Role::NoAnswer`].
pub async fn srvr(address: SocketAddr) -> ServerStatus {
    match ask(address, "srvr").await {
        Ok(answer) => parse_srvr(&answer),
        Err(_) => ServerStatus::no_answer(),
    }
}

/// `mntr` as key → value (`zk_znode_count` → "12"); empty if the server is not serving.
pub async fn mntr(address: SocketAddr) -> std::io::Result<BTreeMap<String, String>> {
    let answer = ask(address, "mntr").await?;
    Ok(answer
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(key, value)| (key.trim().to_string(), value.trim().to_string()))
        .collect())
}

/// Reads a `srvr` answer. An empty or unrecognised answer is [`Role::NoAnswer`].
pub fn parse_srvr(answer: &str) -> ServerStatus {
    if answer.contains(NOT_SERVING) {
        return ServerStatus {
            role: Role::NotServing,
            zxid: None,
            node_count: None,
        };
    }
    let mut status = ServerStatus::no_answer();
    for line in answer.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Mode" => status.role = parse_mode(value),
            "Zxid" => {
                let hex = value.trim_start_matches("0x");
                status.zxid = i64::from_str_radix(hex, 16).ok();
            }
            "Node count" => status.node_count = value.parse().ok(),
            _ => {}
        }
    }
    status
}

fn parse_mode(value: &str) -> Role {
    match value {
        "leader" => Role::Leader,
        "follower" => Role::Follower,
        "observer" => Role::Observer,
        "standalone" => Role::Standalone,
        _ => Role::NoAnswer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_zookeeper_follower_answer() {
        let answer = "Zookeeper version: 3.9.3-c26634f34490bb0ea7a09cc51e05ede3b4e320ee, \
                      built on 2024-10-17 23:21 UTC\n\
                      Latency min/avg/max: 0/0.0/0\nReceived: 3\nSent: 2\nConnections: 1\n\
                      Outstanding: 0\nZxid: 0x200000003\nMode: follower\nNode count: 7\n";
        let status = parse_srvr(answer);
        assert_eq!(status.role, Role::Follower);
        assert_eq!(status.zxid, Some(0x2_0000_0003));
        assert_eq!(status.epoch(), Some(2));
        assert_eq!(status.node_count, Some(7));
    }

    #[test]
    fn reads_not_serving_and_garbage() {
        let status = parse_srvr("This ZooKeeper instance is not currently serving requests\n");
        assert_eq!(status.role, Role::NotServing);
        assert!(!status.role.is_serving());
        assert_eq!(parse_srvr("").role, Role::NoAnswer);
        assert_eq!(parse_srvr("Mode: leader\n").role, Role::Leader);
        assert!(Role::Leader.is_serving());
    }
}
