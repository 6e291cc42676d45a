//! Helpers shared by the recipes that queue on sequential znodes: Curator-style protected
//! creation, ordering by sequence number, and waiting for a znode to go away.

use crate::{acl, Client, CreateMode, Error, ErrorCode, EventType, Result};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// A random UUID-shaped id (8-4-4-4-12 hex). `RandomState` is seeded from the OS per process;
/// time and a counter make ids distinct within one.
pub(crate) fn uuid() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut words = [0u64; 2];
    for word in &mut words {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.write_u32(std::process::id());
        *word = h.finish();
    }
    let hex = format!("{:016x}{:016x}", words[0], words[1]);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Creates `path` and its missing ancestors as containers (Curator's
/// `creatingParentContainersIfNeeded`), tolerating races with other creators.
pub(crate) async fn ensure_containers(zk: &Client, path: &str) -> Result<()> {
    if path == "/" || zk.exists(path).await?.is_some() {
        return Ok(());
    }
    let mut prefix = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        prefix.push('/');
        prefix.push_str(part);
        match zk
            .create(&prefix, b"", &acl::open_unsafe(), CreateMode::Container)
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == ErrorCode::NodeExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates `dir/_c_<id>-<name>` (ephemeral sequential unless `mode` says otherwise). If the
/// answer is lost (ConnectionLoss), looks for a child with our `_c_<id>-` prefix before trying
/// again, so a create that did happen is found rather than repeated.
pub(crate) async fn protected_create(
    zk: &Client,
    dir: &str,
    name: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<String> {
    let prefix = format!("_c_{}-", uuid());
    let path = crate::path::join(dir, &format!("{prefix}{name}"));
    // Bounded: each attempt either succeeds, finds our node, or meets a fresh connection.
    for _ in 0..16 {
        match zk.create(&path, data, &acl::open_unsafe(), mode).await {
            Ok((created, _)) => return Ok(created),
            Err(e) if e.code() == ErrorCode::NoNode => ensure_containers(zk, dir).await?,
            Err(e) if e.is_connection_loss() => {
                let session = zk.wait_for_state(zk.session_timeout()).await;
                if session.is_terminal() {
                    return Err(e);
                }
                if let Ok((children, _)) = zk.get_children(dir).await {
                    if let Some(ours) = children.iter().find(|c| c.starts_with(&prefix)) {
                        return Ok(crate::path::join(dir, ours));
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::keeper(ErrorCode::ConnectionLoss, path))
}

/// The sequence number after `marker` in a child name (`..lock-0000000007` → 7).
pub(crate) fn sequence(name: &str, marker: &str) -> Option<u64> {
    let at = name.rfind(marker)?;
    name[at + marker.len()..].parse().ok()
}

/// Children of `dir` whose name holds `marker` followed by a sequence, sorted by sequence
/// (Curator's `fixForSorting`).
pub(crate) async fn sorted_children(
    zk: &Client,
    dir: &str,
    markers: &[&str],
) -> Result<Vec<String>> {
    let (children, _) = zk.get_children(dir).await?;
    let mut keyed: Vec<(u64, String)> = children
        .into_iter()
        .filter_map(|c| markers.iter().find_map(|m| sequence(&c, m)).map(|s| (s, c)))
        .collect();
    keyed.sort();
    Ok(keyed.into_iter().map(|(_, c)| c).collect())
}

/// Waits until `path` is deleted (or changed: the caller re-checks). Returns at once, with
/// `false`, if it is already gone; `true` when a watch notification woke us. Uses getData with
/// a watch, as Curator does, so each waiter holds one watch.
pub(crate) async fn wait_for_change(zk: &Client, path: &str) -> Result<bool> {
    wait_for_change_observed(zk, path, || {}).await
}

/// As [`wait_for_change`], calling `armed` once the watch is registered.
pub(crate) async fn wait_for_change_observed(
    zk: &Client,
    path: &str,
    armed: impl FnOnce(),
) -> Result<bool> {
    match zk.get_data_w(path).await {
        Ok((_, _, watch)) => {
            armed();
            let event = watch.await;
            if event.event_type == EventType::None {
                // The session ended while waiting.
                return Err(Error::keeper(
                    match event.state {
                        crate::KeeperState::AuthFailed => ErrorCode::AuthFailed,
                        _ => ErrorCode::SessionExpired,
                    },
                    path,
                ));
            }
            Ok(true)
        }
        Err(e) if e.code() == ErrorCode::NoNode => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_follows_the_marker() {
        assert_eq!(sequence("_c_ab-cd-lock-0000000042", "lock-"), Some(42));
        assert_eq!(sequence("_c_ab-latch-0000000001", "latch-"), Some(1));
        assert_eq!(sequence("other", "lock-"), None);
        let id = uuid();
        assert_eq!(id.len(), 36);
        assert_ne!(id, uuid());
    }
}
