//! Client processes a test starts (the examples' binaries): every line they print is kept, so
//! the test can wait for one with a bound; they are ended only by SIGKILL to the pid the test
//! spawned, and dropping a [`Process`] kills and reaps it.
//!
//! Also [`meerkat_binary`]: where the `meerkat` server binary of this build is, for tests of
//! packages other than `meerkat` (Cargo gives `CARGO_BIN_EXE_*` only to the package's own tests).

use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines kept per process; later ones are dropped (a chatty process cannot exhaust memory, and
/// a line's index never changes, so marks stay valid).
pub const OUTPUT_LINES_MAX: usize = 10_000;
/// How often waits poll.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Lines quoted when a wait fails.
const QUOTED_LINES_MAX: usize = 30;

/// The `meerkat` binary beside the running test's own build: `MEERKAT_BIN` if set, else
/// `<target>/<profile>/meerkat` (tests run from `<target>/<profile>/deps/`).
/// `cargo test --workspace` builds it; a test of one package needs `cargo build -p meerkat` first.
pub fn meerkat_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("MEERKAT_BIN") {
        return Ok(PathBuf::from(path));
    }
    let test = std::env::current_exe()?;
    let profile_dir = test
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| anyhow!("no build directory above {}", test.display()))?;
    let binary = profile_dir.join("meerkat");
    if !binary.is_file() {
        bail!(
            "{} does not exist: build the server first (cargo build -p meerkat), \
             or set MEERKAT_BIN",
            binary.display()
        );
    }
    Ok(binary)
}

/// A child process with its stdout and stderr lines collected (stderr lines prefixed `!`).
pub struct Process {
    name: String,
    child: Mutex<Child>,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Process {
    /// Spawns `command` (stdin closed, stdout and stderr captured); `name` labels its lines in
    /// failure messages.
    pub fn spawn(name: &str, mut command: Command) -> Result<Process> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("spawning {name}: {command:?}"))?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        if let Some(stdout) = child.stdout.take() {
            collect(stdout, "", lines.clone());
        }
        if let Some(stderr) = child.stderr.take() {
            collect(stderr, "!", lines.clone());
        }
        Ok(Process {
            name: name.to_string(),
            child: Mutex::new(child),
            lines,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn pid(&self) -> u32 {
        lock(&self.child).id()
    }

    /// Every line so far (stderr lines start with `!`).
    pub fn lines(&self) -> Vec<String> {
        lock(&self.lines).clone()
    }

    /// How many lines so far: a mark for [`Process::wait_for_line_after`].
    pub fn line_count(&self) -> usize {
        lock(&self.lines).len()
    }

    /// Waits up to `limit` for a stdout line equal to `line`.
    pub async fn wait_for_line(&self, line: &str, limit: Duration) -> Result<()> {
        self.wait_for_line_after(0, line, limit).await
    }

    /// Waits up to `limit` for a stdout line equal to `line` among the lines after the first
    /// `mark` ones.
    pub async fn wait_for_line_after(
        &self,
        mark: usize,
        line: &str,
        limit: Duration,
    ) -> Result<()> {
        self.wait_for_match(mark, &format!("{line:?}"), limit, |l| l == line)
            .await
            .map(drop)
    }

    /// Waits up to `limit` for a stdout line starting with `prefix`; returns the rest of it.
    pub async fn wait_for_prefix(&self, prefix: &str, limit: Duration) -> Result<String> {
        let line = self
            .wait_for_match(0, &format!("a line starting {prefix:?}"), limit, |l| {
                l.starts_with(prefix)
            })
            .await?;
        Ok(line[prefix.len()..].to_string())
    }

    /// The first line after `mark` that `matches`. Fails early if the process exits without
    /// printing one.
    async fn wait_for_match(
        &self,
        mark: usize,
        wanted: &str,
        limit: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + limit;
        let found = || {
            lock(&self.lines)
                .iter()
                .skip(mark)
                .find(|l| matches(l))
                .cloned()
        };
        loop {
            if let Some(line) = found() {
                return Ok(line);
            }
            if !self.is_running() {
                // Let the reader threads take the last lines before deciding.
                tokio::time::sleep(POLL_INTERVAL).await;
                if let Some(line) = found() {
                    return Ok(line);
                }
                bail!(
                    "{} exited without printing {wanted}\n{}",
                    self.name,
                    self.quote()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not print {wanted} within {limit:?}\n{}",
                    self.name,
                    self.quote()
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// True while the process has not exited (an exited one is reaped here).
    pub fn is_running(&self) -> bool {
        matches!(lock(&self.child).try_wait(), Ok(None))
    }

    /// Sends SIGKILL to the pid this test spawned and reaps it.
    pub fn kill(&self) -> Result<()> {
        let mut child = lock(&self.child);
        // Child::kill is SIGKILL on Unix, to exactly this pid, which is not reaped yet (we hold
        // the Child), so it cannot belong to another process.
        child
            .kill()
            .with_context(|| format!("SIGKILL to {} (pid {})", self.name, child.id()))?;
        child.wait()?;
        Ok(())
    }

    /// Waits up to `limit` for the process to exit by itself; returns its exit code
    /// (`None`: ended by a signal).
    pub async fn wait_exit(&self, limit: Duration) -> Result<Option<i32>> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = lock(&self.child).try_wait()? {
                return Ok(status.code());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not exit within {limit:?}\n{}",
                    self.name,
                    self.quote()
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// The last lines, labelled with the process name, for failure messages.
    pub fn quote(&self) -> String {
        let lines = self.lines();
        let from = lines.len().saturating_sub(QUOTED_LINES_MAX);
        lines[from..]
            .iter()
            .map(|l| format!("  {}| {l}", self.name))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads `stream` line by line on a thread of its own into `lines` (bounded).
fn collect(
    stream: impl Read + Send + 'static,
    prefix: &'static str,
    lines: Arc<Mutex<Vec<String>>>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let mut lines = lock(&lines);
            if lines.len() < OUTPUT_LINES_MAX {
                lines.push(format!("{prefix}{line}"));
            }
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
