//! Client settings.

use std::time::Duration;

/// How a [`crate::Client`] connects. The defaults match ZooKeeper's Java client where it has one.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The session timeout to ask for; the server clamps it to [2, 20] ticks.
    pub session_timeout: Duration,
    /// How long [`crate::Client::connect`] waits for the first session before failing with
    /// ConnectionLoss. The client itself keeps trying in the background only while connected
    /// once; a first connection that never happens is reported here.
    pub connect_timeout: Duration,
    /// Credentials sent before any request, and again on every reconnection
    /// (`(scheme, auth)`, e.g. `("digest", b"user:password")`).
    pub auth: Vec<(String, Vec<u8>)>,
    /// TLS to every server ([`ClientConfig::with_tls`]); plaintext when `None`.
    pub tls: Option<crate::tls::TlsClient>,
    /// Accept a read-only server (ZooKeeper's `canBeReadOnly`): a server cut off from its
    /// quorum in `readonlymode.enabled` then serves reads, writes fail with NotReadOnly, the
    /// session state is [`crate::SessionState::ConnectedReadOnly`], and the client looks for
    /// a read-write server in the background.
    pub can_be_read_only: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            session_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(30),
            auth: Vec::new(),
            tls: None,
            can_be_read_only: false,
        }
    }
}

impl ClientConfig {
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Connects over TLS (ZooKeeper's `zookeeper.client.secure=true`), loading the stores now.
    ///
    /// # Errors
    ///
    /// A store cannot be read or does not make a TLS identity.
    pub fn with_tls(mut self, tls: &crate::tls::TlsConfig) -> Result<Self, crate::tls::TlsError> {
        self.tls = Some(tls.client()?);
        Ok(self)
    }

    pub fn with_can_be_read_only(mut self, can_be_read_only: bool) -> Self {
        self.can_be_read_only = can_be_read_only;
        self
    }

    pub fn with_auth(mut self, scheme: &str, auth: &[u8]) -> Self {
        self.auth.push((scheme.to_string(), auth.to_vec()));
        self
    }
}
