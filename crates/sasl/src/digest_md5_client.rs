//! The client side of DIGEST-MD5 (RFC 2831), as ZooKeeper's Java client speaks it to a
//! ZooKeeper server: an empty first token, then one `digest-response` with `qop=auth` for the
//! service `zookeeper/zk-sasl-md5`, then a check of the server's `rspauth`. The client nonce
//! is an input, as the server's nonce is one of [`crate::digest_md5::DigestMd5Server`].

use crate::digest_md5::{constant_time_eq, Secrets};
use crate::directives::{self, DirectiveError};

/// Why a challenge or the server's final message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("malformed challenge: {0}")]
    Format(#[from] DirectiveError),
    #[error("the challenge has no nonce")]
    NoNonce,
    #[error("the challenge does not offer qop=auth")]
    NoAuthQop,
    #[error("the challenge's algorithm is not md5-sess")]
    Algorithm,
    #[error("the server's rspauth does not prove it knows the password")]
    ServerNotProven,
}

/// A response to a challenge, and what the server's `rspauth` must then be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub token: Vec<u8>,
    expected_rspauth: String,
}

impl Response {
    /// Checks the server's last message (`rspauth=...`).
    pub fn check_server(&self, token: &[u8]) -> Result<(), ClientError> {
        let list = directives::parse(token)?;
        let rspauth = list.iter().find(|d| d.name == "rspauth");
        match rspauth {
            Some(d) if constant_time_eq(d.value.as_bytes(), self.expected_rspauth.as_bytes()) => {
                Ok(())
            }
            _ => Err(ClientError::ServerNotProven),
        }
    }
}

/// The `digest-response` to `challenge` for `user` with `password` at `digest_uri`
/// (`zookeeper/zk-sasl-md5` for ZooKeeper), with the client nonce `cnonce`.
pub fn respond(
    challenge: &[u8],
    user: &str,
    password: &str,
    digest_uri: &str,
    cnonce: &str,
) -> Result<Response, ClientError> {
    let list = directives::parse(challenge)?;
    let value = |name: &str| {
        list.iter()
            .find(|d| d.name == name)
            .map(|d| d.value.as_str())
    };
    let realm = value("realm").unwrap_or_default();
    let nonce = value("nonce").ok_or(ClientError::NoNonce)?;
    if let Some(qop) = value("qop") {
        if !qop.split(',').any(|q| q.trim() == "auth") {
            return Err(ClientError::NoAuthQop);
        }
    }
    if value("algorithm") != Some("md5-sess") {
        return Err(ClientError::Algorithm);
    }
    let secrets = Secrets {
        username: user,
        realm,
        password,
        nonce,
        cnonce,
        authzid: None,
        digest_uri,
    };
    let token = format!(
        "charset=utf-8,username={},realm={},nonce={},nc=00000001,cnonce={},digest-uri={},\
         maxbuf=65536,response={},qop=auth",
        directives::quote(user),
        directives::quote(realm),
        directives::quote(nonce),
        directives::quote(cnonce),
        directives::quote(digest_uri),
        secrets.response_value("AUTHENTICATE"),
    );
    Ok(Response {
        token: token.into_bytes(),
        expected_rspauth: secrets.response_value(""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest_md5::{DigestMd5Server, Step};

    /// RFC 2831's IMAP example from the client's side: the same response value.
    #[test]
    fn rfc2831_example_response() {
        let challenge = b"realm=\"elwood.innosoft.com\",nonce=\"OA6MG9tEQGm2hh\",qop=\"auth\",\
                          algorithm=md5-sess,charset=utf-8";
        let response = respond(
            challenge,
            "chris",
            "secret",
            "imap/elwood.innosoft.com",
            "OA6MHXh6VqTrRk",
        )
        .expect("responds");
        let text = String::from_utf8(response.token.clone()).expect("text");
        assert!(
            text.contains("response=d388dad90d4bbd760a152321f2143af7"),
            "{text}"
        );
        assert_eq!(
            response.check_server(b"rspauth=ea40f60335c427b5527b84dbabcdfffd"),
            Ok(())
        );
        assert_eq!(
            response.check_server(b"rspauth=00000000000000000000000000000000"),
            Err(ClientError::ServerNotProven)
        );
    }

    #[test]
    fn against_the_server() {
        let mut server = DigestMd5Server::new("zookeeper", "zk-sasl-md5", "n0nce".into());
        let password = |user: &str| (user == "bob").then(|| "bobsecret".to_string());
        let Ok(Step::Challenge(challenge)) = server.evaluate(b"", password) else {
            panic!("a challenge");
        };
        let response = respond(&challenge, "bob", "bobsecret", "zookeeper/zk-sasl-md5", "c")
            .expect("responds");
        let Ok(Step::Complete { token, user }) = server.evaluate(&response.token, password) else {
            panic!("authenticated");
        };
        assert_eq!(user, "bob");
        assert_eq!(response.check_server(&token), Ok(()));
    }

    #[test]
    fn refuses_challenges_it_cannot_answer() {
        let respond_to = |c: &[u8]| respond(c, "u", "p", "zookeeper/zk-sasl-md5", "c");
        assert_eq!(
            respond_to(b"realm=\"r\",algorithm=md5-sess"),
            Err(ClientError::NoNonce)
        );
        assert_eq!(
            respond_to(b"nonce=\"n\",qop=\"auth-conf\",algorithm=md5-sess"),
            Err(ClientError::NoAuthQop)
        );
        assert_eq!(respond_to(b"nonce=\"n\""), Err(ClientError::Algorithm));
        assert!(matches!(respond_to(b"nonce"), Err(ClientError::Format(_))));
    }
}
