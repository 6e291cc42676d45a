//! `server.N=host:quorumPort:electionPort[:participant|observer][;[host:]clientPort]`.
//!
//! Parsed as ZooKeeper 3.9's `QuorumPeer.QuorumServer(long, String)` does: the value splits on
//! `;` (Java `split`, so trailing empty parts vanish) into a server part and an optional client
//! part; each splits on `:` after an optional `[ipv6]` host (`ConfigUtils.getHostAndPort`). The
//! role is compared case-insensitively; a client part without a host means `0.0.0.0`.
//! Differences, all stricter or tidier: parts are trimmed, port 0 and empty hosts are refused,
//! host names are not resolved, and `|`-separated multiple addresses (which ZooKeeper only takes
//! with `multiAddress.enabled=true`) are refused.

use std::fmt;

/// The shape every error message repeats, so the fix is obvious.
const FORMAT: &str =
    "expected host:quorumPort:electionPort[:participant|observer][;[host:]clientPort]";

/// Whether a server votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerRole {
    /// Votes in elections and counts toward quorums (the default).
    Participant,
    /// Receives commits but does not vote.
    Observer,
}

/// A host (name or IP literal, without brackets) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for HostPort {
    /// `host:port`, bracketing IPv6 literals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// One ensemble member from a `server.N` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLine {
    /// N, which the member's `myid` file holds.
    pub id: u64,
    /// Host for both the quorum and the election port.
    pub host: String,
    /// Followers connect to the leader here.
    pub quorum_port: u16,
    /// Leader election traffic.
    pub election_port: u16,
    pub role: ServerRole,
    /// The `;[host:]clientPort` part; the host is `0.0.0.0` when only a port is given.
    pub client: Option<HostPort>,
    /// Line of the configuration file the entry came from.
    pub line: usize,
}

impl ServerLine {
    /// Parses the value of `server.<id>` found on `line`.
    ///
    /// # Errors
    ///
    /// The reason the value is malformed, as text for a [`super::ConfigError`].
    pub fn parse(id: u64, value: &str, line: usize) -> Result<Self, String> {
        let parts = java_split(value.trim(), ';');
        let (server_part, client_part) = match parts.as_slice() {
            [server] => (*server, None),
            [server, client] => (*server, Some(*client)),
            _ => return Err(FORMAT.to_string()),
        };
        if server_part.contains('|') {
            return Err("multiple addresses separated by '|' are not supported".to_string());
        }
        let fields = split_host_and_ports(server_part)?;
        let (host, quorum, election, role) = match fields.as_slice() {
            [host, quorum, election] => (*host, *quorum, *election, None),
            [host, quorum, election, role] => (*host, *quorum, *election, Some(*role)),
            _ => return Err(FORMAT.to_string()),
        };
        let server = ServerLine {
            id,
            host: parse_host(host)?,
            quorum_port: parse_port(quorum, "quorum port")?,
            election_port: parse_port(election, "election port")?,
            role: role.map_or(Ok(ServerRole::Participant), parse_role)?,
            client: client_part.map(parse_client).transpose()?,
            line,
        };
        if server.quorum_port == server.election_port {
            return Err(format!(
                "quorum port and election port must differ (both {})",
                server.quorum_port
            ));
        }
        Ok(server)
    }

    /// Where followers reach this server's quorum port.
    pub fn quorum_address(&self) -> HostPort {
        HostPort {
            host: self.host.clone(),
            port: self.quorum_port,
        }
    }

    /// Where peers reach this server's election port.
    pub fn election_address(&self) -> HostPort {
        HostPort {
            host: self.host.clone(),
            port: self.election_port,
        }
    }
}

impl fmt::Display for ServerLine {
    /// The value as ZooKeeper writes it back (`QuorumServer.toString`), e.g.
    /// `zk1:2888:3888:participant;0.0.0.0:2181`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.quorum_address(), self.election_port)?;
        match self.role {
            ServerRole::Participant => f.write_str(":participant")?,
            ServerRole::Observer => f.write_str(":observer")?,
        }
        match &self.client {
            Some(client) => write!(f, ";{client}"),
            None => Ok(()),
        }
    }
}

/// Java's `String.split(char)`: trailing empty pieces are dropped.
fn java_split(text: &str, separator: char) -> Vec<&str> {
    let mut pieces: Vec<&str> = text.split(separator).collect();
    while pieces.last() == Some(&"") {
        pieces.pop();
    }
    pieces
}

/// `ConfigUtils.getHostAndPort`: `[v6::addr]:p1:p2...` or `host:p1:p2...`.
fn split_host_and_ports(text: &str) -> Result<Vec<&str>, String> {
    let Some(bracketed) = text.strip_prefix('[') else {
        return Ok(java_split(text, ':'));
    };
    let close = bracketed
        .find(']')
        .ok_or_else(|| format!("{text:?} starts with '[' but has no matching ']'"))?;
    let ports = bracketed[close + 1..]
        .strip_prefix(':')
        .filter(|ports| !ports.is_empty())
        .ok_or_else(|| format!("{text:?} needs ':' and a port after ']'"))?;
    let mut fields = vec![&bracketed[..close]];
    fields.extend(java_split(ports, ':'));
    Ok(fields)
}

fn parse_host(host: &str) -> Result<String, String> {
    let host = host.trim();
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("{host:?} is not a host name or address; {FORMAT}"));
    }
    Ok(host.to_string())
}

fn parse_port(text: &str, what: &str) -> Result<u16, String> {
    match text.trim().parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!(
            "{what} {:?} is not a port number between 1 and 65535",
            text.trim()
        )),
    }
}

fn parse_role(text: &str) -> Result<ServerRole, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "participant" => Ok(ServerRole::Participant),
        "observer" => Ok(ServerRole::Observer),
        _ => Err(format!(
            "unrecognised peer type {:?}: expected participant or observer",
            text.trim()
        )),
    }
}

/// `clientPort` or `host:clientPort`.
fn parse_client(text: &str) -> Result<HostPort, String> {
    let fields = split_host_and_ports(text.trim())?;
    let (host, port) = match fields.as_slice() {
        [port] => ("0.0.0.0", *port),
        [host, port] => (*host, *port),
        _ => return Err(FORMAT.to_string()),
    };
    Ok(HostPort {
        host: parse_host(host)?,
        port: parse_port(port, "client port")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: &str) -> Result<ServerLine, String> {
        ServerLine::parse(1, value, 9)
    }

    fn host_port(host: &str, port: u16) -> HostPort {
        HostPort {
            host: host.to_string(),
            port,
        }
    }

    #[test]
    fn plain_line_is_a_participant_without_client_port() {
        let server = parse("zk1.example.com:2888:3888").expect("valid");
        assert_eq!(server.id, 1);
        assert_eq!(server.host, "zk1.example.com");
        assert_eq!((server.quorum_port, server.election_port), (2888, 3888));
        assert_eq!(server.role, ServerRole::Participant);
        assert_eq!(server.client, None);
        assert_eq!(server.line, 9);
        assert_eq!(server.to_string(), "zk1.example.com:2888:3888:participant");
    }

    #[test]
    fn roles_are_case_insensitive() {
        assert_eq!(
            parse("h:1:2:observer").expect("valid").role,
            ServerRole::Observer
        );
        assert_eq!(
            parse("h:1:2:OBSERVER").expect("valid").role,
            ServerRole::Observer
        );
        assert_eq!(
            parse("h:1:2:Participant").expect("valid").role,
            ServerRole::Participant
        );
        let error = parse("h:1:2:leader").expect_err("bad role");
        assert!(error.contains("unrecognised peer type"), "{error}");
    }

    #[test]
    fn client_port_without_host_means_all_interfaces() {
        let server = parse("h:2888:3888;2181").expect("valid");
        assert_eq!(server.client, Some(host_port("0.0.0.0", 2181)));
        assert_eq!(server.to_string(), "h:2888:3888:participant;0.0.0.0:2181");
    }

    #[test]
    fn client_port_with_host_and_role() {
        let server = parse("h:2888:3888:observer;10.0.0.1:2181").expect("valid");
        assert_eq!(server.role, ServerRole::Observer);
        assert_eq!(server.client, Some(host_port("10.0.0.1", 2181)));
    }

    #[test]
    fn ipv6_literals_in_brackets() {
        let server = parse("[fe80::1]:2888:3888;[::1]:2181").expect("valid");
        assert_eq!(server.host, "fe80::1");
        assert_eq!(server.client, Some(host_port("::1", 2181)));
        assert_eq!(
            server.to_string(),
            "[fe80::1]:2888:3888:participant;[::1]:2181"
        );
        assert!(parse("[fe80::1:2888:3888").is_err());
        assert!(parse("[fe80::1]2888:3888").is_err());
        assert!(parse("[fe80::1]:").is_err());
    }

    #[test]
    fn trailing_separators_are_ignored_like_java_split() {
        assert_eq!(parse("h:1:2;").expect("valid").client, None);
        assert_eq!(
            parse("h:1:2:").expect("valid").role,
            ServerRole::Participant
        );
    }

    #[test]
    fn parts_are_trimmed() {
        let server = parse(" h : 2888 : 3888 : observer ; 2181 ").expect("valid");
        assert_eq!(server.host, "h");
        assert_eq!(server.role, ServerRole::Observer);
        assert_eq!(server.client, Some(host_port("0.0.0.0", 2181)));
    }

    #[test]
    fn malformed_lines_are_refused() {
        for value in [
            "",
            ";",
            "h",
            "h:2888",
            "h:1:2:observer:x",
            "h:1:2;3;4",
            ":2888:3888",
            "h:x:3888",
            "h:2888:y",
            "h:0:3888",
            "h:2888:65536",
            "h:-1:3888",
            "h:2888:3888;a:b:c",
            "h:2888:3888;h:0",
            "h:2888:3888;:2181",
            "h:2888:3888;x",
            "a b:1:2",
        ] {
            let reason = parse(value).expect_err(value);
            assert!(!reason.is_empty(), "{value:?}");
        }
    }

    #[test]
    fn quorum_and_election_ports_must_differ() {
        let error = parse("h:2888:2888").expect_err("same ports");
        assert!(error.contains("must differ"), "{error}");
    }

    #[test]
    fn multiple_addresses_are_refused() {
        let error = parse("a:1:2|b:3:4").expect_err("multi address");
        assert!(error.contains('|'), "{error}");
    }
}
