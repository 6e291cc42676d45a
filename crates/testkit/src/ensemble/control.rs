//! Starting, signalling and restarting members; their logs; cutting their links.

use super::{lock, Cut, Ensemble, Flavor, Link, Signal, LOG_TAIL_LINES, START_MARKER};
use crate::proxy::Proxy;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

impl Ensemble {
    /// Starts member `sid`'s process (it must not be running); does not wait for it to serve.
    pub fn spawn(&self, sid: u32) -> Result<()> {
        let member = self.member(sid);
        let mut child = lock(&member.child);
        if child.is_some() {
            bail!("server {sid} is already running");
        }
        let start = {
            let mut count = lock(&member.start_count);
            *count += 1;
            *count
        };
        let log_path = self.log_path(sid);
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening server {sid}'s log {}", log_path.display()))?;
        writeln!(log, "{START_MARKER}{start} of server {sid} ---")?;
        let mut command = match &self.flavor {
            Flavor::Meerkat { binary } => {
                let mut c = Command::new(binary);
                c.arg("server");
                c
            }
            Flavor::ZooKeeper { script } => {
                let mut c = Command::new("bash");
                c.arg(script).arg("run").env("ZK_HEAP", "256m");
                c
            }
        };
        let spawned = command
            .arg(&member.config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning server {sid} ({})", self.flavor.name()))?;
        *child = Some(spawned);
        member.stopped.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Sends `signal` to member `sid`'s process (the pid this ensemble started). After
    /// [`Signal::Kill`] and [`Signal::Term`] the process is reaped and the member is down until
    /// [`Self::restart`].
    pub fn signal(&self, sid: u32, signal: Signal) -> Result<()> {
        let member = self.member(sid);
        let mut child = lock(&member.child);
        let Some(process) = child.as_mut() else {
            bail!("server {sid} is not running");
        };
        let pid = libc::pid_t::try_from(process.id()).context("pid")?;
        let number = match signal {
            Signal::Kill => libc::SIGKILL,
            Signal::Term => libc::SIGTERM,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
        };
        // SAFETY: kill(2) on a pid we spawned and have not reaped yet (the Child is held), so it
        // cannot have been reused by another process.
        if unsafe { libc::kill(pid, number) } != 0 {
            bail!(
                "kill({pid}, {signal:?}): {}",
                std::io::Error::last_os_error()
            );
        }
        match signal {
            Signal::Kill => {
                process.wait()?;
                *child = None;
                member.stopped.store(false, Ordering::SeqCst);
            }
            Signal::Term => {
                let deadline = std::time::Instant::now() + super::TERM_EXIT_WAIT;
                while process.try_wait()?.is_none() {
                    if std::time::Instant::now() >= deadline {
                        process.kill()?;
                        process.wait()?;
                        *child = None;
                        bail!(
                            "server {sid} did not exit within {:?} of SIGTERM",
                            super::TERM_EXIT_WAIT
                        );
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                *child = None;
                member.stopped.store(false, Ordering::SeqCst);
            }
            Signal::Stop => member.stopped.store(true, Ordering::SeqCst),
            Signal::Cont => member.stopped.store(false, Ordering::SeqCst),
        }
        Ok(())
    }

    /// SIGKILLs member `sid` if it runs, and starts it again on the same files; does not wait
    /// for it to serve.
    pub fn restart(&self, sid: u32) -> Result<()> {
        if lock(&self.member(sid).child).is_some() {
            self.signal(sid, Signal::Kill)?;
        }
        self.spawn(sid)
    }

    /// If member `sid`'s process has ended by itself: how (it is reaped then).
    pub fn exit_status(&self, sid: u32) -> Option<String> {
        let mut child = lock(&self.member(sid).child);
        match child.as_mut().map(std::process::Child::try_wait) {
            Some(Ok(Some(status))) => {
                *child = None;
                Some(status.to_string())
            }
            Some(Err(e)) => Some(format!("unknown ({e})")),
            _ => None,
        }
    }

    pub fn log_path(&self, sid: u32) -> std::path::PathBuf {
        self.member(sid).dir.join("server.log")
    }

    /// What member `sid` logged since its latest start.
    pub fn log_since_last_start(&self, sid: u32) -> String {
        let text = std::fs::read_to_string(self.log_path(sid)).unwrap_or_default();
        match text.rfind(START_MARKER) {
            Some(at) => text[at..].to_string(),
            None => text,
        }
    }

    /// The last [`LOG_TAIL_LINES`] lines of member `sid`'s log, for failure messages.
    pub fn log_tail(&self, sid: u32) -> String {
        let text = std::fs::read_to_string(self.log_path(sid)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(LOG_TAIL_LINES);
        format!(
            "last {} lines of {}:\n{}",
            lines.len() - from,
            self.log_path(sid).display(),
            lines[from..].join("\n")
        )
    }

    /// The proxies `from` reaches `to` through (with [`super::Options::peer_proxies`]).
    pub fn link(&self, from: u32, to: u32) -> Option<&Link> {
        self.links.get(&(from, to))
    }

    /// Cuts every link to and from `sid`.
    pub fn isolate(&self, sid: u32, cut: Cut) -> Result<()> {
        self.partition(&[sid], cut)
    }

    /// Cuts every link between a member of `side` and a member not in it.
    pub fn partition(&self, side: &[u32], cut: Cut) -> Result<()> {
        self.require_links()?;
        let apply = |proxy: &&Proxy| match cut {
            Cut::Close => proxy.block(),
            Cut::Silent => proxy.blackhole(),
        };
        for ((from, to), link) in &self.links {
            if side.contains(from) != side.contains(to) {
                link.proxies().iter().for_each(apply);
            }
        }
        Ok(())
    }

    /// Restores every link.
    pub fn heal(&self) {
        for link in self.links.values() {
            link.proxies().iter().for_each(|p| p.heal());
        }
    }

    fn require_links(&self) -> Result<()> {
        if self.links.is_empty() {
            bail!("this ensemble was started without peer proxies");
        }
        Ok(())
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for member in &self.members {
            if let Some(mut child) = lock(&member.child).take() {
                // Child::kill sends SIGKILL to the pid we spawned, stopped or not.
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if std::thread::panicking() || self.keep.load(Ordering::SeqCst) {
            if let Some(dir) = self.dir.take() {
                eprintln!("ensemble files kept in {}", dir.keep().display());
            }
        }
    }
}
