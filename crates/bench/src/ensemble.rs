//! A local ensemble on loopback: its ports, each member's `zoo.cfg` and `myid`, the
//! four-letter words that say who serves and who leads, and the record `meerkat ensemble`
//! keeps of the processes it started.
//!
//! Shared by `meerkat bench` (which starts meerkat servers or Apache ZooKeeper quorum peers
//! with the same files) and `meerkat ensemble` (which starts detached meerkat servers). Both
//! write the same keys, so an ensemble the bench measures is the one an operator can start by
//! hand.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Most servers a local ensemble has (ids are 1..=SERVERS_MAX, well inside ZooKeeper's 1..255).
pub const SERVERS_MAX: usize = 15;

/// Distance from the first client port to the first quorum port: 2181 → 2888, as ZooKeeper's
/// documentation numbers them.
pub const QUORUM_PORT_OFFSET: u16 = 2888 - 2181;

/// Distance from the first client port to the first election port: 2181 → 3888.
pub const ELECTION_PORT_OFFSET: u16 = 3888 - 2181;

/// The longest four-letter answer read (mntr is about 2 KB).
const FOUR_LETTER_REPLY_MAX: u64 = 1 << 20;

/// How long a four-letter word may take, connect included.
pub const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(2);

/// One server of the ensemble and its three ports on 127.0.0.1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The N of `server.N`, which the member's `myid` holds.
    pub id: u64,
    pub client_port: u16,
    pub quorum_port: u16,
    pub election_port: u16,
    /// Receives commits but does not vote.
    pub observer: bool,
}

impl Member {
    pub fn client_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// The ports with what they are for, for messages.
    fn ports(&self) -> [(u16, &'static str); 3] {
        [
            (self.client_port, "client"),
            (self.quorum_port, "quorum"),
            (self.election_port, "election"),
        ]
    }
}

/// The servers of a local ensemble, in id order (ids 1..=n).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub members: Vec<Member>,
}

impl Topology {
    /// `servers` members, the last `observers` of them observers, with ports counted from
    /// `base`: clients base.., quorum base+707.., election base+1707.. (2181, 2888 and 3888
    /// for the default base, as in ZooKeeper's documentation).
    pub fn from_base(servers: usize, observers: usize, base: u16) -> anyhow::Result<Topology> {
        check_sizes(servers, observers)?;
        let last = u32::from(base) + u32::from(ELECTION_PORT_OFFSET) + servers as u32 - 1;
        anyhow::ensure!(
            base >= 1024 && last <= u32::from(u16::MAX),
            "--base-port {base}: the ports run from {base} to {last}; pick a base from 1024 to {}",
            u32::from(u16::MAX) - u32::from(ELECTION_PORT_OFFSET) - servers as u32 + 1
        );
        let members = (0..servers)
            .map(|i| {
                let i16 = i as u16;
                Member {
                    id: i as u64 + 1,
                    client_port: base + i16,
                    quorum_port: base + QUORUM_PORT_OFFSET + i16,
                    election_port: base + ELECTION_PORT_OFFSET + i16,
                    observer: i >= servers - observers,
                }
            })
            .collect();
        Ok(Topology { members })
    }

    /// `servers` members on ports that are free now, outside the kernel's ephemeral range so
    /// that the members' own connections to each other cannot take them before they bind (for
    /// the bench, which needs no stable numbers).
    pub fn on_free_ports(servers: usize) -> anyhow::Result<Topology> {
        check_sizes(servers, 0)?;
        let (ports, _hold) = ports::free_ports(servers * 3)?;
        let members = ports
            .chunks(3)
            .enumerate()
            .map(|(i, p)| Member {
                id: i as u64 + 1,
                client_port: p[0],
                quorum_port: p[1],
                election_port: p[2],
                observer: false,
            })
            .collect();
        Ok(Topology { members })
    }

    /// Two or more members replicate; one is a standalone server without `server.N` lines.
    pub fn is_ensemble(&self) -> bool {
        self.members.len() >= 2
    }

    pub fn client_addrs(&self) -> Vec<SocketAddr> {
        self.members.iter().map(Member::client_addr).collect()
    }

    /// `127.0.0.1:2181,127.0.0.1:2182,…`, for clients.
    pub fn connect_string(&self) -> String {
        let hosts: Vec<String> = self
            .client_addrs()
            .iter()
            .map(ToString::to_string)
            .collect();
        hosts.join(",")
    }

    /// Every port something else listens on now, as `2181 (client, server 1)`.
    pub fn ports_in_use(&self) -> Vec<String> {
        let mut busy = Vec::new();
        for m in &self.members {
            for (port, what) in m.ports() {
                if TcpListener::bind(("127.0.0.1", port)).is_err() {
                    busy.push(format!("{port} ({what}, server {})", m.id));
                }
            }
        }
        busy
    }

    /// `member`'s zoo.cfg: the keys both meerkat and ZooKeeper 3.9 read, then `extra`, then
    /// the `server.N` lines (none for a standalone server).
    pub fn zoo_cfg(&self, member: &Member, data_dir: &Path, extra: &[(String, String)]) -> String {
        let mut cfg = format!(
            "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
             clientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\n",
            data_dir.display(),
            member.client_port
        );
        for (k, v) in extra {
            cfg.push_str(&format!("{k}={v}\n"));
        }
        if self.is_ensemble() {
            for m in &self.members {
                let role = if m.observer { ":observer" } else { "" };
                cfg.push_str(&format!(
                    "server.{}=127.0.0.1:{}:{}{role};127.0.0.1:{}\n",
                    m.id, m.quorum_port, m.election_port, m.client_port
                ));
            }
        }
        cfg
    }

    /// Writes `member`'s zoo.cfg into `config_dir` and its `myid` into `data_dir` (creating
    /// both; data already there is kept) and returns the config's path.
    pub fn write_member(
        &self,
        member: &Member,
        config_dir: &Path,
        data_dir: &Path,
        extra: &[(String, String)],
    ) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(config_dir)?;
        std::fs::create_dir_all(data_dir)?;
        let data_dir = std::path::absolute(data_dir)?;
        if self.is_ensemble() {
            std::fs::write(data_dir.join("myid"), format!("{}\n", member.id))?;
        }
        let path = config_dir.join("zoo.cfg");
        std::fs::write(&path, self.zoo_cfg(member, &data_dir, extra))?;
        Ok(std::path::absolute(path)?)
    }
}

fn check_sizes(servers: usize, observers: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        (1..=SERVERS_MAX).contains(&servers),
        "{servers} servers: a local ensemble has 1 to {SERVERS_MAX}"
    );
    anyhow::ensure!(
        observers < servers,
        "{observers} observers of {servers} servers: at least one server must vote"
    );
    anyhow::ensure!(
        observers == 0 || servers >= 2,
        "a standalone server cannot be an observer"
    );
    Ok(())
}

/// Sends a four-letter word and returns the whole answer (blocking, bounded by
/// [`FOUR_LETTER_TIMEOUT`] per step).
pub fn four_letter(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, FOUR_LETTER_TIMEOUT)?;
    stream.set_read_timeout(Some(FOUR_LETTER_TIMEOUT))?;
    stream.set_write_timeout(Some(FOUR_LETTER_TIMEOUT))?;
    stream.write_all(word.as_bytes())?;
    let mut text = String::new();
    stream
        .take(FOUR_LETTER_REPLY_MAX)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// [`four_letter`] off the async runtime's threads.
pub async fn four_letter_async(addr: SocketAddr, word: &'static str) -> std::io::Result<String> {
    tokio::task::spawn_blocking(move || four_letter(addr, word))
        .await
        .map_err(std::io::Error::other)?
}

/// What `srvr` says about a serving server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Srvr {
    /// leader, follower, observer or standalone.
    pub mode: String,
    pub zxid: i64,
    pub connections: u64,
    pub node_count: u64,
}

impl Srvr {
    /// Parses `srvr`'s answer; `None` when the server is not serving (an election runs) or
    /// the answer has no `Mode:` line.
    pub fn parse(text: &str) -> Option<Srvr> {
        let fields = colon_fields(text);
        let number = |key: &str| fields.get(key).and_then(|v| v.parse().ok());
        let zxid = fields
            .get("Zxid")
            .and_then(|v| i64::from_str_radix(v.trim_start_matches("0x"), 16).ok());
        Some(Srvr {
            mode: fields.get("Mode")?.clone(),
            zxid: zxid.unwrap_or(-1),
            connections: number("Connections").unwrap_or(0),
            node_count: number("Node count").unwrap_or(0),
        })
    }

    pub fn is_leader(&self) -> bool {
        self.mode == "leader" || self.mode == "standalone"
    }
}

/// `srvr` of the server at `addr`, if it answers and serves.
pub fn srvr(addr: SocketAddr) -> Option<Srvr> {
    four_letter(addr, "srvr")
        .ok()
        .as_deref()
        .and_then(Srvr::parse)
}

/// [`srvr`] off the async runtime's threads.
pub async fn srvr_async(addr: SocketAddr) -> Option<Srvr> {
    four_letter_async(addr, "srvr")
        .await
        .ok()
        .as_deref()
        .and_then(Srvr::parse)
}

fn colon_fields(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// `mntr`'s `key<TAB>value` lines.
pub fn parse_mntr(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `mntr` of the server at `addr` (empty when it does not answer or does not serve).
pub fn mntr(addr: SocketAddr) -> BTreeMap<String, String> {
    four_letter(addr, "mntr")
        .map(|t| parse_mntr(&t))
        .unwrap_or_default()
}

/// What `meerkat ensemble up` leaves in `DIR/ensemble.json` for `status` and `down`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The executable the servers run (`down` checks a pid still runs it before a signal).
    pub program: PathBuf,
    pub servers: Vec<RecordedServer>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedServer {
    #[serde(flatten)]
    pub member: Member,
    pub pid: u32,
    /// The zoo.cfg the process was started with: its command line ends with it.
    pub config: PathBuf,
    pub log: PathBuf,
}

impl Record {
    pub fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    pub fn from_json(text: &str) -> anyhow::Result<Record> {
        Ok(serde_json::from_str(text)?)
    }

    pub fn topology(&self) -> Topology {
        Topology {
            members: self.servers.iter().map(|s| s.member.clone()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_base_numbers_ports_as_zookeepers_docs() {
        let t = Topology::from_base(3, 1, 2181).expect("topology");
        let m = &t.members[2];
        assert_eq!((m.id, m.client_port, m.quorum_port), (3, 2183, 2890));
        assert_eq!(m.election_port, 3890);
        assert!(m.observer);
        assert!(!t.members[1].observer);
        assert_eq!(
            t.connect_string(),
            "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
        );
    }

    #[test]
    fn bad_sizes_and_bases_are_refused() {
        assert!(Topology::from_base(0, 0, 2181).is_err());
        assert!(Topology::from_base(3, 3, 2181).is_err());
        assert!(Topology::from_base(1, 1, 2181).is_err());
        assert!(Topology::from_base(3, 0, 65000).is_err());
        assert!(Topology::from_base(SERVERS_MAX + 1, 0, 2181).is_err());
    }

    #[test]
    fn server_lines_carry_roles_and_client_addresses() {
        let t = Topology::from_base(2, 1, 2181).expect("topology");
        let cfg = t.zoo_cfg(&t.members[0], Path::new("/d"), &[]);
        assert!(cfg.contains("server.1=127.0.0.1:2888:3888;127.0.0.1:2181\n"));
        assert!(cfg.contains("server.2=127.0.0.1:2889:3889:observer;127.0.0.1:2182\n"));
        assert!(cfg.contains("dataDir=/d\n"));
        let standalone = Topology::from_base(1, 0, 2181).expect("topology");
        let cfg = standalone.zoo_cfg(&standalone.members[0], Path::new("/d"), &[]);
        assert!(!cfg.contains("server."));
    }

    #[test]
    fn srvr_parses_serving_and_not_serving_answers() {
        let text = "Zookeeper version: 3.9.3\nLatency min/avg/max: 0/0.0/0\nReceived: 3\n\
                    Sent: 2\nConnections: 1\nOutstanding: 0\nZxid: 0x100000002\n\
                    Mode: follower\nNode count: 5\n";
        let s = Srvr::parse(text).expect("serving");
        assert_eq!(s.mode, "follower");
        assert_eq!(s.zxid, 0x1_0000_0002);
        assert_eq!((s.connections, s.node_count), (1, 5));
        assert!(!s.is_leader());
        let idle = "This ZooKeeper instance is not currently serving requests\n";
        assert_eq!(Srvr::parse(idle), None);
    }

    #[test]
    fn record_round_trips_through_json() {
        let t = Topology::from_base(2, 0, 2181).expect("topology");
        let record = Record {
            program: "/bin/meerkat".into(),
            servers: t
                .members
                .iter()
                .map(|m| RecordedServer {
                    member: m.clone(),
                    pid: 42,
                    config: "/x/zoo.cfg".into(),
                    log: "/x/server.log".into(),
                })
                .collect(),
        };
        let back = Record::from_json(&record.to_json().expect("json")).expect("parse");
        assert_eq!(back.topology(), t);
        assert_eq!(back.servers[1].pid, 42);
    }
}
