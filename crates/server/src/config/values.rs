//! Value parsers. Each returns the reason for rejection as text; the caller adds file, line and
//! key. Integer syntax is Java's `Integer.parseInt`/`Long.parseLong` (optional sign, ASCII
//! digits, nothing else), and ranges follow the Java type ZooKeeper stores the value in, so a
//! file ZooKeeper accepts is accepted here.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

/// Largest value of a Java `int`.
pub(super) const JAVA_INT_MAX: u64 = i32::MAX as u64;
/// Largest value of a Java `long`.
pub(super) const JAVA_LONG_MAX: u64 = i64::MAX as u64;

/// An integer in `min..=max`, with `what` ("a positive integer") naming the expectation.
fn integer_in(value: &str, min: i64, max: u64, what: &str) -> Result<u64, String> {
    let reject = || {
        let hint = if value.contains('#') {
            " (comments must be on their own line)"
        } else {
            ""
        };
        format!("expected {what} no larger than {max}{hint}")
    };
    let parsed: i128 = value.parse().map_err(|_| reject())?;
    if parsed < i128::from(min) || parsed > i128::from(max) {
        return Err(reject());
    }
    u64::try_from(parsed).map_err(|_| reject())
}

/// 1 ..= Java int max.
pub(super) fn positive_int(value: &str) -> Result<u32, String> {
    let parsed = integer_in(value, 1, JAVA_INT_MAX, "a positive integer")?;
    u32::try_from(parsed).map_err(|error| error.to_string())
}

/// How many threads a pool may have: 1 ..= [`THREADS_MAX`].
pub(super) fn thread_count(value: &str) -> Result<u32, String> {
    let parsed = integer_in(value, 1, THREADS_MAX, "an integer from 1 to 1024")?;
    u32::try_from(parsed).map_err(|error| error.to_string())
}

/// A rest between busy snapshots, in ms: 0 ..= a minute. Longer would be a loss window no
/// diskless user expects, more likely a typo for seconds.
pub(super) fn rest_ms(value: &str) -> Result<u64, String> {
    integer_in(
        value,
        0,
        REST_MS_MAX,
        "a number of milliseconds from 0 to 60000",
    )
}

const REST_MS_MAX: u64 = 60_000;

/// More threads than this is a typo, not a machine.
const THREADS_MAX: u64 = 1024;

/// 0 ..= Java int max.
pub(super) fn non_negative_int(value: &str) -> Result<u32, String> {
    let parsed = integer_in(value, 0, JAVA_INT_MAX, "a non-negative integer")?;
    u32::try_from(parsed).map_err(|error| error.to_string())
}

/// 0 ..= `max`, for Java longs (or narrower when a later multiplication must not overflow).
pub(super) fn non_negative_long(value: &str, max: u64) -> Result<u64, String> {
    integer_in(value, 0, max, "a non-negative integer")
}

/// Any Java `int`, negative included, for ignored keys ZooKeeper parses with `parseInt`.
pub(super) fn java_int(value: &str) -> Result<i32, String> {
    value
        .parse()
        .map_err(|_| "expected an integer (Java int)".to_string())
}

/// Any Java `long`, for ignored keys ZooKeeper parses with `parseLong`.
pub(super) fn java_long(value: &str) -> Result<i64, String> {
    value
        .parse()
        .map_err(|_| "expected an integer (Java long)".to_string())
}

/// A TCP port, 1 ..= 65535.
pub(super) fn port(value: &str) -> Result<u16, String> {
    match value.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err("expected a port number between 1 and 65535".to_string()),
    }
}

/// A session timeout bound in milliseconds; `-1` means "derive it from tickTime" (`None`).
pub(super) fn session_timeout(value: &str) -> Result<Option<u32>, String> {
    if value == "-1" {
        return Ok(None);
    }
    let parsed = integer_in(value, 0, JAVA_INT_MAX, "-1 or a non-negative integer")?;
    u32::try_from(parsed)
        .map(Some)
        .map_err(|error| error.to_string())
}

/// `true`/`false` in any case, as `QuorumPeerConfig.parseBoolean` accepts.
pub(super) fn java_bool(value: &str) -> Result<bool, String> {
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err("expected true or false".to_string())
    }
}

/// `yes`/`no`. ZooKeeper disables forceSync only for exactly `no` and silently keeps it on for
/// anything else; meerkat refuses anything else so a typo cannot hide a durability setting.
pub(super) fn yes_no(value: &str) -> Result<bool, String> {
    match value {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("expected yes or no".to_string()),
    }
}

/// An IP literal (IPv6 optionally in brackets) or `localhost`. Other host names are refused
/// rather than resolved: parsing stays free of DNS lookups.
pub(super) fn ip_address(value: &str) -> Result<IpAddr, String> {
    if value.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    let literal = value
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(value);
    literal.parse().map_err(|_| {
        "expected an IP address such as 0.0.0.0, 127.0.0.1 or ::1 (host names are not resolved)"
            .to_string()
    })
}

/// A directory; must not be empty.
pub(super) fn directory(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("expected a directory path".to_string());
    }
    Ok(PathBuf::from(value))
}

/// `DigestAuthenticationProvider.superDigest`: `user:base64(sha1(user:password))`.
pub(crate) fn super_digest(value: &str) -> Result<String, String> {
    match value.split_once(':') {
        Some((user, digest)) if !user.is_empty() && !digest.is_empty() => Ok(value.to_string()),
        _ => Err(
            "expected user:digest as printed by DigestAuthenticationProvider, e.g. super:<base64 sha1>"
                .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_java_syntax() {
        assert_eq!(positive_int("2000"), Ok(2000));
        assert_eq!(positive_int("+7"), Ok(7));
        assert_eq!(positive_int("2147483647"), Ok(i32::MAX as u32));
        for bad in [
            "",
            " 1",
            "1 ",
            "0",
            "-1",
            "1.5",
            "1e3",
            "0x10",
            "1_000",
            "2147483648",
            "abc",
        ] {
            assert!(positive_int(bad).is_err(), "{bad:?}");
        }
        assert_eq!(non_negative_int("0"), Ok(0));
        assert_eq!(non_negative_int("-0"), Ok(0));
        assert!(non_negative_int("-1").is_err());
        assert_eq!(
            non_negative_long("9223372036854775807", JAVA_LONG_MAX),
            Ok(JAVA_LONG_MAX)
        );
        assert!(non_negative_long("9223372036854775808", JAVA_LONG_MAX).is_err());
        assert!(non_negative_long("99999999999999999999999999999999999999999", 5).is_err());
    }

    #[test]
    fn integer_errors_explain_and_hint_at_inline_comments() {
        assert_eq!(
            positive_int("abc"),
            Err("expected a positive integer no larger than 2147483647".to_string())
        );
        let error = positive_int("2000 # two seconds").expect_err("comment");
        assert!(error.contains("own line"), "{error}");
    }

    #[test]
    fn java_ints_and_longs_allow_negatives() {
        assert_eq!(java_int("-1"), Ok(-1));
        assert!(java_int("2147483648").is_err());
        assert_eq!(java_long("-9223372036854775808"), Ok(i64::MIN));
        assert!(java_long("x").is_err());
    }

    #[test]
    fn ports() {
        assert_eq!(port("2181"), Ok(2181));
        assert_eq!(port("65535"), Ok(65535));
        for bad in ["0", "65536", "-1", "", "http"] {
            assert!(port(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn session_timeouts_accept_minus_one() {
        assert_eq!(session_timeout("-1"), Ok(None));
        assert_eq!(session_timeout("0"), Ok(Some(0)));
        assert_eq!(session_timeout("40000"), Ok(Some(40000)));
        assert!(session_timeout("-2").is_err());
    }

    #[test]
    fn booleans() {
        assert_eq!(java_bool("TRUE"), Ok(true));
        assert_eq!(java_bool("False"), Ok(false));
        assert!(java_bool("yes").is_err());
        assert_eq!(yes_no("yes"), Ok(true));
        assert_eq!(yes_no("no"), Ok(false));
        for bad in ["NO", "true", "", "nope"] {
            assert!(yes_no(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ip_addresses() {
        assert_eq!(ip_address("0.0.0.0"), Ok(IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
        assert_eq!(ip_address("localhost"), Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(ip_address("::1"), ip_address("[::1]"));
        assert!(ip_address("::1").is_ok());
        assert!(ip_address("zk1.example.com").is_err());
        assert!(ip_address("").is_err());
    }

    #[test]
    fn directories_and_digests() {
        assert_eq!(directory("/var/zk"), Ok(PathBuf::from("/var/zk")));
        assert!(directory("").is_err());
        assert!(super_digest("super:abc=").is_ok());
        for bad in ["super", ":abc", "super:", ""] {
            assert!(super_digest(bad).is_err(), "{bad:?}");
        }
    }
}
