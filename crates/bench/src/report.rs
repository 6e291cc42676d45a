//! Results: a table on stdout with a ratio column (meerkat ÷ ZooKeeper, and meerkat as a share
//! of the `null` ceiling), and the same rows as JSON for docs and plots.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// One measured quantity for each target that ran.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub case: String,
    pub metric: String,
    /// Bigger is better (throughput) or smaller (latency, time): decides nothing but the note.
    pub higher_is_better: bool,
    pub values: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: String,
    pub command: String,
    pub date: String,
    pub machine: String,
    /// Servers per target (1 = standalone); `null` is always standalone.
    pub servers: usize,
    pub rows: Vec<Row>,
    /// Raw per-target results, scenario-specific.
    pub details: serde_json::Value,
    /// PNG charts written beside the JSON.
    pub plots: Vec<String>,
}

impl Report {
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "scenario {} — {}", self.scenario, self.machine);
        if self.servers > 1 {
            let _ = writeln!(
                out,
                "{} servers per target on loopback (null: one standalone server)",
                self.servers
            );
        }
        let _ = writeln!(
            out,
            "{:<28} {:<22} {:>12} {:>12} {:>9} {:>12} {:>9}",
            "case", "metric", "meerkat", "zookeeper", "mk/zk", "null", "mk/null"
        );
        for row in &self.rows {
            let v = |t: &str| row.values.get(t).copied();
            let fmt = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b != 0.0 => format!("{:.2}", a / b),
                _ => "-".into(),
            };
            let _ = writeln!(
                out,
                "{:<28} {:<22} {:>12} {:>12} {:>9} {:>12} {:>9}",
                row.case,
                row.metric,
                fmt(v("meerkat")),
                fmt(v("zookeeper")),
                ratio(v("meerkat"), v("zookeeper")),
                fmt(v("null")),
                ratio(v("meerkat"), v("null")),
            );
        }
        out
    }

    pub fn write_json(&self, dir: &Path) -> anyhow::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.json", self.scenario));
        std::fs::write(&path, serde_json::to_string_pretty(self)?)?;
        Ok(path)
    }
}

/// "<cores> cores, <model>, <memory>" from /proc, for the record.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |m| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    format!("{cores} cores, {model}, {} GiB RAM", mem_kb / (1 << 20))
}

pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
