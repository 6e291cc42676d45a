//! SASL (op 102) and `enforce.auth.*` on the client path, as ZooKeeper's
//! `ZooKeeperServer.processSasl` and `AuthenticationHelper` decide them.
//!
//! The host runs the SASL exchange itself and hands the replica only its outcome
//! ([`SaslOutcome`]): the exchange needs a fresh random nonce per connection and the users'
//! passwords, and neither belongs in the replica, which draws no randomness (STYLE.md rule 4),
//! is replayed by the simulator from a seed, and holds nothing secret. What the replica decides
//! is what a client can observe: the reply, the identities the connection gains, whether it is
//! closed, and which requests `enforce.auth` refuses.
//!
//! Like ZooKeeper, which answers SASL in `processPacket` without the request pipeline, a SASL
//! request is answered at once. Clients send no other request while their SASL exchange runs
//! (the Java client holds them back; kazoo authenticates before returning from `start`).

use crate::replies::{reply_frame, sasl_frame};
use crate::store::Store;
use crate::watch_manager::ConnId;
use crate::Replica;
use proto::op_code::OpCode;
use proto::{ErrorCode, Id};

/// What the host's SASL exchange came to for one client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslOutcome {
    /// The exchange goes on: send `token` (a challenge).
    Continue { token: Vec<u8> },
    /// The client proved who it is: send `token` (the server's last message) and add `ids` to
    /// the connection (`sasl:NAME`, and `super` for a `superUser`).
    Authenticated { token: Vec<u8>, ids: Vec<Id> },
    /// The exchange failed (`reason` is for the log).
    Failed { reason: String },
    /// The server has no SASL login (no JAAS `Server` section): ZooKeeper then answers OK with
    /// no token.
    NotConfigured,
}

impl<S: Store> Replica<S> {
    pub(crate) fn on_sasl(
        &mut self,
        conn: ConnId,
        xid: i32,
        outcome: SaslOutcome,
        received_ms: u64,
    ) {
        let Some(session_id) = self.note_packet(conn, xid, OpCode::Sasl as i32) else {
            return;
        };
        let session = format!("0x{session_id:x}");
        let token = match outcome {
            SaslOutcome::Continue { token } => Some(token),
            SaslOutcome::Authenticated { token, ids } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    for id in ids {
                        tracing::info!(conn, session, scheme = %id.scheme, id = %id.id, "adding SASL authorization");
                        if !c.auth_ids.contains(&id) {
                            std::sync::Arc::make_mut(&mut c.auth_ids).push(id);
                        }
                    }
                }
                Some(token)
            }
            SaslOutcome::NotConfigured => {
                tracing::error!(conn, session, "SASL request, but this server has no SASL login (no JAAS Server section): answering without a token, as ZooKeeper does");
                None
            }
            SaslOutcome::Failed { reason } => {
                let required = self.sasl_required();
                if self.settings.allow_sasl_failed_clients && !required {
                    tracing::warn!(conn, session, %reason, "client failed to SASL authenticate; maintaining the connection (allowSaslFailedClients)");
                    None
                } else {
                    let code = if required {
                        ErrorCode::SessionClosedRequireSaslAuth
                    } else {
                        ErrorCode::AuthFailed
                    };
                    tracing::warn!(conn, session, %reason, error = ?code, "client failed to SASL authenticate; closing the connection");
                    self.send(conn, sasl_frame(xid, code.code(), None), true);
                    self.record_latency(conn, xid, 0, received_ms);
                    self.close_conn(conn);
                    return;
                }
            }
        };
        self.send(conn, sasl_frame(xid, 0, token.as_deref()), true);
        self.record_latency(conn, xid, 0, received_ms);
    }

    /// Whether SASL is among the enforced schemes (`AuthenticationHelper.isSaslAuthRequired`).
    fn sasl_required(&self) -> bool {
        self.settings
            .enforce_auth_schemes
            .iter()
            .any(|s| s == "sasl")
    }

    /// `enforce.auth`: true when `conn` may go on; otherwise it is answered
    /// SESSIONCLOSEDREQUIRESASLAUTH and closed (its session lives on until it expires).
    pub(crate) fn enforce_auth(&mut self, conn: ConnId, xid: i32, received_ms: u64) -> bool {
        let schemes = &self.settings.enforce_auth_schemes;
        if schemes.is_empty() {
            return true;
        }
        let held: Vec<String> = self
            .conns
            .get(&conn)
            .map(|c| c.auth_ids.iter().map(|id| id.scheme.to_string()).collect())
            .unwrap_or_default();
        if held.iter().any(|scheme| schemes.contains(scheme)) {
            return true;
        }
        tracing::error!(conn, held = ?held, expected = ?schemes, "client authentication scheme(s) do not match any of the expected authentication schemes; closing the connection");
        let code = ErrorCode::SessionClosedRequireSaslAuth.code();
        self.send(conn, reply_frame(xid, 0, code, None), true);
        self.record_latency(conn, xid, 0, received_ms);
        self.close_conn(conn);
        false
    }
}
