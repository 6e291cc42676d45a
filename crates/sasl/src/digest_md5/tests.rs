//! RFC 2831 §4's two examples (IMAP and ACAP, user `chris`, password `secret`), ZooKeeper's
//! challenge, and every way a response can be wrong.

use super::*;

const RFC_REALM: &str = "elwood.innosoft.com";

fn password(user: &str) -> Option<String> {
    (user == "chris").then(|| "secret".to_string())
}

fn rfc_response(nonce: &str, cnonce: &str, uri: &str, response: &str) -> String {
    format!(
        "charset=utf-8,username=\"chris\",realm=\"{RFC_REALM}\",nonce=\"{nonce}\",nc=00000001,\
         cnonce=\"{cnonce}\",digest-uri=\"{uri}\",response={response},qop=auth"
    )
}

fn challenged(protocol: &str, nonce: &str) -> DigestMd5Server {
    let mut server = DigestMd5Server::new(protocol, RFC_REALM, nonce.to_string());
    let step = server.evaluate(b"", password).expect("challenge");
    let Step::Challenge(challenge) = step else {
        panic!("expected a challenge, got {step:?}");
    };
    let want = format!("realm=\"{RFC_REALM}\",nonce=\"{nonce}\",charset=utf-8,algorithm=md5-sess");
    assert_eq!(String::from_utf8_lossy(&challenge), want);
    server
}

#[test]
fn rfc2831_imap_example() {
    let mut server = challenged("imap", "OA6MG9tEQGm2hh");
    let response = rfc_response(
        "OA6MG9tEQGm2hh",
        "OA6MHXh6VqTrRk",
        "imap/elwood.innosoft.com",
        "d388dad90d4bbd760a152321f2143af7",
    );
    let step = server.evaluate(response.as_bytes(), password);
    assert_eq!(
        step,
        Ok(Step::Complete {
            token: b"rspauth=ea40f60335c427b5527b84dbabcdfffd".to_vec(),
            user: "chris".into()
        })
    );
    assert!(server.is_finished());
    assert_eq!(
        server.evaluate(b"", password),
        Err(DigestError::IllegalState)
    );
}

#[test]
fn rfc2831_acap_example() {
    let mut server = challenged("acap", "OA9BSXrbuRhWay");
    let response = rfc_response(
        "OA9BSXrbuRhWay",
        "OA9BSuZWMSpW8m",
        "acap/elwood.innosoft.com",
        "6084c6db3fede7352c551284490fd0fc",
    );
    let step = server.evaluate(response.as_bytes(), password);
    assert_eq!(
        step,
        Ok(Step::Complete {
            token: b"rspauth=2f0b3d7c3c2e486600ef710726aa2eae".to_vec(),
            user: "chris".into()
        })
    );
}

#[test]
fn zookeeper_challenge() {
    let mut server = DigestMd5Server::new(
        crate::ZOOKEEPER_PROTOCOL,
        crate::ZOOKEEPER_DIGEST_SERVER_NAME,
        nonce_from_random(&[7; NONCE_RANDOM_BYTES]),
    );
    let Ok(Step::Challenge(challenge)) = server.evaluate(b"", password) else {
        panic!("expected a challenge");
    };
    let text = String::from_utf8(challenge).expect("utf-8");
    assert!(text.starts_with("realm=\"zk-sasl-md5\",nonce=\""), "{text}");
    assert!(
        text.ends_with("\",charset=utf-8,algorithm=md5-sess"),
        "{text}"
    );
    assert_eq!(nonce_from_random(&[7; NONCE_RANDOM_BYTES]).len(), 40);
}

/// The IMAP example's response with `edit` applied, against a fresh server.
fn refused(edit: impl Fn(String) -> String) -> DigestError {
    let mut server = challenged("imap", "OA6MG9tEQGm2hh");
    let response = edit(rfc_response(
        "OA6MG9tEQGm2hh",
        "OA6MHXh6VqTrRk",
        "imap/elwood.innosoft.com",
        "d388dad90d4bbd760a152321f2143af7",
    ));
    let error = server
        .evaluate(response.as_bytes(), password)
        .expect_err("refused");
    assert!(server.is_finished());
    error
}

#[test]
fn wrong_responses_are_refused_with_the_reason() {
    let wrong_password = |user: &str| (user == "chris").then(|| "Secret".to_string());
    let mut server = challenged("imap", "OA6MG9tEQGm2hh");
    let response = rfc_response(
        "OA6MG9tEQGm2hh",
        "OA6MHXh6VqTrRk",
        "imap/elwood.innosoft.com",
        "d388dad90d4bbd760a152321f2143af7",
    );
    assert_eq!(
        server.evaluate(response.as_bytes(), wrong_password),
        Err(DigestError::Response)
    );
    assert_eq!(
        refused(|r| r.replace("\"chris\"", "\"eve\"")),
        DigestError::UnknownUser {
            user: "eve".into(),
            realm: RFC_REALM.into()
        }
    );
    assert_eq!(
        refused(|r| r.replace("realm=\"elwood.innosoft.com\",", "")),
        DigestError::Realm(String::new())
    );
    assert_eq!(
        refused(|r| r.replace("realm=\"elwood", "realm=\"other")),
        DigestError::Realm("other.innosoft.com".into())
    );
    assert_eq!(
        refused(|r| r.replace("OA6MG9tEQGm2hh", "x")),
        DigestError::Nonce
    );
    assert_eq!(
        refused(|r| r.replace("nc=00000001", "nc=00000002")),
        DigestError::NonceCount("00000002".into())
    );
    assert_eq!(
        refused(|r| r.replace("qop=auth", "qop=auth-int")),
        DigestError::Qop("auth-int".into())
    );
    assert_eq!(
        refused(|r| r.replace("imap/", "ldap/")),
        DigestError::Uri {
            got: "ldap/elwood.innosoft.com".into(),
            want: "imap/elwood.innosoft.com".into()
        }
    );
    assert_eq!(
        refused(|r| r.replace("charset=utf-8", "charset=latin1")),
        DigestError::Charset("latin1".into())
    );
    assert_eq!(
        refused(|r| format!("{r},username=\"chris\"")),
        DigestError::Duplicate("username".into())
    );
    assert_eq!(
        refused(|r| r.replace(",cnonce=\"OA6MHXh6VqTrRk\"", "")),
        DigestError::Missing("cnonce")
    );
    assert_eq!(
        refused(|r| r.replace(",response=d388dad90d4bbd760a152321f2143af7", "")),
        DigestError::Missing("response")
    );
    assert_eq!(
        refused(|r| format!("{r},maxbuf=lots")),
        DigestError::Maxbuf("lots".into())
    );
    assert!(matches!(
        refused(|r| r.replace("username=", "username")),
        DigestError::Format(_)
    ));
}

#[test]
fn long_tokens_are_refused_unread() {
    let mut server = DigestMd5Server::new("zookeeper", "zk-sasl-md5", "n".into());
    let long = vec![b'a'; RESPONSE_BYTES_MAX + 1];
    assert_eq!(
        server.evaluate(&long, password),
        Err(DigestError::TooLong(RESPONSE_BYTES_MAX + 1))
    );
    assert!(server.is_finished());
}

#[test]
fn non_latin1_credentials_hash_as_utf8() {
    // A user whose name does not fit ISO 8859-1 is hashed in UTF-8; the exchange still
    // completes against the same computation a client makes.
    let secrets = Secrets {
        username: "ユーザー",
        realm: "zk-sasl-md5",
        password: "pässword",
        nonce: "n",
        cnonce: "c",
        authzid: None,
        digest_uri: "zookeeper/zk-sasl-md5",
    };
    let mut h = Md5::new();
    h.update("ユーザー".as_bytes());
    h.update(b":zk-sasl-md5:p\xe4ssword");
    assert_eq!(secrets.user_secret(), <[u8; 16]>::from(h.finalize()));
}

/// Random and mutated tokens never panic; a deterministic generator keeps the test repeatable.
#[test]
fn arbitrary_tokens_never_panic() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let valid = rfc_response(
        "OA6MG9tEQGm2hh",
        "OA6MHXh6VqTrRk",
        "imap/elwood.innosoft.com",
        "d388dad90d4bbd760a152321f2143af7",
    )
    .into_bytes();
    for round in 0..2000 {
        let mut token = if round % 2 == 0 {
            valid.clone()
        } else {
            (0..(next() % 200)).map(|_| next() as u8).collect()
        };
        for _ in 0..(next() % 4) {
            if token.is_empty() {
                break;
            }
            let at = (next() as usize) % token.len();
            token[at] = b"\",=\\ \xff"[(next() % 6) as usize];
        }
        let mut server = challenged("imap", "OA6MG9tEQGm2hh");
        let _ = server.evaluate(&token, password);
        assert!(server.is_finished());
    }
}
