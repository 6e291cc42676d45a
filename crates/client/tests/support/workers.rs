//! Recipe worker processes (`meerkat-recipe-worker`): started with a role, read line by line,
//! commanded through stdin, killed by pid when dropped.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct Worker {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Worker {
    pub fn start(name: &str, address: &str, args: &[&str]) -> Worker {
        let mut command = Command::new(env!("CARGO_BIN_EXE_meerkat-recipe-worker"));
        command.arg(address).args(args);
        Worker::spawn(name, command)
    }

    /// Any line-oriented process (e.g. the Curator lock holder).
    pub fn spawn(name: &str, mut command: Command) -> Worker {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("worker starts");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Worker {
            name: name.to_string(),
            child,
            stdin,
            lines: rx,
        }
    }

    /// The next line; fails the test after 30 s, or if it starts with `error`.
    pub fn line(&self) -> String {
        match self.lines.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => {
                assert!(!line.starts_with("error"), "{}: {line}", self.name);
                line
            }
            Err(e) => panic!("{}: no line ({e})", self.name),
        }
    }

    /// Reads lines until one starts with `prefix`; returns it.
    pub fn expect(&self, prefix: &str) -> String {
        for _ in 0..100 {
            let line = self.line();
            if line.starts_with(prefix) {
                return line;
            }
        }
        panic!("{}: never printed {prefix:?}", self.name);
    }

    /// A line if one is already there.
    pub fn try_line(&self) -> Option<String> {
        self.lines.try_recv().ok()
    }

    pub fn send(&mut self, command: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{command}");
            let _ = stdin.flush();
        }
    }

    /// SIGKILL: the session ends without closeSession, so the server must expire it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for a normal exit (bounded) and returns its success.
    pub fn wait_exit(&mut self) -> bool {
        for _ in 0..300 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{}: did not exit", self.name);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}
