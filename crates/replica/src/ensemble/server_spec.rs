//! One member of a dynamic configuration, as `/zookeeper/config` and the reconfig request
//! spell it: `host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]`,
//! read as ZooKeeper 3.9's `QuorumServer(long, String)` reads it and written back as its
//! `toString` does (the role always named, a client part without a host as `0.0.0.0`, IPv6
//! hosts in brackets). Host names are kept as given, never resolved here.

use std::collections::BTreeMap;
use std::fmt;
use zab::{Sid, Zxid};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub host: String,
    pub quorum_port: u16,
    pub election_port: u16,
    pub observer: bool,
    /// `(host, port)` of the client part, if the member has one.
    pub client: Option<(String, u16)>,
}

/// Why a member's text is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

impl ServerSpec {
    pub fn parse(text: &str) -> Result<ServerSpec, SpecError> {
        let bad = |why: &str| SpecError(format!("{why} in {:?}", cut(text)));
        let mut parts = text.trim().split(';').filter(|p| !p.is_empty());
        let server = parts.next().ok_or_else(|| bad("no address"))?;
        let client = parts.next();
        if parts.next().is_some() {
            return Err(bad("more than one ';'"));
        }
        let (host, rest) = split_host(server).ok_or_else(|| bad("bad host"))?;
        let fields: Vec<&str> = rest.split(':').collect();
        let (quorum, election, role) = match fields.as_slice() {
            [q, e] => (*q, *e, None),
            [q, e, r] => (*q, *e, Some(*r)),
            _ => return Err(bad("expected host:quorumPort:electionPort[:role]")),
        };
        let observer = match role.map(str::to_ascii_lowercase).as_deref() {
            None | Some("participant") => false,
            Some("observer") => true,
            Some(_) => return Err(bad("the role must be participant or observer")),
        };
        let client = match client {
            None => None,
            Some(c) => match c.rsplit_once(':') {
                Some((h, p)) if !h.is_empty() => Some((
                    unbracket(h).to_string(),
                    port(p).ok_or_else(|| bad("bad client port"))?,
                )),
                _ => Some((
                    "0.0.0.0".to_string(),
                    port(c).ok_or_else(|| bad("bad client port"))?,
                )),
            },
        };
        Ok(ServerSpec {
            host: host.to_string(),
            quorum_port: port(quorum).ok_or_else(|| bad("bad quorum port"))?,
            election_port: port(election).ok_or_else(|| bad("bad election port"))?,
            observer,
            client,
        })
    }

    /// True when this and `other` would listen on one address (ZooKeeper's
    /// `checkAddressDuplicate`).
    pub fn clashes_with(&self, other: &ServerSpec) -> bool {
        let mine = [self.quorum_port, self.election_port];
        self.host == other.host
            && [other.quorum_port, other.election_port]
                .iter()
                .any(|p| mine.contains(p))
    }
}

impl fmt::Display for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = if self.observer {
            "observer"
        } else {
            "participant"
        };
        write!(
            f,
            "{}:{}:{}:{role}",
            bracket(&self.host),
            self.quorum_port,
            self.election_port
        )?;
        if let Some((host, port)) = &self.client {
            write!(f, ";{}:{port}", bracket(host))?;
        }
        Ok(())
    }
}

/// A whole configuration with addresses: what `/zookeeper/config` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigText {
    pub members: BTreeMap<Sid, ServerSpec>,
    pub version: Zxid,
}

impl ConfigText {
    /// Reads `server.N=spec` lines (newline- or comma-separated) and an optional `version=`.
    pub fn parse(text: &str) -> Result<ConfigText, SpecError> {
        let mut config = ConfigText::default();
        for line in text
            .split(['\n', ','])
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| SpecError(format!("no '=' in {:?}", cut(line))))?;
            let key = key.trim();
            if key == "version" {
                let v = u64::from_str_radix(value.trim(), 16)
                    .map_err(|_| SpecError(format!("bad version {:?}", cut(value))))?;
                config.version = Zxid::from_i64(v as i64);
                continue;
            }
            let sid = parse_server_key(key)?;
            if config
                .members
                .insert(sid, ServerSpec::parse(value)?)
                .is_some()
            {
                return Err(SpecError(format!("server.{sid} is listed twice")));
            }
        }
        Ok(config)
    }

    /// The text with a `version=` line, as ZooKeeper's `QuorumMaj.toString` writes it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (sid, spec) in &self.members {
            out.push_str(&format!("server.{sid}={spec}\n"));
        }
        out.push_str(&format!("version={:x}", self.version.as_i64() as u64));
        out
    }

    /// Ids and roles only, as Zab keeps them.
    pub fn membership(&self) -> zab::Membership {
        zab::Membership {
            version: self.version,
            voters: self.voters().collect(),
            observers: self
                .members
                .iter()
                .filter(|(_, s)| s.observer)
                .map(|(sid, _)| *sid)
                .collect(),
        }
    }

    pub fn voters(&self) -> impl Iterator<Item = Sid> + '_ {
        self.members
            .iter()
            .filter(|(_, s)| !s.observer)
            .map(|(sid, _)| *sid)
    }
}

/// `server.N` → N.
pub fn parse_server_key(key: &str) -> Result<Sid, SpecError> {
    key.trim()
        .strip_prefix("server.")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| SpecError(format!("{:?} is not server.N", cut(key))))
}

fn split_host(server: &str) -> Option<(&str, &str)> {
    if let Some(rest) = server.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return Some((host, after.strip_prefix(':')?));
    }
    let (host, rest) = server.split_once(':')?;
    (!host.is_empty()).then_some((host, rest))
}

fn unbracket(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

fn port(text: &str) -> Option<u16> {
    text.trim().parse().ok().filter(|&p| p != 0)
}

fn cut(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_zookeepers_forms() {
        let s = ServerSpec::parse("0.0.0.0:31001:31002:observer;0.0.0.0:31003").expect("parses");
        assert_eq!(s.to_string(), "0.0.0.0:31001:31002:observer;0.0.0.0:31003");
        let s = ServerSpec::parse("localhost:2888:3888").expect("parses");
        assert_eq!(s.to_string(), "localhost:2888:3888:participant");
        let s = ServerSpec::parse("[::1]:2888:3888:PARTICIPANT;2181").expect("parses");
        assert_eq!(s.to_string(), "[::1]:2888:3888:participant;0.0.0.0:2181");
        for bad in [
            "some thing",
            "h:1",
            "h:1:2:leader",
            "h:0:2",
            "h:1:2;x:y",
            ":1:2",
        ] {
            assert!(ServerSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_config_text_round_trips_with_its_version() {
        let text = "server.1=127.0.0.1:22881:23881:participant\n\
                    server.3=127.0.0.1:22883:23883:observer\nversion=100000002";
        let c = ConfigText::parse(text).expect("parses");
        assert_eq!(c.version, Zxid::new(1, 2));
        assert_eq!(c.render(), text);
        assert_eq!(c.voters().collect::<Vec<_>>(), [1]);
        let commas = ConfigText::parse("server.1=h:1:2,server.2=h:3:4").expect("parses");
        assert_eq!(commas.members.len(), 2);
        assert!(ConfigText::parse("server.1=h:1:2\nserver.1=h:3:4").is_err());
    }
}
