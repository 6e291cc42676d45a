//! `mntr`'s figures in the Prometheus text format (0.0.4) as ZooKeeper's
//! `PrometheusMetricsProvider` writes it with its Java client (simpleclient 0.9): ZooKeeper's
//! metric names without the `zk_` of `mntr`, `# HELP` equal to the name, `# TYPE` as ZooKeeper
//! registers the metric (gauge, counter or summary), values printed as Java doubles.
//!
//! Summaries: ZooKeeper's have a `quantile="0.5"` sample (and 0.9 and 0.99 for its "advanced"
//! ones; `fsynctime` and `snapshottime` are basic), `_count` and `_sum`. The median is `mntr`'s
//! `p50_` line, taken over the latest 1,024 observations (ZooKeeper's over the last ten
//! minutes), and `NaN` before the first, as ZooKeeper shows a summary with no recent
//! observation. `startup_txns_loaded` and `startup_snap_load_time` are one observation each,
//! as in ZooKeeper.
//!
//! No maintained Rust metrics crate writes summaries in this format (prometheus-client writes
//! OpenMetrics without summaries, `prometheus` has none), so the few lines are written here.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Metrics ZooKeeper registers as summaries, from `mntr`'s avg/min/max/cnt/sum lines.
const SUMMARIES: &[&str] = &["fsynctime", "snapshottime"];

/// Single observations ZooKeeper reports as summaries.
const ONE_OBSERVATION_SUMMARIES: &[&str] = &["startup_txns_loaded", "startup_snap_load_time"];

/// meerkat's own cumulative figures (no ZooKeeper counterpart): counters.
const COUNTERS: &[&str] = &[
    "election_count",
    "full_house_elections",
    "digest_checks",
    "forwarded_requests",
    "meerkat_log_records",
    "meerkat_log_groups",
    "unsuccessful_handshake",
];

/// ZooKeeper's quota metrics (`QuotaMetricsUtils`): four gauge sets, then a counter set, one
/// value per top namespace. `mntr` prints them as `zk_<namespace>_<metric>` (as ZooKeeper's
/// default provider does); here each is a family with a `key` label, as ZooKeeper's
/// Prometheus provider writes them, its `# TYPE` line there even while no quota exists.
pub const QUOTA_METRICS: [&str; 5] = [
    "quota_count_limit_per_namespace",
    "quota_bytes_limit_per_namespace",
    "quota_count_usage_per_namespace",
    "quota_bytes_usage_per_namespace",
    "quota_exceeded_error_per_namespace",
];

/// The quota metric and namespace of an `mntr` key (without `zk_`).
fn quota_metric(key: &str) -> Option<(usize, &str)> {
    QUOTA_METRICS.iter().enumerate().find_map(|(i, metric)| {
        let namespace = key.strip_suffix(metric)?.strip_suffix('_')?;
        (!namespace.is_empty()).then_some((i, namespace))
    })
}

/// A label value as the Prometheus text format escapes it.
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Text lines of `mntr` that are not numbers (version, state, durability mode).
fn number(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok()
}

/// A Java `Double.toString`-like rendering: `5.0`, `0.25`, `NaN`.
fn java_double(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v:?}")
    }
}

fn header(out: &mut String, name: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {name}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Renders `mntr` output (`zk_<key>\t<value>` lines) as a Prometheus exposition.
pub fn render(mntr: &str) -> String {
    let values: BTreeMap<&str, &str> = mntr
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter_map(|(k, v)| Some((k.strip_prefix("zk_")?, v)))
        .collect();
    let mut out = String::with_capacity(8192);
    for name in SUMMARIES {
        let (Some(count), Some(sum)) = (
            values
                .get(format!("cnt_{name}").as_str())
                .and_then(|v| number(v)),
            values
                .get(format!("sum_{name}").as_str())
                .and_then(|v| number(v)),
        ) else {
            continue;
        };
        let median = values
            .get(format!("p50_{name}").as_str())
            .and_then(|v| number(v))
            .unwrap_or(f64::NAN);
        summary(&mut out, name, median, count, sum);
    }
    for name in ONE_OBSERVATION_SUMMARIES {
        if let Some(v) = values.get(name).and_then(|v| number(v)) {
            summary(&mut out, name, v, 1.0, v);
        }
    }
    let summarised = |key: &str| {
        ["avg_", "min_", "max_", "cnt_", "sum_", "p50_"]
            .iter()
            .any(|p| {
                key.strip_prefix(p)
                    .is_some_and(|rest| SUMMARIES.contains(&rest))
            })
            || ONE_OBSERVATION_SUMMARIES.contains(&key)
    };
    let mut quotas: [Vec<(&str, f64)>; 5] = Default::default();
    for (key, value) in &values {
        let Some(v) = number(value) else { continue };
        if summarised(key) {
            continue;
        }
        if let Some((i, namespace)) = quota_metric(key) {
            quotas[i].push((namespace, v));
            continue;
        }
        let kind = if COUNTERS.contains(key) {
            "counter"
        } else {
            "gauge"
        };
        header(&mut out, key, kind);
        let _ = writeln!(out, "{key} {}", java_double(v));
    }
    for (i, samples) in quotas.iter().enumerate() {
        let name = QUOTA_METRICS[i];
        header(&mut out, name, if i == 4 { "counter" } else { "gauge" });
        for (namespace, v) in samples {
            let namespace = label_value(namespace);
            let _ = writeln!(out, "{name}{{key=\"{namespace}\",}} {}", java_double(*v));
        }
    }
    out
}

fn summary(out: &mut String, name: &str, median: f64, count: f64, sum: f64) {
    header(out, name, "summary");
    let _ = writeln!(out, "{name}{{quantile=\"0.5\",}} {}", java_double(median));
    let _ = writeln!(out, "{name}_count {}", java_double(count));
    let _ = writeln!(out, "{name}_sum {}", java_double(sum));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_counters_and_summaries_with_zookeeper_names() {
        let mntr = "zk_version\t3.9.3-meerkat\nzk_server_state\tstandalone\nzk_znode_count\t5\n\
                    zk_avg_latency\t0.2500\nzk_avg_fsynctime\t2.0\nzk_cnt_fsynctime\t4\n\
                    zk_sum_fsynctime\t8\nzk_max_fsynctime\t3\nzk_startup_txns_loaded\t12\n\
                    zk_digest_checks\t7\n";
        let text = render(mntr);
        assert!(
            text.contains("# TYPE znode_count gauge\nznode_count 5.0\n"),
            "{text}"
        );
        assert!(text.contains("avg_latency 0.25\n"), "{text}");
        assert!(text.contains(
            "# TYPE fsynctime summary\nfsynctime{quantile=\"0.5\",} NaN\nfsynctime_count 4.0\nfsynctime_sum 8.0\n"
        ), "{text}");
        assert!(text.contains("startup_txns_loaded_count 1.0\nstartup_txns_loaded_sum 12.0\n"));
        assert!(text.contains("# TYPE digest_checks counter\ndigest_checks 7.0\n"));
        assert!(
            !text.contains("avg_fsynctime")
                && !text.contains("version")
                && !text.contains("server_state")
        );
    }

    #[test]
    fn quota_metrics_are_families_labelled_by_namespace() {
        let mntr = "zk_znode_count\t5\nzk_app_quota_count_limit_per_namespace\t10\n\
                    zk_my_app_quota_count_limit_per_namespace\t-1\n\
                    zk_app_quota_bytes_usage_per_namespace\t42\n\
                    zk_a\"b_quota_exceeded_error_per_namespace\t2\n";
        let text = render(mntr);
        assert!(text.contains(
            "# TYPE quota_count_limit_per_namespace gauge\n\
             quota_count_limit_per_namespace{key=\"app\",} 10.0\n\
             quota_count_limit_per_namespace{key=\"my_app\",} -1.0\n"
        ));
        assert!(text.contains("quota_bytes_usage_per_namespace{key=\"app\",} 42.0\n"));
        assert!(text.contains(
            "# TYPE quota_exceeded_error_per_namespace counter\n\
             quota_exceeded_error_per_namespace{key=\"a\\\"b\",} 2.0\n"
        ));
        // The families are there before any quota, as ZooKeeper registers them at start.
        assert!(text.contains("# TYPE quota_bytes_limit_per_namespace gauge\n"));
        assert!(!text.contains("app_quota"));
    }

    #[test]
    fn the_median_comes_from_the_p50_line() {
        let mntr = "zk_cnt_fsynctime\t4\nzk_sum_fsynctime\t8\nzk_p50_fsynctime\t1.250\n\
                    zk_cnt_snapshottime\t0\nzk_sum_snapshottime\t0\nzk_p50_snapshottime\tNaN\n";
        let text = render(mntr);
        assert!(
            text.contains("fsynctime{quantile=\"0.5\",} 1.25\nfsynctime_count 4.0\n"),
            "{text}"
        );
        assert!(
            text.contains("snapshottime{quantile=\"0.5\",} NaN\n"),
            "{text}"
        );
        assert!(!text.contains("p50_"), "{text}");
    }
}
