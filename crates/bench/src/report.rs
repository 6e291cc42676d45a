//! Results: a table on stdout with ratio columns (meerkat ÷ ZooKeeper, meerkat-diskless ÷
//! ZooKeeper, diskless ÷ durable meerkat, and each meerkat as a share of the `null` ceiling),
//! and the same rows as JSON for docs and plots. A column appears only when its targets ran,
//! so a run without the diskless target prints the table it always printed.

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
            if let Some(threads) = crate::target::threads_per_server(self.servers) {
                let _ = writeln!(
                    out,
                    "each server sized for {threads} core(s): meerkat serverThreads={threads}, \
                     ZooKeeper -XX:ActiveProcessorCount={threads}"
                );
            }
        }
        let columns = self.columns();
        let _ = write!(out, "{:<28} {:<22}", "case", "metric");
        for column in &columns {
            let _ = write!(out, " {:>w$}", column.header(), w = column.width());
        }
        let _ = writeln!(out);
        for row in &self.rows {
            let _ = write!(out, "{:<28} {:<22}", row.case, row.metric);
            for column in &columns {
                let _ = write!(out, " {:>w$}", column.cell(row), w = column.width());
            }
            let _ = writeln!(out);
        }
        out
    }

    /// The table's columns: each target that has a value in some row, then each ratio whose
    /// two targets both do.
    fn columns(&self) -> Vec<Column> {
        let ran = |t: &str| self.rows.iter().any(|r| r.values.contains_key(t));
        let mut columns: Vec<Column> = COLUMN_TARGETS
            .iter()
            .filter(|t| ran(t.0))
            .map(|&(target, header)| Column::Value { target, header })
            .collect();
        columns.extend(RATIOS.iter().filter(|r| ran(r.0) && ran(r.1)).map(
            |&(over, under, header)| Column::Ratio {
                over,
                under,
                header,
            },
        ));
        columns
    }

    pub fn write_json(&self, dir: &Path) -> anyhow::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.json", self.scenario));
        std::fs::write(&path, serde_json::to_string_pretty(self)?)?;
        Ok(path)
    }
}

/// "<cores> cores, <model>, <memory>" from /proc, for the record.
/// Targets in table order, with their column headers.
const COLUMN_TARGETS: [(&str, &str); 8] = [
    ("meerkat", "meerkat"),
    ("meerkat-diskless", "mk-diskless"),
    ("zookeeper", "zookeeper"),
    ("kafka", "kafka"),
    ("artemis", "artemis"),
    ("baseline", "baseline"),
    ("baseline-diskless", "base-dl"),
    ("null", "null"),
];

/// Ratio columns: numerator ÷ denominator, with headers (mk = durable meerkat, dl = diskless
/// meerkat, zk = ZooKeeper, base = the `--baseline` binary (base-dl: in diskless mode); kafka and amq = the
/// queue-vs-brokers scenario's Kafka cluster and ActiveMQ Artemis pair).
const RATIOS: [(&str, &str, &str); 11] = [
    ("meerkat", "zookeeper", "mk/zk"),
    ("meerkat", "baseline", "mk/base"),
    ("meerkat-diskless", "baseline-diskless", "dl/base-dl"),
    ("meerkat-diskless", "zookeeper", "dl/zk"),
    ("meerkat-diskless", "meerkat", "dl/mk"),
    ("meerkat", "kafka", "mk/kafka"),
    ("meerkat-diskless", "kafka", "dl/kafka"),
    ("meerkat", "artemis", "mk/amq"),
    ("meerkat-diskless", "artemis", "dl/amq"),
    ("meerkat", "null", "mk/null"),
    ("meerkat-diskless", "null", "dl/null"),
];

enum Column {
    Value {
        target: &'static str,
        header: &'static str,
    },
    Ratio {
        over: &'static str,
        under: &'static str,
        header: &'static str,
    },
}

impl Column {
    fn header(&self) -> &'static str {
        match self {
            Column::Value { header, .. } | Column::Ratio { header, .. } => header,
        }
    }

    fn width(&self) -> usize {
        match self {
            Column::Value { .. } => 12,
            Column::Ratio { .. } => 9,
        }
    }

    /// The cell of `row`: "-" when a target has no value there (or the ratio divides by 0).
    fn cell(&self, row: &Row) -> String {
        let v = |t: &str| row.values.get(t).copied();
        match self {
            Column::Value { target, .. } => v(target).map_or("-".into(), |x| format!("{x:.1}")),
            Column::Ratio { over, under, .. } => match (v(over), v(under)) {
                (Some(a), Some(b)) if b != 0.0 => format!("{:.2}", a / b),
                _ => "-".into(),
            },
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: &[(&str, &[(&str, f64)])]) -> Report {
        Report {
            scenario: "sync-create".into(),
            command: "meerkat bench sync-create".into(),
            date: today(),
            machine: "2 cores".into(),
            servers: 3,
            rows: rows
                .iter()
                .map(|(case, values)| Row {
                    case: case.to_string(),
                    metric: "ops/s".into(),
                    higher_is_better: true,
                    values: values.iter().map(|(t, v)| (t.to_string(), *v)).collect(),
                })
                .collect(),
            details: serde_json::Value::Null,
            plots: Vec::new(),
        }
    }

    fn header(table: &str) -> Vec<&str> {
        let line = table
            .lines()
            .find(|l| l.starts_with("case"))
            .expect("header");
        line.split_whitespace().collect()
    }

    #[test]
    fn without_diskless_the_table_keeps_its_columns() {
        let r = report(&[(
            "1 client",
            &[("meerkat", 300.0), ("zookeeper", 100.0), ("null", 600.0)],
        )]);
        let t = r.table();
        assert_eq!(
            header(&t),
            [
                "case",
                "metric",
                "meerkat",
                "zookeeper",
                "null",
                "mk/zk",
                "mk/null"
            ]
        );
        assert!(t.contains("3.00"), "{t}");
        assert!(t.contains("0.50"), "{t}");
    }

    #[test]
    fn diskless_gets_ratios_against_zookeeper_and_durable_meerkat() {
        let r = report(&[
            (
                "1 client",
                &[
                    ("meerkat", 300.0),
                    ("meerkat-diskless", 3000.0),
                    ("zookeeper", 100.0),
                ],
            ),
            ("60 clients", &[("meerkat-diskless", 50.0)]),
        ]);
        let t = r.table();
        assert_eq!(
            header(&t),
            [
                "case",
                "metric",
                "meerkat",
                "mk-diskless",
                "zookeeper",
                "mk/zk",
                "dl/zk",
                "dl/mk"
            ]
        );
        let first = t.lines().find(|l| l.starts_with("1 client")).expect("row");
        let cells: Vec<&str> = first.split_whitespace().collect();
        // "1", "client", "ops/s", then the values and the ratios.
        assert_eq!(
            cells[3..],
            ["300.0", "3000.0", "100.0", "3.00", "30.00", "10.00"]
        );
        let second = t
            .lines()
            .find(|l| l.starts_with("60 clients"))
            .expect("row");
        assert_eq!(second.split_whitespace().filter(|c| *c == "-").count(), 5);
    }
}
