//! ACLs: the schemes ZooKeeper ships (world, auth, digest, ip, x509, sasl, super), the permission check
//! (`ZooKeeperServer.checkACL`), ACL fix-up on create/setACL (`PrepRequestProcessor.fixupACL`)
//! and the interning cache that lets a million znodes share a handful of ACL lists.

use proto::{Acl, ErrorCode, Id};
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The identities a session has authenticated as (always including its `ip`).
pub type AuthIds = [Id];

/// Computes a digest id `user:base64(sha1(user:password))` from `user:password`.
pub fn digest_id(user_password: &str) -> String {
    use base64::Engine;
    let user = user_password.split(':').next().unwrap_or_default();
    let hash = sha1_smol::Sha1::from(user_password.as_bytes())
        .digest()
        .bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// Does a session with `auth_ids` hold `perm` on a node with `acl`?
pub fn check_acl(acl: &[Acl], perm: i32, auth_ids: &AuthIds) -> Result<(), ErrorCode> {
    if acl.is_empty() || auth_ids.iter().any(|id| id.scheme == "super") {
        return Ok(());
    }
    for entry in acl.iter().filter(|a| a.perms & perm != 0) {
        let id = &entry.id;
        if id.scheme == "world" && id.id == "anyone" {
            return Ok(());
        }
        let matched = auth_ids
            .iter()
            .filter(|auth| auth.scheme == id.scheme)
            .any(|auth| id_matches(&id.scheme, &auth.id, &id.id));
        if matched {
            return Ok(());
        }
    }
    Err(ErrorCode::NoAuth)
}

fn id_matches(scheme: &str, authenticated: &str, acl_id: &str) -> bool {
    match scheme {
        "ip" => ip_matches(authenticated, acl_id),
        // `SASLAuthenticationProvider.matches`: the SASL user `super` matches every sasl ACL.
        "sasl" => authenticated == "super" || authenticated == acl_id,
        _ => authenticated == acl_id,
    }
}

/// `ip` ACL ids are an address with an optional `/bits` prefix length.
fn ip_matches(client: &str, acl_id: &str) -> bool {
    let (net, bits) = match acl_id.split_once('/') {
        Some((net, bits)) => (net, bits.parse::<u32>().ok()),
        None => (acl_id, None),
    };
    let (Ok(client), Ok(net)) = (client.parse::<IpAddr>(), net.parse::<IpAddr>()) else {
        return false;
    };
    match (client, net) {
        (IpAddr::V4(c), IpAddr::V4(n)) => prefix_eq(&c.octets(), &n.octets(), bits.unwrap_or(32)),
        (IpAddr::V6(c), IpAddr::V6(n)) => prefix_eq(&c.octets(), &n.octets(), bits.unwrap_or(128)),
        _ => false,
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u32) -> bool {
    let bits = bits.min(a.len() as u32 * 8);
    (0..bits).all(|i| {
        let (byte, shift) = ((i / 8) as usize, 7 - (i % 8));
        (a[byte] >> shift) & 1 == (b[byte] >> shift) & 1
    })
}

fn valid_ip_id(id: &str) -> bool {
    let (net, bits) = match id.split_once('/') {
        Some((net, bits)) => (net, Some(bits)),
        None => (id, None),
    };
    let Ok(addr) = net.parse::<IpAddr>() else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    bits.is_none_or(|b| b.parse::<u32>().is_ok_and(|b| b <= max))
}

/// Java's `id.split(":").length == 2`: exactly one colon, with something after it.
fn valid_digest_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split(':').collect();
    let trailing_empty = parts.iter().rev().take_while(|p| p.is_empty()).count();
    parts.len() - trailing_empty == 2
}

/// `SASLAuthenticationProvider.isValid`: whatever ZooKeeper's `KerberosName` accepts, i.e. a
/// name without `@`, or `primary[/instance]@REALM` with no further `/` or `@`.
fn valid_kerberos_name(id: &str) -> bool {
    let Some((principal, realm)) = id.split_once('@') else {
        return true;
    };
    !realm.contains(['/', '@']) && principal.matches('/').count() <= 1
}

/// Validates an ACL from a create or setACL and expands the `auth` scheme to the session's
/// authenticated (digest, x509, sasl) identities. Empty, unknown or malformed → InvalidACL.
/// `sasl_provider`: `authProvider.N` registered ZooKeeper's `SASLAuthenticationProvider`;
/// without it `sasl` is an unknown scheme, as in ZooKeeper, whose registry has only `ip` and
/// `digest` by default (`x509` is always known to meerkat; docs/operators.md).
pub fn fixup_acl<'a>(
    acl: &'a [Acl],
    auth_ids: &AuthIds,
    sasl_provider: bool,
) -> Result<Cow<'a, [Acl]>, ErrorCode> {
    if acl.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    // The common case, a valid list without `auth` entries or repeats, is used as given: no
    // copy of it is made here (the tree usually has one to share).
    let mut as_given = true;
    for (i, entry) in acl.iter().enumerate() {
        if entry.id.scheme == "auth" || acl[..i].contains(entry) {
            as_given = false;
        } else if !valid_as_given(&entry.id, sasl_provider) {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    if as_given {
        return Ok(Cow::Borrowed(acl));
    }
    let mut fixed = Vec::with_capacity(acl.len());
    for (i, entry) in acl.iter().enumerate() {
        if acl[..i].contains(entry) {
            continue;
        }
        if entry.id.scheme != "auth" {
            fixed.push(entry.clone());
            continue;
        }
        // Every identity an authenticating provider proved (ZooKeeper's `isAuthenticated()`):
        // digest, x509 and sasl, not ip or super. A `sasl` identity without its provider is
        // skipped, as ZooKeeper skips an identity whose provider is missing.
        let proved = |a: &&Id| match a.scheme.as_ref() {
            "digest" | "x509" => true,
            "sasl" => sasl_provider,
            _ => false,
        };
        let before = fixed.len();
        fixed.extend(auth_ids.iter().filter(proved).map(|auth| Acl {
            perms: entry.perms,
            id: auth.clone(),
        }));
        if fixed.len() == before {
            return Err(ErrorCode::InvalidAcl);
        }
    }
    Ok(Cow::Owned(fixed))
}

/// Whether an identity other than `auth` is valid in an ACL as it stands.
fn valid_as_given(id: &Id, sasl_provider: bool) -> bool {
    match id.scheme.as_ref() {
        "world" => id.id == "anyone",
        "digest" => valid_digest_id(&id.id),
        "ip" => valid_ip_id(&id.id),
        // ZooKeeper's X509AuthenticationProvider takes any name X500Principal parses; meerkat
        // takes any name (it cannot tell a Java-parsable one from the rest).
        "x509" => true,
        "sasl" => sasl_provider && valid_kerberos_name(&id.id),
        _ => false,
    }
}

pub use proto::AclList;

/// Interns ACL lists so identical lists are stored once (ZooKeeper's `ReferenceCountedACLCache`).
#[derive(Debug, Default, Clone)]
pub struct AclCache {
    lists: HashMap<Vec<Acl>, AclList, crate::keyed_hasher::KeyedHasher>,
}

impl AclCache {
    /// The interned list equal to `acl`, if there is one.
    pub fn get(&self, acl: &[Acl]) -> Option<AclList> {
        self.lists.get(acl).cloned()
    }

    pub fn intern(&mut self, acl: &[Acl]) -> AclList {
        if let Some(list) = self.lists.get(acl) {
            return list.clone();
        }
        let list: AclList = Arc::new(acl.to_vec());
        self.lists.insert(acl.to_vec(), list.clone());
        list
    }

    /// Drops lists no znode uses any more (called after deletes and setACL, cheaply amortised).
    pub fn purge_unused(&mut self) {
        self.lists.retain(|_, list| Arc::strong_count(list) > 1);
    }

    pub fn len(&self) -> usize {
        self.lists.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
}

/// `world:anyone` with every permission: ZooKeeper's `OPEN_ACL_UNSAFE`.
pub fn open_acl_unsafe() -> Vec<Acl> {
    vec![Acl {
        perms: proto::watch::perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

#[cfg(test)]
mod tests {
    /// `fixup_acl`, owned, to compare with a list.
    fn fixup(acl: &[Acl], ids: &AuthIds, sasl: bool) -> Result<Vec<Acl>, ErrorCode> {
        fixup_acl(acl, ids, sasl).map(Cow::into_owned)
    }

    #[test]
    fn a_valid_list_without_auth_or_repeats_is_used_as_given() {
        let world = open_acl_unsafe();
        assert!(matches!(
            fixup_acl(&world, &[], false),
            Ok(Cow::Borrowed(_))
        ));
        let twice = [world.clone(), world.clone()].concat();
        match fixup_acl(&twice, &[], false) {
            Ok(Cow::Owned(fixed)) => assert_eq!(fixed, world),
            other => panic!("repeats are removed: {other:?}"),
        }
        let bad_after_repeat = [
            world.clone(),
            world,
            vec![Acl {
                perms: 1,
                id: Id {
                    scheme: "world".into(),
                    id: "x".into(),
                },
            }],
        ]
        .concat();
        assert_eq!(
            fixup_acl(&bad_after_repeat, &[], false),
            Err(ErrorCode::InvalidAcl)
        );
    }

    use super::*;
    use proto::watch::perms;

    fn id(scheme: &str, id: &str) -> Id {
        Id {
            scheme: scheme.to_string().into(),
            id: id.to_string().into(),
        }
    }

    #[test]
    fn digest_matches_zookeeper() {
        // Value from ZooKeeper's documentation of DigestAuthenticationProvider.
        assert_eq!(
            digest_id("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn world_ip_digest_and_super() {
        let acl = vec![
            Acl {
                perms: perms::READ,
                id: id("ip", "127.0.0.0/8"),
            },
            Acl {
                perms: perms::WRITE,
                id: id("digest", "bob:x"),
            },
        ];
        let me = [id("ip", "127.0.0.1")];
        assert_eq!(check_acl(&acl, perms::READ, &me), Ok(()));
        assert_eq!(check_acl(&acl, perms::WRITE, &me), Err(ErrorCode::NoAuth));
        let bob = [id("ip", "10.0.0.1"), id("digest", "bob:x")];
        assert_eq!(check_acl(&acl, perms::WRITE, &bob), Ok(()));
        assert_eq!(check_acl(&acl, perms::READ, &bob), Err(ErrorCode::NoAuth));
        assert_eq!(check_acl(&acl, perms::ADMIN, &[id("super", "")]), Ok(()));
        assert_eq!(check_acl(&open_acl_unsafe(), perms::ADMIN, &[]), Ok(()));
    }

    #[test]
    fn sasl_scheme_as_sasl_authentication_provider() {
        let acl = vec![Acl {
            perms: perms::READ,
            id: id("sasl", "bob"),
        }];
        let ip = id("ip", "127.0.0.1");
        assert_eq!(
            check_acl(&acl, perms::READ, &[ip.clone(), id("sasl", "bob")]),
            Ok(())
        );
        assert_eq!(
            check_acl(&acl, perms::READ, &[ip.clone(), id("sasl", "alice")]),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(
            check_acl(&acl, perms::READ, &[ip.clone(), id("digest", "bob")]),
            Err(ErrorCode::NoAuth)
        );
        // The SASL user named `super` matches every sasl ACL.
        assert_eq!(
            check_acl(&acl, perms::READ, &[ip.clone(), id("sasl", "super")]),
            Ok(())
        );
        let auth = vec![Acl {
            perms: perms::ALL,
            id: id("auth", ""),
        }];
        assert_eq!(
            fixup(&auth, &[ip, id("sasl", "bob")], true),
            Ok(vec![Acl {
                perms: perms::ALL,
                id: id("sasl", "bob")
            }])
        );
        for good in [
            "bob",
            "",
            "zookeeper/host@EXAMPLE.COM",
            "bob@EXAMPLE.COM",
            "a/b/c",
        ] {
            let acl = vec![Acl {
                perms: 1,
                id: id("sasl", good),
            }];
            assert_eq!(fixup(&acl, &[], true), Ok(acl.clone()), "{good}");
        }
        // Without SASLAuthenticationProvider registered, `sasl` is an unknown scheme, and an
        // `auth` ACL does not expand to a sasl identity.
        let named = vec![Acl {
            perms: 1,
            id: id("sasl", "bob"),
        }];
        assert_eq!(fixup(&named, &[], false), Err(ErrorCode::InvalidAcl));
        assert_eq!(
            fixup(&auth, &[id("ip", "127.0.0.1"), id("sasl", "bob")], false),
            Err(ErrorCode::InvalidAcl)
        );
        for bad in ["a@b@c", "a@R/x", "a/b/c@R"] {
            let acl = vec![Acl {
                perms: 1,
                id: id("sasl", bad),
            }];
            assert_eq!(fixup(&acl, &[], true), Err(ErrorCode::InvalidAcl), "{bad}");
        }
    }

    #[test]
    fn fixup_expands_auth_and_rejects_bad_ids() {
        let auth = vec![Acl {
            perms: perms::ALL,
            id: id("auth", ""),
        }];
        assert_eq!(
            fixup(&auth, &[id("ip", "127.0.0.1")], true),
            Err(ErrorCode::InvalidAcl)
        );
        let fixed =
            fixup(&auth, &[id("ip", "127.0.0.1"), id("digest", "u:h")], true).expect("valid");
        assert_eq!(
            fixed,
            vec![Acl {
                perms: perms::ALL,
                id: id("digest", "u:h")
            }]
        );
        let x509 = id("x509", "CN=c,O=o");
        let fixed = fixup(&auth, &[id("super", "CN=c,O=o"), x509.clone()], true).expect("valid");
        assert_eq!(
            fixed,
            vec![Acl {
                perms: perms::ALL,
                id: x509.clone()
            }]
        );
        let named = vec![Acl { perms: 1, id: x509 }];
        assert_eq!(fixup(&named, &[], true), Ok(named.clone()));
        for bad in [
            id("world", "x"),
            id("digest", "nocolon"),
            id("ip", "300.1.1.1"),
            id("nope", "x"),
        ] {
            let acl = vec![Acl { perms: 1, id: bad }];
            assert_eq!(fixup(&acl, &[], true), Err(ErrorCode::InvalidAcl));
        }
        assert_eq!(fixup(&[], &[], true), Err(ErrorCode::InvalidAcl));
    }

    #[test]
    fn cache_shares_lists() {
        let mut cache = AclCache::default();
        let a = cache.intern(&open_acl_unsafe());
        let b = cache.intern(&open_acl_unsafe());
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        cache.purge_unused();
        assert!(cache.is_empty());
    }
}
