//! `meerkat bench` works end to end: every scenario, in a seconds-long configuration, against
//! meerkat and the null server, writes a complete JSON report (a check of the output's shape,
//! never of speed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn run(scenario: &str, targets: &str) -> serde_json::Value {
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-{scenario}"));
    let _ = std::fs::remove_dir_all(&work);
    let out = work.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(["bench", scenario, "--tiny", "--target", targets])
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

#[test]
fn every_scenario_writes_a_complete_report() {
    let r = run("sync-create", "meerkat,null");
    check_rows(&r, &["meerkat", "null"]);
    assert!(r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|row| row["metric"] == "ops/s" && row["values"]["meerkat"].as_f64().unwrap() > 0.0));
    check_rows(&run("group-commit", "meerkat,null"), &["meerkat", "null"]);
    check_rows(&run("snapshot", "meerkat"), &["meerkat"]);
    check_rows(&run("restart", "meerkat"), &["meerkat"]);
}
