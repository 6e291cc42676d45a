//! Znode path syntax, as `PathUtils.validatePath` defines it.

/// Checks a path: absolute, no trailing slash (except the root), no empty, `.` or `..`
/// component, and none of the characters ZooKeeper forbids (NUL, controls, surrogates —
/// i.e. every character outside the Basic Multilingual Plane — private use, U+FFF0..U+FFFF).
pub fn validate_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("Path length must be > 0".into());
    }
    if !path.starts_with('/') {
        return Err("Path must start with / character".into());
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err("Path must not end with / character".into());
    }
    for component in path[1..].split('/') {
        if component.is_empty() {
            return Err(format!("empty node name in {path:?}"));
        }
        if component == "." || component == ".." {
            return Err(format!("relative paths not allowed in {path:?}"));
        }
        if let Some(c) = component.chars().find(|c| is_forbidden(*c)) {
            return Err(format!("invalid character {:?} in {path:?}", c));
        }
    }
    Ok(())
}

fn is_forbidden(c: char) -> bool {
    let c = c as u32;
    c == 0
        || (0x01..=0x1f).contains(&c)
        || (0x7f..=0x9f).contains(&c)
        || (0xe000..=0xf8ff).contains(&c)
        || (0xfff0..=0xffff).contains(&c)
        || c > 0xffff
}

/// The parent of a valid non-root path (`/a/b` → `/a`, `/a` → `/`).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a valid non-root path.
pub fn name_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    // Hot in snapshots (once per node): one exact allocation, no formatting machinery.
    let parent = if parent == "/" { "" } else { parent };
    let mut joined = String::with_capacity(parent.len() + 1 + child.len());
    joined.push_str(parent);
    joined.push('/');
    joined.push_str(child);
    joined
}

/// `path` followed by a sequential znode's suffix for `counter`, as ZooKeeper's
/// `String.format("%010d", counter)`: at least ten characters, a negative counter's sign first
/// and its digits zero-padded after it.
pub fn with_sequence_suffix(path: &str, counter: i32) -> String {
    // Hot under sequential creates: one exact allocation, no formatting machinery.
    let mut digits = [b'0'; 10];
    let mut left = counter.unsigned_abs();
    let mut used = 0;
    while left > 0 {
        used += 1;
        digits[digits.len() - used] = b'0' + (left % 10) as u8;
        left /= 10;
    }
    let width = if counter < 0 { 9 } else { 10 };
    let digits = &digits[digits.len() - used.max(width)..];
    let mut out = String::with_capacity(path.len() + 11);
    out.push_str(path);
    if counter < 0 {
        out.push('-');
    }
    for &d in digits {
        out.push(char::from(d));
    }
    out
}

/// The components of a path, root excluded.
pub fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_suffixes_are_formatted_as_zookeepers_percent_010d() {
        let counters = [
            0,
            1,
            9,
            10,
            123_456_789,
            999_999_999,
            1_000_000_000,
            i32::MAX,
            -1,
            -9,
            -10,
            -123_456_789,
            -999_999_999,
            -1_000_000_000,
            i32::MIN,
        ];
        for counter in counters
            .into_iter()
            .chain((-2_000..2_000).map(|k| k * 1_000_003))
        {
            assert_eq!(
                with_sequence_suffix("/q/m-", counter),
                format!("/q/m-{counter:010}"),
                "{counter}"
            );
        }
    }

    #[test]
    fn accepts_valid_paths() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a/.b",
            "/zookeeper/quota",
            "/ünï",
        ] {
            assert_eq!(validate_path(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn rejects_invalid_paths() {
        for p in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/a/..",
            "/a/./b",
            "/a\u{0}b",
            "/a\u{1}",
            "/\u{7f}",
            "/\u{e000}",
            "/\u{1F600}",
            "/\u{fff5}",
        ] {
            assert!(validate_path(p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn parents_and_names() {
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(parent_of("/a/b/c"), "/a/b");
        assert_eq!(name_of("/a/b/c"), "c");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
        assert_eq!(components("/a/b").collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(components("/").count(), 0);
    }
}
