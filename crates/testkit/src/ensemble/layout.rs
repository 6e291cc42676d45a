//! Where each member of an ensemble lives: ports, directories, `zoo.cfg`, `myid`, and the
//! proxies on its links to the other members.

use crate::proxy::{FirstBytesRewriter, Proxy, Rewrite};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ports one member listens on (all on 127.0.0.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub client: u16,
    pub quorum: u16,
    pub election: u16,
}

/// The proxies server `from` uses to reach server `to`: one for `to`'s quorum port, one for its
/// election port.
pub struct Link {
    pub quorum: Proxy,
    pub election: Proxy,
}

impl Link {
    pub fn proxies(&self) -> [&Proxy; 2] {
        [&self.quorum, &self.election]
    }
}

/// Directed links, keyed by (from, to).
pub type Links = BTreeMap<(u32, u32), Link>;

/// Free loopback ports outside the kernel's ephemeral range, held until dropped: drop the hold
/// just before the servers start (see the `ports` crate for why not port 0).
pub use ports::{free_ports, PortHold};

/// Member ports for servers 1..=count, from 3 × count free ports.
pub fn member_ports(count: usize) -> std::io::Result<(Vec<Ports>, PortHold)> {
    let (ports, hold) = free_ports(3 * count)?;
    let members = ports
        .chunks_exact(3)
        .map(|p| Ports {
            client: p[0],
            quorum: p[1],
            election: p[2],
        })
        .collect();
    Ok((members, hold))
}

/// A proxy per directed pair of members, for both peer ports of the target. Election
/// handshakes from `from` are rewritten to advertise the proxy `to` → `from`
/// ([`zookeeper_election_handshake`]), so that connections made back go through a proxy too.
pub async fn start_links(ports: &[Ports]) -> std::io::Result<Links> {
    let mut links = Links::new();
    for from in 1..=ports.len() as u32 {
        for to in 1..=ports.len() as u32 {
            if from == to {
                continue;
            }
            let target = ports[to as usize - 1];
            let link = Link {
                quorum: Proxy::start(loopback(target.quorum)).await?,
                election: Proxy::start(loopback(target.election)).await?,
            };
            links.insert((from, to), link);
        }
    }
    for ((from, to), link) in &links {
        if let Some(back) = links.get(&(*to, *from)) {
            let advertised = back.election.address();
            link.election
                .set_first_bytes_rewriter(zookeeper_election_handshake(advertised));
        }
    }
    Ok(links)
}

/// The protocol versions of ZooKeeper's election handshake (`QuorumCnxManager`: V1, V2).
const ZOOKEEPER_ELECTION_VERSIONS: [i64; 2] = [-65536, -65535];

/// ZooKeeper's election connections begin with (protocol version: i64, sid: i64, length: i32,
/// "host:port" of the sender's election address). A member receiving a connection from a
/// lower sid closes it and connects back to that advertised address, which would bypass the
/// proxies; this rewriter advertises `advertised` (the proxy back to the sender) instead.
/// Anything else is forwarded unchanged, so other handshakes (meerkat's) are untouched.
pub fn zookeeper_election_handshake(advertised: SocketAddr) -> FirstBytesRewriter {
    Arc::new(move |seen: &[u8]| {
        const HEADER: usize = 8 + 8 + 4;
        let Some(version) = seen.get(..8) else {
            return Rewrite::NeedMore;
        };
        let version = i64::from_be_bytes(version.try_into().unwrap_or_default());
        if !ZOOKEEPER_ELECTION_VERSIONS.contains(&version) {
            return Rewrite::Keep;
        }
        let Some(length) = seen.get(16..HEADER) else {
            return Rewrite::NeedMore;
        };
        let length = i32::from_be_bytes(length.try_into().unwrap_or_default());
        let Ok(length) = usize::try_from(length) else {
            return Rewrite::Keep;
        };
        if seen.len() < HEADER + length {
            return Rewrite::NeedMore;
        }
        let address = advertised.to_string().into_bytes();
        let mut with = seen[..16].to_vec();
        with.extend_from_slice(&(address.len() as i32).to_be_bytes());
        with.extend_from_slice(&address);
        Rewrite::Replace {
            consumed: HEADER + length,
            with,
        }
    })
}

pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The settings every member shares.
pub struct Settings<'a> {
    pub tick_ms: u64,
    pub init_limit: u32,
    pub sync_limit: u32,
    pub extra_lines: &'a [String],
}

/// Server `sid`'s `zoo.cfg`. Its own `server.N` line names its real ports; with links, the
/// lines of the others name the proxies `sid` reaches them through.
pub fn config_text(
    sid: u32,
    data_dir: &Path,
    ports: &[Ports],
    links: &Links,
    settings: &Settings<'_>,
) -> String {
    let own = ports[sid as usize - 1];
    let mut text = format!(
        "tickTime={}\ninitLimit={}\nsyncLimit={}\ndataDir={}\nclientPort={}\n\
         clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n",
        settings.tick_ms,
        settings.init_limit,
        settings.sync_limit,
        data_dir.display(),
        own.client,
    );
    for line in settings.extra_lines {
        text.push_str(line);
        text.push('\n');
    }
    if ports.len() < 2 {
        return text;
    }
    for (index, member) in ports.iter().enumerate() {
        let other = index as u32 + 1;
        let (quorum, election) = match links.get(&(sid, other)) {
            Some(link) => (link.quorum.address().port(), link.election.address().port()),
            None => (member.quorum, member.election),
        };
        text.push_str(&format!("server.{other}=127.0.0.1:{quorum}:{election}\n"));
    }
    text
}

/// Creates `<root>/server-<sid>/` with `data/myid` and `zoo.cfg`; returns the cfg's path.
pub fn write_member(
    root: &Path,
    sid: u32,
    config: impl Fn(&Path) -> String,
) -> std::io::Result<PathBuf> {
    let dir = member_dir(root, sid);
    let data = dir.join("data");
    std::fs::create_dir_all(&data)?;
    std::fs::write(data.join("myid"), format!("{sid}\n"))?;
    let cfg = dir.join("zoo.cfg");
    std::fs::write(&cfg, config(&data))?;
    Ok(cfg)
}

pub fn member_dir(root: &Path, sid: u32) -> PathBuf {
    root.join(format!("server-{sid}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ports_are_distinct() {
        let (ports, _hold) = member_ports(5).unwrap();
        let mut all: Vec<u16> = ports
            .iter()
            .flat_map(|p| [p.client, p.quorum, p.election])
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 15);
    }

    #[test]
    fn rewrites_the_zookeeper_election_handshake_only() {
        let rewrite = zookeeper_election_handshake(loopback(4242));
        let mut hello = Vec::new();
        hello.extend_from_slice(&(-65536i64).to_be_bytes());
        hello.extend_from_slice(&3i64.to_be_bytes());
        let address = b"127.0.0.1:1111";
        hello.extend_from_slice(&(address.len() as i32).to_be_bytes());
        hello.extend_from_slice(address);
        assert_eq!(rewrite(&hello[..12]), Rewrite::NeedMore);
        assert_eq!(rewrite(&hello[..hello.len() - 1]), Rewrite::NeedMore);
        let Rewrite::Replace { consumed, with } = rewrite(&hello) else {
            panic!("not rewritten");
        };
        assert_eq!(consumed, hello.len());
        assert_eq!(&with[..16], &hello[..16]);
        assert_eq!(&with[16..20], &14i32.to_be_bytes());
        assert_eq!(&with[20..], b"127.0.0.1:4242");
        assert_eq!(rewrite(b"meerkat!"), Rewrite::Keep);
    }

    #[tokio::test]
    async fn configs_point_at_the_proxies_of_their_own_links() {
        let (ports, _hold) = member_ports(3).unwrap();
        let links = start_links(&ports).await.unwrap();
        assert_eq!(links.len(), 6);
        let settings = Settings {
            tick_ms: 100,
            init_limit: 10,
            sync_limit: 5,
            extra_lines: &[],
        };
        let text = config_text(2, Path::new("/d"), &ports, &links, &settings);
        let own = ports[1];
        assert!(text.contains(&format!(
            "server.2=127.0.0.1:{}:{}\n",
            own.quorum, own.election
        )));
        let to_three = &links[&(2, 3)];
        assert_eq!(to_three.quorum.target().port(), ports[2].quorum);
        assert!(text.contains(&format!(
            "server.3=127.0.0.1:{}:{}\n",
            to_three.quorum.address().port(),
            to_three.election.address().port()
        )));
        assert!(text.contains(&format!("clientPort={}\n", own.client)));
        assert!(text.contains("syncLimit=5\n") && text.contains("4lw.commands.whitelist=*\n"));
    }
}
