//! The AdminServer keys (`admin.*`), as ZooKeeper 3.9 reads them (`JettyAdminServer`).

use std::net::{IpAddr, Ipv4Addr};

use super::values;

pub const DEFAULT_ADMIN_PORT: u16 = 8080;
pub const DEFAULT_COMMAND_URL: &str = "/commands";

/// Where the AdminServer listens, if it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminSettings {
    /// `admin.enableServer`; meerkat's default is false (ZooKeeper 3.10's; 3.9's is true).
    pub enabled: bool,
    /// `admin.serverAddress` (default 0.0.0.0).
    pub address: IpAddr,
    /// `admin.serverPort` (default 8080).
    pub port: u16,
    /// `admin.commandURL` (default /commands).
    pub command_url: String,
    /// `admin.portUnification`: HTTPS and plain HTTP on the one port, told apart by the first
    /// byte, as Jetty's `UnifiedConnectionFactory` does.
    pub port_unification: bool,
    /// `admin.forceHttps`: HTTPS only.
    pub force_https: bool,
    /// `admin.needClientAuth`: HTTPS clients must present a certificate the quorum trust store
    /// accepts.
    pub need_client_auth: bool,
}

impl AdminSettings {
    /// Whether the AdminServer speaks HTTPS (with the `ssl.quorum.*` stores, as ZooKeeper's
    /// `JettyAdminServer` reads them through `QuorumX509Util`).
    pub fn serves_https(&self) -> bool {
        self.port_unification || self.force_https
    }
}

impl Default for AdminSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: DEFAULT_ADMIN_PORT,
            command_url: DEFAULT_COMMAND_URL.to_string(),
            port_unification: false,
            force_https: false,
            need_client_auth: false,
        }
    }
}

/// `None` when `key` is not an admin key, else whether it was read (`false`: accepted without
/// effect, a warning follows).
pub(super) fn read(
    settings: &mut AdminSettings,
    key: &str,
    value: &str,
) -> Result<Option<bool>, String> {
    let name = key.strip_prefix("zookeeper.").unwrap_or(key);
    let Some(name) = name.strip_prefix("admin.") else {
        return Ok(None);
    };
    match name {
        "enableServer" => settings.enabled = values::java_bool(value)?,
        "serverAddress" => settings.address = values::ip_address(value)?,
        "serverPort" => settings.port = values::port(value)?,
        "commandURL" => {
            if !value.starts_with('/') {
                return Err("a URL path starting with /".into());
            }
            settings.command_url = value.to_string();
        }
        // Jetty's idle timeout: hyper's connections end when the client closes them.
        "idleTimeout" => {}
        "portUnification" => settings.port_unification = values::java_bool(value)?,
        "forceHttps" => settings.force_https = values::java_bool(value)?,
        "needClientAuth" => settings.need_client_auth = values::java_bool(value)?,
        // The snapshot and restore commands: not offered.
        "snapshot.enabled" | "restore.enabled" => return Ok(Some(!values::java_bool(value)?)),
        _ => return Ok(Some(false)),
    }
    Ok(Some(true))
}
