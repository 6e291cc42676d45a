//! The server side of DIGEST-MD5 (RFC 2831) as the JDK's `com.sun.security.sasl.digest.
//! DigestMD5Server` runs it for ZooKeeper: initial authentication only, `qop=auth` only (the
//! Java server offers nothing else when ZooKeeper creates it without properties, so the Java
//! client and kazoo negotiate `auth`), `charset=utf-8`, `algorithm=md5-sess`, one realm (the
//! server name, `zk-sasl-md5`).
//!
//! Why our own: no maintained Rust crate implements a DIGEST-MD5 *server* (the SASL crates
//! there are either client-only, bind Cyrus SASL through C, or stopped years ago), and the
//! mechanism is small: two messages, MD5 and hex. MD5 itself comes from RustCrypto's `md-5`.
//!
//! The exchange, with the caller feeding each client token to [`DigestMd5Server::evaluate`]:
//! 1. the client's first token (empty for DIGEST-MD5) → the `digest-challenge`;
//! 2. the client's `digest-response` → checked against the user's password; on success the
//!    `response-auth` (`rspauth=...`) and the authenticated user ([`Step::Complete`]).
//!
//! Any other token, or one after a failure, is an error: the caller closes the connection.
//! The nonce is an input ([`DigestMd5Server::new`]), so the server is deterministic; the caller
//! draws it from the operating system's random source ([`nonce_from_random`]).

use crate::directives::{self, Directive, DirectiveError};
use md5::{Digest, Md5};

/// The JDK's `DigestMD5Base.MAX_RESPONSE_LENGTH`: longer client tokens are refused unread.
pub const RESPONSE_BYTES_MAX: usize = 4096;

/// Random bytes in a nonce (`DigestMD5Base.RAW_NONCE_SIZE`); base64 makes 40 characters.
pub const NONCE_RANDOM_BYTES: usize = 30;

/// The only nonce count an initial authentication may carry.
const NONCE_COUNT: &str = "00000001";

/// Why an exchange failed. The messages follow the JDK's `SaslException`s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error(
        "DIGEST-MD5: Invalid digest response length. Got: {0} Expected < {RESPONSE_BYTES_MAX}"
    )]
    TooLong(usize),
    #[error("DIGEST-MD5: Server at illegal state")]
    IllegalState,
    #[error("DIGEST-MD5: digest response format violation. {0}")]
    Format(#[from] DirectiveError),
    #[error("DIGEST-MD5: peer sent more than one {0} directive")]
    Duplicate(String),
    #[error("DIGEST-MD5: digest response format violation. Missing {0}.")]
    Missing(&'static str),
    #[error("DIGEST-MD5: digest response format violation. Incompatible charset value: {0}")]
    Charset(String),
    #[error("DIGEST-MD5: digest response format violation. Invalid maxbuf: {0}")]
    Maxbuf(String),
    #[error("DIGEST-MD5: digest response format violation. Nonexistent realm: {0}")]
    Realm(String),
    #[error("DIGEST-MD5: digest response format violation. Mismatched nonce.")]
    Nonce,
    #[error("DIGEST-MD5: digest response format violation. Nonce count does not match: {0}")]
    NonceCount(String),
    #[error("DIGEST-MD5: server does not support qop: {0}")]
    Qop(String),
    #[error(
        "DIGEST-MD5: digest response format violation. Mismatched URI: {got}; expecting: {want}"
    )]
    Uri { got: String, want: String },
    #[error("DIGEST-MD5: cannot acquire password for {user} in realm : {realm}")]
    UnknownUser { user: String, realm: String },
    #[error("DIGEST-MD5: digest response format violation. Mismatched response.")]
    Response,
}

/// What one client token led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send this to the client and wait for its next token.
    Challenge(Vec<u8>),
    /// Authenticated: send `token` (the `rspauth`) to the client; `user` is who it is.
    Complete { token: Vec<u8>, user: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the client's (empty) first token.
    Start,
    /// The challenge is out; waiting for the `digest-response`.
    Challenged,
    /// Completed or failed: every further token is refused.
    Finished,
}

/// One DIGEST-MD5 exchange on one connection.
#[derive(Debug, Clone)]
pub struct DigestMd5Server {
    state: State,
    realm: String,
    digest_uri: String,
    nonce: String,
}

/// The values of a `digest-response` the server looks at.
#[derive(Default)]
struct Response {
    username: Option<String>,
    realm: Option<String>,
    nonce: Option<String>,
    cnonce: Option<String>,
    nc: Option<String>,
    qop: Option<String>,
    digest_uri: Option<String>,
    response: Option<String>,
    maxbuf: Option<String>,
    charset: Option<String>,
    authzid: Option<String>,
}

impl DigestMd5Server {
    /// An exchange for `protocol/server_name` (ZooKeeper: `zookeeper/zk-sasl-md5`), whose realm
    /// is the server name (the JDK's default), with the nonce `nonce`.
    pub fn new(protocol: &str, server_name: &str, nonce: String) -> DigestMd5Server {
        DigestMd5Server {
            state: State::Start,
            realm: server_name.to_string(),
            digest_uri: format!("{protocol}/{server_name}"),
            nonce,
        }
    }

    /// Whether the exchange has ended (successfully or not).
    pub fn is_finished(&self) -> bool {
        self.state == State::Finished
    }

    /// Evaluates the client's next token. `password_of` gives a user's password (None: no
    /// such user). After an error the exchange is over.
    pub fn evaluate(
        &mut self,
        token: &[u8],
        password_of: impl FnOnce(&str) -> Option<String>,
    ) -> Result<Step, DigestError> {
        if token.len() > RESPONSE_BYTES_MAX {
            self.state = State::Finished;
            return Err(DigestError::TooLong(token.len()));
        }
        match self.state {
            // A client's initial response is ignored, as the JDK does (no subsequent
            // authentication): the challenge starts an initial authentication.
            State::Start => {
                self.state = State::Challenged;
                Ok(Step::Challenge(self.challenge().into_bytes()))
            }
            State::Challenged => {
                self.state = State::Finished;
                self.check_response(token, password_of)
            }
            State::Finished => Err(DigestError::IllegalState),
        }
    }

    /// `digest-challenge`, in the JDK's order: `realm="...",nonce="...",charset=utf-8,
    /// algorithm=md5-sess` (no `qop`: `auth`, the default, is all it offers).
    fn challenge(&self) -> String {
        format!(
            "realm={},nonce={},charset=utf-8,algorithm=md5-sess",
            directives::quote(&self.realm),
            directives::quote(&self.nonce)
        )
    }

    fn check_response(
        &self,
        token: &[u8],
        password_of: impl FnOnce(&str) -> Option<String>,
    ) -> Result<Step, DigestError> {
        let r = Response::parse(directives::parse(token)?)?;
        if let Some(charset) = &r.charset {
            if charset != "utf-8" {
                return Err(DigestError::Charset(charset.clone()));
            }
        }
        if let Some(maxbuf) = &r.maxbuf {
            if maxbuf.parse::<u32>().is_err() {
                return Err(DigestError::Maxbuf(maxbuf.clone()));
            }
        }
        let username = r.username.ok_or(DigestError::Missing("username"))?;
        let realm = r.realm.unwrap_or_default();
        if realm != self.realm {
            return Err(DigestError::Realm(realm));
        }
        let nonce = r.nonce.ok_or(DigestError::Missing("nonce"))?;
        if !constant_time_eq(nonce.as_bytes(), self.nonce.as_bytes()) {
            return Err(DigestError::Nonce);
        }
        let cnonce = r.cnonce.ok_or(DigestError::Missing("cnonce"))?;
        if let Some(nc) = &r.nc {
            if u32::from_str_radix(nc, 16).ok() != Some(1) {
                return Err(DigestError::NonceCount(nc.clone()));
            }
        }
        let qop = r.qop.unwrap_or_else(|| "auth".to_string());
        if qop != "auth" {
            return Err(DigestError::Qop(qop));
        }
        let uri = r.digest_uri.unwrap_or_default();
        if !uri.eq_ignore_ascii_case(&self.digest_uri) {
            return Err(DigestError::Uri {
                got: uri,
                want: self.digest_uri.clone(),
            });
        }
        let response = r.response.ok_or(DigestError::Missing("response"))?;
        let password = password_of(&username).ok_or_else(|| DigestError::UnknownUser {
            user: username.clone(),
            realm: realm.clone(),
        })?;
        let secrets = Secrets {
            username: &username,
            realm: &realm,
            password: &password,
            nonce: &self.nonce,
            cnonce: &cnonce,
            authzid: r.authzid.as_deref(),
            // The client's spelling of the URI (the JDK keeps it, "to account for case diffs").
            digest_uri: &uri,
        };
        let expected = secrets.response_value("AUTHENTICATE");
        if !constant_time_eq(response.as_bytes(), expected.as_bytes()) {
            return Err(DigestError::Response);
        }
        let token = format!("rspauth={}", secrets.response_value("")).into_bytes();
        Ok(Step::Complete {
            token,
            user: username,
        })
    }
}

impl Response {
    fn parse(list: Vec<Directive>) -> Result<Response, DigestError> {
        let mut r = Response::default();
        for d in list {
            let slot = match d.name.as_str() {
                "username" => &mut r.username,
                "realm" => &mut r.realm,
                "nonce" => &mut r.nonce,
                "cnonce" => &mut r.cnonce,
                "nc" => &mut r.nc,
                "qop" => &mut r.qop,
                "digest-uri" => &mut r.digest_uri,
                "response" => &mut r.response,
                "maxbuf" => &mut r.maxbuf,
                "charset" => &mut r.charset,
                "authzid" => &mut r.authzid,
                // `cipher` matters only for auth-conf, which is refused; auth-params are ignored.
                _ => continue,
            };
            if slot.is_some() {
                return Err(DigestError::Duplicate(d.name));
            }
            *slot = Some(d.value);
        }
        Ok(r)
    }
}

/// What both response values are computed from (RFC 2831 §2.1.2.1); the client side
/// ([`crate::digest_md5_client`]) computes the same.
pub(crate) struct Secrets<'a> {
    pub(crate) username: &'a str,
    pub(crate) realm: &'a str,
    pub(crate) password: &'a str,
    pub(crate) nonce: &'a str,
    pub(crate) cnonce: &'a str,
    pub(crate) authzid: Option<&'a str>,
    pub(crate) digest_uri: &'a str,
}

impl Secrets<'_> {
    /// `response-value` for `qop=auth`: HEX(KD(HEX(H(A1)), nonce:nc:cnonce:qop:HEX(H(A2))))
    /// with A2 = `method:digest-uri` (method `AUTHENTICATE` from the client, empty for the
    /// server's `rspauth`).
    pub(crate) fn response_value(&self, method: &str) -> String {
        let mut a1 = Md5::new();
        a1.update(self.user_secret());
        a1.update(format!(":{}:{}", self.nonce, self.cnonce));
        if let Some(authzid) = self.authzid {
            a1.update(format!(":{authzid}"));
        }
        let ha1 = hex(&a1.finalize());
        let ha2 = hex(&Md5::digest(format!("{method}:{}", self.digest_uri)));
        let kd = format!(
            "{ha1}:{}:{NONCE_COUNT}:{}:auth:{ha2}",
            self.nonce, self.cnonce
        );
        hex(&Md5::digest(kd))
    }

    /// H({ username-value, ":", realm-value, ":", passwd }), each string in ISO 8859-1 when
    /// it fits and in UTF-8 otherwise (RFC 2831 §2.1.2.1 with `charset=utf-8`).
    fn user_secret(&self) -> [u8; 16] {
        let mut h = Md5::new();
        h.update(latin1_or_utf8(self.username));
        h.update(b":");
        h.update(latin1_or_utf8(self.realm));
        h.update(b":");
        h.update(latin1_or_utf8(self.password));
        h.finalize().into()
    }
}

fn latin1_or_utf8(s: &str) -> Vec<u8> {
    if s.chars().all(|c| (c as u32) <= 0xff) {
        s.chars().map(|c| c as u32 as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

/// Equality whose time does not depend on where two equally long inputs differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A nonce from [`NONCE_RANDOM_BYTES`] random bytes, base64 as the JDK writes it.
pub fn nonce_from_random(random: &[u8; NONCE_RANDOM_BYTES]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(random)
}

#[cfg(test)]
mod tests;
