//! ZooKeeper paths: validation (`PathUtils.validatePath`) and the chroot a connect string may
//! carry (`/app` in `host:2181/app`), which the client adds to every path it sends and strips
//! from every path it receives.

use crate::error::{Error, Result};

/// Checks `path` as `PathUtils.validatePath` does. A sequential create may end in `/` (the
/// server appends the counter), so `sequential` relaxes that one rule.
pub fn validate(path: &str, sequential: bool) -> Result<()> {
    let invalid = |reason| {
        Err(Error::InvalidPath {
            path: path.to_string(),
            reason,
        })
    };
    if path.is_empty() {
        return invalid("path length must be > 0");
    }
    if !path.starts_with('/') {
        return invalid("path must start with / character");
    }
    if path.len() == 1 {
        return Ok(());
    }
    let checked = path;
    if !sequential && checked.ends_with('/') {
        return invalid("path must not end with / character");
    }
    for component in checked[1..].split('/') {
        if component.is_empty() {
            // A trailing empty component is the sequential prefix case handled above.
            if sequential && checked.ends_with('/') {
                continue;
            }
            return invalid("empty node name specified");
        }
        if component == "." || component == ".." {
            return invalid("relative paths not allowed");
        }
    }
    if path.chars().any(is_forbidden_char) {
        return invalid("invalid character");
    }
    Ok(())
}

fn is_forbidden_char(c: char) -> bool {
    let c = c as u32;
    c == 0
        || (0x01..=0x1f).contains(&c)
        || (0x7f..=0x9f).contains(&c)
        || (0xd800..=0xf8ff).contains(&c)
        || (0xfff0..=0xffff).contains(&c)
}

/// The chroot of a session: a prefix every server-side path carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chroot {
    /// `None` for no chroot; otherwise a valid path other than `/`.
    prefix: Option<String>,
}

impl Chroot {
    /// A chroot for `prefix`; `/` or empty means none.
    pub fn new(prefix: &str) -> Result<Chroot> {
        if prefix.is_empty() || prefix == "/" {
            return Ok(Chroot { prefix: None });
        }
        validate(prefix, false)?;
        Ok(Chroot {
            prefix: Some(prefix.to_string()),
        })
    }

    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The server path for a client path.
    pub fn to_server(&self, client_path: &str) -> String {
        match &self.prefix {
            None => client_path.to_string(),
            Some(prefix) if client_path == "/" => prefix.clone(),
            Some(prefix) => format!("{prefix}{client_path}"),
        }
    }

    /// The client path for a server path (`ClientCnxn.stripChroot`): paths outside the chroot
    /// (such as `/zookeeper/...`) are returned unchanged.
    pub fn to_client(&self, server_path: &str) -> String {
        let Some(prefix) = &self.prefix else {
            return server_path.to_string();
        };
        match server_path.strip_prefix(prefix.as_str()) {
            Some("") => "/".to_string(),
            Some(rest) if rest.starts_with('/') => rest.to_string(),
            _ => server_path.to_string(),
        }
    }
}

/// The parent of `path` (`/` for a top-level node and for `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// `parent` + `/` + `child`, without doubling the slash under the root.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The last component of `path`.
pub fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_matches_path_utils() {
        assert!(validate("/", false).is_ok());
        assert!(validate("/a/b", false).is_ok());
        assert!(validate("", false).is_err());
        assert!(validate("a", false).is_err());
        assert!(validate("/a/", false).is_err());
        assert!(validate("/a/", true).is_ok());
        assert!(validate("//a", false).is_err());
        assert!(validate("/a/./b", false).is_err());
        assert!(validate("/a/../b", false).is_err());
        assert!(validate("/a\u{0}", false).is_err());
    }

    #[test]
    fn chroot_adds_and_strips_the_prefix() {
        let chroot = Chroot::new("/app").expect("valid");
        assert_eq!(chroot.to_server("/"), "/app");
        assert_eq!(chroot.to_server("/x"), "/app/x");
        assert_eq!(chroot.to_client("/app"), "/");
        assert_eq!(chroot.to_client("/app/x"), "/x");
        assert_eq!(chroot.to_client("/apple"), "/apple");
        assert_eq!(chroot.to_client("/zookeeper/config"), "/zookeeper/config");
        assert_eq!(Chroot::new("/").expect("root").to_server("/x"), "/x");
    }

    #[test]
    fn parent_join_and_name() {
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(name("/a/b"), "b");
    }
}
