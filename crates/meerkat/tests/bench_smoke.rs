//! `meerkat bench` works end to end: every scenario, in a seconds-long configuration, against
//! meerkat and the null server, writes a complete JSON report (a check of the output's shape,
//! never of speed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn run(scenario: &str, targets: &str) -> serde_json::Value {
    run_on(scenario, targets, 1)
}

/// Runs `scenario` with `servers` servers per target.
fn run_on(scenario: &str, targets: &str, servers: usize) -> serde_json::Value {
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-{scenario}-{servers}"));
    let _ = std::fs::remove_dir_all(&work);
    let out = work.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(["bench", scenario, "--tiny", "--target", targets])
        .args(["--servers", &servers.to_string()])
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(work.join("servers"))
        .status()
        .expect("run meerkat bench");
    assert!(status.success(), "meerkat bench {scenario} failed");
    let text = std::fs::read_to_string(out.join(format!("{scenario}.json"))).expect("JSON report");
    serde_json::from_str(&text).expect("well-formed JSON")
}

fn check_rows(report: &serde_json::Value, targets: &[&str]) {
    for key in ["scenario", "command", "date", "machine"] {
        assert!(
            report[key].as_str().is_some_and(|s| !s.is_empty()),
            "{key} missing"
        );
    }
    let rows = report["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    for row in rows {
        for t in targets {
            let v = row["values"][t]
                .as_f64()
                .unwrap_or_else(|| panic!("{t} missing in {row}"));
            assert!(v.is_finite() && v >= 0.0, "{row}");
        }
    }
}

fn check_plots(report: &serde_json::Value) {
    let plots = report["plots"].as_array().expect("plots");
    assert!(!plots.is_empty(), "every scenario draws at least one chart");
    for p in plots {
        let bytes = std::fs::read(p.as_str().expect("path")).expect("plot file");
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{p} is not a PNG");
    }
}

#[test]
fn every_scenario_writes_a_complete_report() {
    let with_null = ["meerkat", "null"];
    for scenario in [
        "sync-create",
        "sync-get",
        "read-ratio",
        "create-latency",
        "group-commit",
    ] {
        let r = run(scenario, "meerkat,null");
        check_rows(&r, &with_null);
        check_plots(&r);
        assert!(
            r["rows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|row| row["values"]["meerkat"].as_f64().unwrap() > 0.0),
            "{scenario}: meerkat measured nothing"
        );
    }
    for scenario in ["cpu", "queue", "barrier", "snapshot", "restart"] {
        let r = run(scenario, "meerkat");
        check_rows(&r, &["meerkat"]);
        check_plots(&r);
    }
}

/// The ensemble scenarios (and read-ratio on an ensemble) against three meerkat servers: every
/// row has meerkat's value, every chart is a PNG, and the failure scenarios report what they
/// promise (the timeline and the marks, the time to the next write).
#[test]
fn ensemble_scenarios_write_complete_reports() {
    let mut failures = serde_json::Value::Null;
    for scenario in [
        "read-ratio",
        "leader-only",
        "broadcast",
        "failures",
        "restore",
    ] {
        let r = run_on(scenario, "meerkat", 3);
        assert_eq!(r["servers"].as_u64(), Some(3), "{scenario}");
        check_rows(&r, &["meerkat"]);
        check_plots(&r);
        for p in r["plots"].as_array().unwrap() {
            assert!(p.as_str().unwrap().ends_with("-3servers.png"), "{p}");
        }
        if scenario == "failures" {
            failures = r;
        }
    }
    let r = failures;
    let details = &r["details"]["meerkat"];
    assert_eq!(details["marks"].as_array().map(Vec::len), Some(4));
    let timeline = details["result"]["ops_per_sec"]
        .as_array()
        .expect("timeline");
    assert!(timeline.iter().any(|v| v.as_f64().unwrap() > 0.0));
    assert!(details["result"]["leader_kill_to_write_ms"]
        .as_f64()
        .is_some());
    let metrics: Vec<&str> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["metric"].as_str().unwrap())
        .collect();
    assert!(metrics.contains(&"leader kill→write ms"), "{metrics:?}");
}
