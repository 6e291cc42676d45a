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
    bench(scenario, targets, servers).report
}

/// What one `meerkat bench` run left.
struct Run {
    report: serde_json::Value,
    /// The table it printed.
    stdout: String,
    /// Where the servers' directories were (`<scenario>/<case>/<target>/…`).
    work: std::path::PathBuf,
}

fn bench(scenario: &str, targets: &str, servers: usize) -> Run {
    bench_with(scenario, targets, servers, &[])
}

/// As [`bench`], with more arguments for `meerkat bench`.
fn bench_with(scenario: &str, targets: &str, servers: usize, extra: &[&str]) -> Run {
    let tag = targets.replace(',', "+");
    let work = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-{scenario}-{servers}-{tag}"));
    let _ = std::fs::remove_dir_all(&work);
    let out = work.join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(["bench", scenario, "--tiny", "--target", targets])
        .args(["--servers", &servers.to_string()])
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(work.join("servers"))
        .args(extra)
        .output()
        .expect("run meerkat bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "meerkat bench {scenario} --target {targets} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(out.join(format!("{scenario}.json"))).expect("JSON report");
    let report = serde_json::from_str(&text).expect("well-formed JSON");
    Run {
        report,
        stdout,
        work: work.join("servers"),
    }
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
    for scenario in ["queue", "barrier", "snapshot", "restart"] {
        let r = run(scenario, "meerkat");
        check_rows(&r, &["meerkat"]);
        check_plots(&r);
    }
    // cpu in two rounds: medians in the rows, every round's measurement in the details.
    let r = bench_with("cpu", "meerkat", 1, &["--rounds", "2"]).report;
    check_rows(&r, &["meerkat"]);
    check_plots(&r);
    let details = r["details"].as_object().expect("details");
    for round in ["sync clients/meerkat", "sync clients/meerkat/round 2"] {
        assert!(
            details.keys().any(|k| k.ends_with(round)),
            "{round} missing: {:?}",
            details.keys().collect::<Vec<_>>()
        );
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

/// A rolling restart of three meerkat servers: three steps, the leader's last, and the other
/// members' clients saw no broken connection and no failed write (the hold and the leader's
/// hand-over); every row has meerkat's value.
#[test]
fn rolling_restart_reports_every_step() {
    let r = run_on("rolling-restart", "meerkat", 3);
    check_rows(&r, &["meerkat"]);
    let steps = r["details"]["meerkat"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "{steps:?}");
    let leaders: Vec<bool> = steps
        .iter()
        .map(|s| s["leader"].as_bool().unwrap())
        .collect();
    assert_eq!(leaders, [false, false, true], "the leader goes last");
    for step in steps {
        assert_eq!(step["breaks"].as_u64(), Some(0), "{step}");
        assert_eq!(step["failures"].as_u64(), Some(0), "{step}");
        assert!(step["longest_gap_ms"].as_f64().unwrap() > 0.0, "{step}");
    }
}

/// The diskless target on three servers: sync-create (thesis Fig. 5.1) beside durable meerkat,
/// and restore (thesis Fig. 5.4). Every row has both values, the table has the diskless ratio
/// columns, the charts are PNGs, and the servers really ran diskless (their zoo.cfg, and the
/// mode every server's `mntr` reported during restore).
#[test]
fn diskless_target_writes_complete_reports_on_three_servers() {
    let both = ["meerkat", "meerkat-diskless"];
    let run = bench("sync-create", "meerkat,meerkat-diskless", 3);
    let r = &run.report;
    assert_eq!(r["servers"].as_u64(), Some(3));
    check_rows(r, &both);
    check_plots(r);
    for case in ["1 client", "4 clients"] {
        for t in both {
            let timeline = r["details"][format!("{case}/{t}")]["timeline"]
                .as_array()
                .unwrap_or_else(|| panic!("{case}/{t}: no timeline"));
            assert!(!timeline.is_empty(), "{case}/{t}");
        }
    }
    let header = run
        .stdout
        .lines()
        .find(|l| l.starts_with("case"))
        .expect("table header");
    for column in ["meerkat", "mk-diskless", "dl/mk"] {
        assert!(header.split_whitespace().any(|c| c == column), "{header}");
    }
    let cfg = run
        .work
        .join("sync-create/1-client/meerkat-diskless/server-2/zoo.cfg");
    let cfg = std::fs::read_to_string(&cfg).expect("diskless zoo.cfg");
    assert!(cfg.contains("\ndiskless=true\n"), "{cfg}");
    assert!(cfg.contains("server.3="), "{cfg}");

    let r = run_on("restore", "meerkat-diskless", 3);
    assert_eq!(r["servers"].as_u64(), Some(3));
    check_rows(&r, &["meerkat-diskless"]);
    check_plots(&r);
    let kills = r["details"]["500/meerkat-diskless"]["kills"]
        .as_array()
        .expect("kills");
    assert!(!kills.is_empty());
    for kill in kills {
        assert!(kill["kill_to_write_ms"].as_f64().is_some(), "{kill}");
        let mntr = kill["mntr"].as_array().expect("mntr of each server");
        assert_eq!(mntr.len(), 3, "{kill}");
        for stats in mntr {
            assert_eq!(
                stats["zk_durability_mode"].as_str(),
                Some("diskless"),
                "{stats}"
            );
        }
    }
}

/// `--baseline-config` without `--baseline` runs this meerkat as the baseline with the key
/// written last in its zoo.cfg (and only in its own), so one run shows what a setting changes.
#[test]
fn baseline_config_runs_this_meerkat_with_its_key_last() {
    let targets = ["meerkat-diskless", "baseline-diskless"];
    let run = bench_with(
        "sync-create",
        "meerkat-diskless,baseline-diskless",
        1,
        &["--baseline-config", "busySnapshotMinRestMs=7"],
    );
    check_rows(&run.report, &targets);
    let said = run
        .stdout
        .lines()
        .find(|l| l.starts_with("baseline: "))
        .expect("the baseline line");
    assert!(said.ends_with(" busySnapshotMinRestMs=7"), "{said}");
    let cfg = |target: &str| {
        let path = run
            .work
            .join(format!("sync-create/1-client/{target}/zoo.cfg"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let baseline = cfg("baseline-diskless");
    assert_eq!(
        baseline.lines().last(),
        Some("busySnapshotMinRestMs=7"),
        "{baseline}"
    );
    assert!(baseline.contains("\ndiskless=true\n"), "{baseline}");
    assert!(!cfg("meerkat-diskless").contains("busySnapshotMinRestMs"));
}

/// queue-vs-brokers (thesis Fig. 5.7) tiny, on three durable and three diskless meerkat
/// servers (no broker: `--brokers none`): every row has both values, the chart is a PNG, and
/// each job consumed every message it sent.
#[test]
fn queue_vs_brokers_runs_its_job_to_the_end() {
    let both = ["meerkat", "meerkat-diskless"];
    let run = bench_with(
        "queue-vs-brokers",
        "meerkat,meerkat-diskless",
        3,
        &["--brokers", "none"],
    );
    check_queue_jobs(&run.report, &both);
}

/// The same with the brokers: Kafka (3 KRaft nodes) and an ActiveMQ Artemis live/backup pair,
/// fetched by Maven and run on Java:
/// `cargo test -p meerkat --test bench_smoke brokers -- --ignored`.
#[test]
#[ignore = "needs Java and Maven: runs Apache Kafka and ActiveMQ Artemis"]
fn queue_vs_brokers_runs_its_job_on_the_brokers_too() {
    let run = bench_with(
        "queue-vs-brokers",
        "meerkat-diskless",
        3,
        &["--brokers", "kafka,artemis"],
    );
    check_queue_jobs(&run.report, &["meerkat-diskless", "kafka", "artemis"]);
    let header = run
        .stdout
        .lines()
        .find(|l| l.starts_with("case"))
        .expect("table header");
    for column in ["dl/kafka", "dl/amq"] {
        assert!(header.split_whitespace().any(|c| c == column), "{header}");
    }
}

fn check_queue_jobs(r: &serde_json::Value, systems: &[&str]) {
    assert_eq!(r["servers"].as_u64(), Some(3));
    check_rows(r, systems);
    check_plots(r);
    for t in systems {
        let job = &r["details"][format!("300 msgs, 1+1 clients/{t}")];
        assert_eq!(job["messages"].as_u64(), Some(300), "{t}: {job}");
        assert!(job["seconds"].as_f64().unwrap() > 0.0, "{t}: {job}");
    }
}

/// `memory` reports one figure per target and point (no chart): every row has both meerkat
/// modes' values, and the loaded RSS was read (a report, not a bound: the bench judges that).
#[test]
fn memory_writes_a_complete_report() {
    let targets = ["meerkat", "meerkat-diskless"];
    let r = run("memory", "meerkat,meerkat-diskless");
    check_rows(&r, &targets);
    let rows = r["rows"].as_array().expect("rows");
    let loaded = rows
        .iter()
        .find(|row| row["metric"] == "RSS MB, loaded")
        .expect("a loaded row");
    for t in targets {
        let mb = loaded["values"][t].as_f64().expect("a value");
        assert!(mb > 0.0, "{t}: no RSS read");
    }
}
