//! zkCli's output formats: Stat (`StatPrinter`), dates (`java.util.Date.toString` in UTC),
//! watch events (`WatchedEvent.toString`), lists (`List.toString`), errors
//! (`CliWrapperException`).

use client::{Error, ErrorCode, Stat, WatchedEvent};

pub fn stat(s: &Stat) -> String {
    format!(
        "cZxid = 0x{:x}\nctime = {}\nmZxid = 0x{:x}\nmtime = {}\npZxid = 0x{:x}\ncversion = {}\n\
         dataVersion = {}\naclVersion = {}\nephemeralOwner = 0x{:x}\ndataLength = {}\nnumChildren = {}\n",
        s.czxid,
        java_date(s.ctime),
        s.mzxid,
        java_date(s.mtime),
        s.pzxid,
        s.cversion,
        s.version,
        s.aversion,
        s.ephemeral_owner,
        s.data_length,
        s.num_children
    )
}

/// `new Date(ms).toString()` with the time zone fixed to UTC: `Sun Nov 22 07:47:46 UTC 2026`.
pub fn java_date(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `WatchedEvent.toString()`; a session event has path `null`.
pub fn event(e: &WatchedEvent) -> String {
    let path = if e.path.is_empty() { "null" } else { &e.path };
    format!(
        "WatchedEvent state:{:?} type:{:?} path:{} zxid: {}",
        e.state, e.event_type, path, e.zxid
    )
}

/// Java's `List.toString()`: `[a, b]`.
pub fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// The message zkCli prints for a failed command (`CliWrapperException.getMessage`).
pub fn error(e: &Error) -> String {
    let path = e.path();
    match e {
        Error::Keeper { code, .. } => match code {
            ErrorCode::NoNode => format!("Node does not exist: {path}"),
            ErrorCode::NoChildrenForEphemerals => {
                format!("Ephemerals cannot have children: {path}")
            }
            ErrorCode::NodeExists => format!("Node already exists: {path}"),
            ErrorCode::NotEmpty => format!("Node not empty: {path}"),
            ErrorCode::NotReadOnly => format!("Not a read-only call: {path}"),
            ErrorCode::InvalidAcl => format!("Acl is not valid : {path}"),
            ErrorCode::NoAuth => format!("Insufficient permission : {path}"),
            ErrorCode::BadArguments => format!("Arguments are not valid : {path}"),
            ErrorCode::BadVersion => format!("version No is not valid : {path}"),
            ErrorCode::QuotaExceeded => format!("Quota has exceeded : {path}"),
            _ => e.to_string(),
        },
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_java() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        // 2026-11-22T07:47:46Z
        assert_eq!(java_date(1_795_333_666_000), "Sun Nov 22 07:47:46 UTC 2026");
        assert_eq!(java_date(951_782_400_000), "Tue Feb 29 00:00:00 UTC 2000");
    }

    #[test]
    fn errors_match_zkcli() {
        let e = Error::keeper(ErrorCode::NoNode, "/x");
        assert_eq!(error(&e), "Node does not exist: /x");
        let e = Error::keeper(ErrorCode::ConnectionLoss, "/x");
        assert_eq!(error(&e), "KeeperErrorCode = ConnectionLoss for /x");
    }
}
