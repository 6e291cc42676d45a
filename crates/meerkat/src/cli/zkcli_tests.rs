//! Differential test: the same command lines through Apache ZooKeeper's own zkCli
//! (`ZooKeeperMain`, 3.9.3) and through `meerkat cli`, both against one real ZooKeeper 3.9.3,
//! each under its own root. Exit codes, stdout and stderr must match once the values that
//! legitimately differ (zxids, times, session ids, the root's name) are masked.
//!
//! One known difference is left out of the script: zkCli exits without closing its session,
//! so an ephemeral it creates outlives the command until the session expires; `meerkat cli`
//! closes its session, so the ephemeral goes at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::shell::{Outcome, Shell, Sink};
use super::zookeeper_support::ZooKeeper;
use std::process::Command;
use std::sync::{Arc, Mutex};

/// Each line runs as its own invocation (a fresh session), as `zkCli.sh -server X cmd` does.
const SCRIPT: &[&str] = &[
    "create {R} hello",
    "create {R}/a",
    "create -s {R}/s- x",
    "create {R}",
    "create {R}/a/b/c",
    "get {R}",
    "get {R}/a",
    "get -s {R}",
    "get {R}/nope",
    "set {R} bye -v 7",
    "set -s {R} bye",
    "ls {R}",
    "ls -s {R}",
    "create {R}/a/b",
    "create {R}/a/b/c",
    "ls -R {R}",
    "ls -R {R}/nope",
    "stat {R}/a",
    "stat {R}/nope",
    "getAcl {R}",
    "getAcl -s {R}/a",
    "setAcl {R}/a world:anyone:r",
    "getAcl {R}/a",
    "set {R}/a x",
    "getAllChildrenNumber {R}",
    "sync {R}",
    "delete {R}",
    "delete -v 3 {R}/s-0000000002",
    "create -c -e {R}/x",
    "create -t 10 {R}/t",
    "ls",
    "ls -q {R}",
    "frobnicate {R}",
    "whoami",
    "create {R}/q",
    "create {R}/q/a data",
    "setquota {R}/q",
    "setquota -n 2",
    "setquota -n 0 {R}/q",
    "setquota -b -1 {R}/q",
    "setquota -n x {R}/q",
    "setquota -n 1 -N 2 {R}/q",
    "setquota -n 5 /zookeeper/quota/x",
    "setquota -n 5 {R}/nope",
    "setquota -n 5 /",
    "setquota -N 1 {R}/q",
    "listquota {R}/q",
    "setquota -b 100 {R}/q",
    "get /zookeeper/quota{R}",
    "listquota {R}/q",
    "setquota -n 3 {R}/q/a",
    "setquota -n 3 {R}",
    "listquota {R}/nope",
    "listquota",
    "delquota -N {R}/q",
    "listquota {R}/q",
    "delquota {R}/q/a",
    "delquota -n -b {R}/q",
    "delquota {R}/q",
    "listquota {R}/q",
    "ls /zookeeper/quota{R}",
    "deleteall {R}",
    "ls {R}",
];

/// ZooKeeper 3.9.3's client jars plus commons-cli, which zkCli needs (scripts/compat-curator.sh
/// fetches them with Maven).
fn zkcli_classpath() -> String {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/compat-curator.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("classpath")
        .output()
        .expect("compat-curator.sh classpath");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Runs one line through zkCli: (exit code, stdout, stderr).
fn zkcli(classpath: &str, server: &str, line: &str) -> (i32, String, String) {
    let out = Command::new("java")
        .arg("-Xmx128m")
        .arg("-Duser.timezone=UTC")
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.zookeeper.ZooKeeperMain")
        .arg("-server")
        .arg(server)
        .args(super::words::split(line))
        .output()
        .expect("java runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Runs one line through `meerkat cli`'s shell with a fresh session.
fn ours(server: &str, line: &str) -> (i32, String, String) {
    let out = Arc::new(Mutex::new(Vec::new()));
    let err = Arc::new(Mutex::new(Vec::new()));
    let (o, e): (Sink, Sink) = (out.clone(), err.clone());
    let mut shell = Shell::new(server, o, e, false).unwrap();
    assert!(shell.connect(server));
    let code = match shell.execute(&super::words::split(line)) {
        Outcome::Done(code) => code,
        Outcome::Quit => 0,
    };
    shell.shutdown();
    let text = |b: &Arc<Mutex<Vec<u8>>>| String::from_utf8(b.lock().unwrap().clone()).unwrap();
    (code, text(&out), text(&err))
}

/// Masks what differs between two sessions and two roots; drops zkCli's connection chatter.
fn normalize(text: &str, root: &str) -> String {
    let mut lines = Vec::new();
    for line in text.lines() {
        // zkCli's JVM log line on exit, and blank lines around its watcher output.
        if line.starts_with("[main] ") || line.is_empty() {
            continue;
        }
        if line.starts_with("Connecting to ") || line == "WATCHER::" {
            continue;
        }
        if line.starts_with("WatchedEvent ") && line.contains("type:None") {
            continue;
        }
        // The usage listing zkCli prints before "Command not found" / "No command entered".
        if line.starts_with("ZooKeeper -server ") || line.starts_with('\t') {
            continue;
        }
        let line = line.replace(root, "{R}");
        let masked = match line.split_once(" = ") {
            Some((key @ ("cZxid" | "mZxid" | "pZxid" | "ctime" | "mtime"), _)) => {
                format!("{key} = *")
            }
            Some(("ephemeralOwner", v)) if v != "0x0" => "ephemeralOwner = <session>".into(),
            _ => line,
        };
        lines.push(masked);
    }
    lines.join("\n")
}

#[test]
fn meerkat_cli_prints_what_zkcli_prints() {
    let zk = ZooKeeper::start();
    let server = zk.address.to_string();
    let classpath = zkcli_classpath();
    let mut differences = Vec::new();
    for line in SCRIPT {
        let java = zkcli(&classpath, &server, &line.replace("{R}", "/zkcli"));
        let rust = ours(&server, &line.replace("{R}", "/meerkat"));
        let java = (
            java.0,
            normalize(&java.1, "/zkcli"),
            normalize(&java.2, "/zkcli"),
        );
        let rust = (
            rust.0,
            normalize(&rust.1, "/meerkat"),
            normalize(&rust.2, "/meerkat"),
        );
        if java != rust {
            differences.push(format!("{line}\n  zkCli:   {java:?}\n  meerkat: {rust:?}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} lines differ:\n{}",
        differences.len(),
        SCRIPT.len(),
        differences.join("\n")
    );
}
