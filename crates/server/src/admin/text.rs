//! Reading the four-letter words' text back into values, for the AdminServer's JSON. The
//! texts are meerkat's own (`crate::four_letter`), in ZooKeeper's formats.

use serde_json::{json, Map, Value};

/// `key<sep>value` lines as pairs.
pub fn pairs<'a>(text: &'a str, sep: char) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
    text.lines().filter_map(move |l| l.split_once(sep))
}

/// A number when it looks like one (integers stay integers), else a string.
pub fn scalar(value: &str) -> Value {
    let v = value.trim();
    if let Ok(i) = v.parse::<i64>() {
        return json!(i);
    }
    match v.parse::<f64>() {
        Ok(f) if f.is_finite() => json!(f),
        _ => json!(v),
    }
}

/// A `0x`-hex session id as the decimal number ZooKeeper's JSON uses.
pub fn session_id(hex: &str) -> Option<i64> {
    u64::from_str_radix(hex.trim().strip_prefix("0x")?, 16)
        .ok()
        .map(|v| v as i64)
}

/// `srvr`'s `Label: value` lines.
pub fn srvr_field<'a>(srvr: &'a str, label: &str) -> Option<&'a str> {
    srvr.lines()
        .find_map(|l| l.strip_prefix(label)?.strip_prefix(": "))
}

/// One `cons` / `stat` client line: ` /ip:port[interest](k=v,...)`.
pub struct ConnLine<'a> {
    pub address: &'a str,
    pub interest_ops: i64,
    pub fields: Vec<(&'a str, &'a str)>,
}

pub fn conn_line(line: &str) -> Option<ConnLine<'_>> {
    let rest = line.trim_start().strip_prefix('/')?;
    let (address, rest) = rest.split_once('[')?;
    let (interest, rest) = rest.split_once("](")?;
    let fields = rest
        .strip_suffix(')')?
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .collect();
    Some(ConnLine {
        address,
        interest_ops: interest.parse().ok()?,
        fields,
    })
}

/// `name\n\tvalue\n\tvalue\n...` blocks (wchc, wchp, the ephemeral part of dump).
pub fn blocks(text: &str) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(item) = line.strip_prefix('\t') {
            if let Some((_, items)) = out.last_mut() {
                items.push(item);
            }
        } else if !line.is_empty() {
            out.push((line.trim_end_matches(':'), Vec::new()));
        }
    }
    out
}

/// Inverse of `java.util.Date.toString()` in UTC (`Thu Nov 26 10:24:06 UTC 2026`): epoch ms.
pub fn java_date_ms(text: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let f: Vec<&str> = text.split_whitespace().collect();
    let [_, month, day, time, _zone, year] = f.as_slice() else {
        return None;
    };
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400) + h * 3600 + m * 60 + s) * 1000)
}

/// An object from `(key, value)` pairs.
pub fn object<'a>(entries: impl IntoIterator<Item = (&'a str, Value)>) -> Map<String, Value> {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_dates_read_back() {
        assert_eq!(java_date_ms("Thu Jan 01 00:00:00 UTC 1970"), Some(0));
        assert_eq!(
            java_date_ms("Thu Nov 26 10:24:06 UTC 2026"),
            Some(1_795_688_646_000)
        );
    }

    #[test]
    fn connection_lines() {
        let line = " /127.0.0.1:58326[1](queued=0,recved=4,sent=4,sid=0x100,lop=GETD)";
        let c = conn_line(line).expect("parses");
        assert_eq!(c.address, "127.0.0.1:58326");
        assert_eq!(c.interest_ops, 1);
        assert_eq!(c.fields[3], ("sid", "0x100"));
    }
}
