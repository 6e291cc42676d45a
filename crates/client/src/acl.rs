//! ACL helpers: the predefined lists of `ZooDefs.Ids` and digest credentials.

use base64::Engine;
use proto::watch::perms;
use proto::{Acl, Id};

/// `world:anyone` with every permission (`OPEN_ACL_UNSAFE`).
pub fn open_unsafe() -> Vec<Acl> {
    vec![acl(perms::ALL, "world", "anyone")]
}

/// `world:anyone` read-only (`READ_ACL_UNSAFE`).
pub fn read_unsafe() -> Vec<Acl> {
    vec![acl(perms::READ, "world", "anyone")]
}

/// Every permission for the identities the session authenticated as (`CREATOR_ALL_ACL`).
pub fn creator_all() -> Vec<Acl> {
    vec![acl(perms::ALL, "auth", "")]
}

pub fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
    Acl {
        perms,
        id: Id {
            scheme: scheme.to_string().into(),
            id: id.to_string().into(),
        },
    }
}

/// The id a `digest` ACL names for `user:password`:
/// `user:base64(sha1(user:password))` (`DigestAuthenticationProvider.generateDigest`).
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    let hash = sha1_smol::Sha1::from(user_password.as_bytes())
        .digest()
        .bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// Permission bits as zkCli prints them (`ZKUtil.getPermString`: `cdrwa`).
pub fn perms_to_string(p: i32) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (perms::CREATE, 'c'),
        (perms::DELETE, 'd'),
        (perms::READ, 'r'),
        (perms::WRITE, 'w'),
        (perms::ADMIN, 'a'),
    ] {
        if p & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// Parses `crwda` letters; `None` on an unknown letter.
pub fn perms_from_string(s: &str) -> Option<i32> {
    let mut p = 0;
    for c in s.chars() {
        p |= match c {
            'c' | 'C' => perms::CREATE,
            'w' | 'W' => perms::WRITE,
            'r' | 'R' => perms::READ,
            'd' | 'D' => perms::DELETE,
            'a' | 'A' => perms::ADMIN,
            _ => return None,
        };
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_matches_zookeeper() {
        // DigestAuthenticationProvider.generateDigest("super:test")
        assert_eq!(
            digest_id("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn perms_round_trip() {
        assert_eq!(perms_to_string(31), "cdrwa");
        assert_eq!(perms_to_string(5), "cr");
        assert_eq!(perms_from_string("cdrwa"), Some(31));
        assert_eq!(perms_from_string("rx"), None);
    }
}
