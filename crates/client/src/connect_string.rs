//! Connect strings: `host1:port1,host2:port2[/chroot]`, as `ConnectStringParser` reads them.
//! A host without a port gets 2181; IPv6 literals are written `[::1]:2181`.

use crate::error::{Error, Result};
use crate::path::Chroot;

/// ZooKeeper's default client port.
pub const DEFAULT_PORT: u16 = 2181;

/// A parsed connect string: the servers to try, in order, and the chroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `host:port` strings, resolved at each connection attempt (a name may move).
    pub hosts: Vec<String>,
    pub chroot: Chroot,
}

impl ConnectString {
    pub fn parse(text: &str) -> Result<ConnectString> {
        let fail = |reason: &str| Error::InvalidConnectString {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (host_list, chroot) = match text.find('/') {
            Some(i) => (&text[..i], Chroot::new(&text[i..])?),
            None => (text, Chroot::default()),
        };
        let mut hosts = Vec::new();
        for entry in host_list.split(',') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            hosts.push(with_port(entry).ok_or_else(|| fail("bad host:port"))?);
        }
        if hosts.is_empty() {
            return Err(fail("no host"));
        }
        Ok(ConnectString { hosts, chroot })
    }
}

/// `entry` with the default port added when it has none.
fn with_port(entry: &str) -> Option<String> {
    if let Some(rest) = entry.strip_prefix('[') {
        // [v6]:port or [v6]
        let close = rest.find(']')?;
        let after = &rest[close + 1..];
        return match after.strip_prefix(':') {
            Some(port) => port.parse::<u16>().ok().map(|_| entry.to_string()),
            None if after.is_empty() => Some(format!("{entry}:{DEFAULT_PORT}")),
            None => None,
        };
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !host.contains(':') => {
            port.parse::<u16>().ok().map(|_| entry.to_string())
        }
        Some(_) => None,
        None => Some(format!("{entry}:{DEFAULT_PORT}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_chroot() {
        let cs = ConnectString::parse("a:1,b,[::1]:3,[::2]/app/x").expect("valid");
        assert_eq!(cs.hosts, vec!["a:1", "b:2181", "[::1]:3", "[::2]:2181"]);
        assert_eq!(cs.chroot.prefix(), Some("/app/x"));
        let plain = ConnectString::parse("127.0.0.1:2181").expect("valid");
        assert_eq!(plain.chroot.prefix(), None);
        assert!(ConnectString::parse("").is_err());
        assert!(ConnectString::parse("a:notaport").is_err());
        assert!(ConnectString::parse("a:1/bad/").is_err());
    }
}
