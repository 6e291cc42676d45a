//! A real server process runs with glibc's per-thread cache sized for its turns: it re-executes
//! itself with `glibc.malloc.tcache_count` in `GLIBC_TUNABLES` (same pid, same arguments), keeps
//! an operator's own size and other tunables, and serves afterwards.
#![cfg(all(target_os = "linux", target_env = "gnu"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{ensure, Context, Result};
use std::process::Command;
use std::time::Duration;
use testkit::process::Process;
use testkit::{four_letter, standalone};

/// Starts a standalone server with `tunables` as its `GLIBC_TUNABLES` (none if `None`) and
/// returns what the serving process has there, and its command line.
async fn serving_environment(tunables: Option<&str>) -> Result<(Option<String>, Vec<String>)> {
    let dir = tempfile::tempdir()?;
    let config = standalone::write_config(dir.path(), "")?;
    let address = config.address;
    let mut command = Command::new(env!("CARGO_BIN_EXE_meerkat"));
    command.arg("server").arg(&config.path);
    match tunables {
        Some(value) => command.env("GLIBC_TUNABLES", value),
        None => command.env_remove("GLIBC_TUNABLES"),
    };
    let server = Process::spawn("server", command)?;
    four_letter::wait_serving(address, Duration::from_secs(30))
        .await
        .with_context(|| server.quote())?;
    // The pid we spawned is the one serving: the re-exec kept it.
    let environ = std::fs::read(format!("/proc/{}/environ", server.pid()))?;
    let found = tunables_in(&environ);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid()))?;
    let args = cmdline
        .split(|&b| b == 0)
        .filter(|arg| !arg.is_empty())
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    ensure!(
        !server
            .lines()
            .iter()
            .any(|l| l.contains("per-thread cache")),
        "the server says its cache was not sized: {}",
        server.quote()
    );
    Ok((found, args))
}

/// The `GLIBC_TUNABLES` value in a process's start-up environment (`/proc/PID/environ`). The
/// dynamic loader ends each value it parses with a NUL in place, so a value of several tunables
/// reads as entries of its own after the first; those (entries without a variable name before
/// their `=`, i.e. starting with `glibc.`) are joined back with `:`.
fn tunables_in(environ: &[u8]) -> Option<String> {
    let mut entries = environ
        .split(|&b| b == 0)
        .filter_map(|entry| std::str::from_utf8(entry).ok());
    let first = entries.find_map(|entry| entry.strip_prefix("GLIBC_TUNABLES="))?;
    let mut value = first.to_string();
    for more in entries.take_while(|entry| entry.starts_with("glibc.")) {
        value.push(':');
        value.push_str(more);
    }
    Some(value)
}

#[tokio::test]
async fn a_server_sizes_glibcs_thread_cache_and_keeps_the_operators_tunables() {
    let (tunables, args) = serving_environment(None).await.unwrap();
    assert_eq!(tunables.as_deref(), Some("glibc.malloc.tcache_count=64"));
    assert_eq!(args.get(1).map(String::as_str), Some("server"), "{args:?}");
    assert!(args[0].ends_with("meerkat"), "{args:?}");

    let (tunables, _) = serving_environment(Some("glibc.malloc.trim_threshold=131072"))
        .await
        .unwrap();
    assert_eq!(
        tunables.as_deref(),
        Some("glibc.malloc.trim_threshold=131072:glibc.malloc.tcache_count=64")
    );

    let (tunables, _) = serving_environment(Some("glibc.malloc.tcache_count=7"))
        .await
        .unwrap();
    assert_eq!(tunables.as_deref(), Some("glibc.malloc.tcache_count=7"));
}
