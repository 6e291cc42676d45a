//! The shell's state and its commands (zkCli's `ZooKeeperMain` and `cli/*Command`).
//!
//! Output goes to two shared sinks, so watch events printed by background tasks as they arrive
//! interleave with command output as in zkCli, and so tests can capture both.

mod quota;

use super::format;
use super::words::{self, Parsed};
use client::{acl, AddWatchMode, Client, ClientConfig, CreateMode, Error, WatcherType};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::runtime::Runtime;

/// Where output goes; shared with the tasks that print watch events.
pub type Sink = Arc<Mutex<dyn Write + Send>>;

/// Every command with its usage, as `help` prints them (also the completion list).
pub const COMMANDS: &[(&str, &str)] = &[
    ("addWatch", "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE"),
    ("addauth", "scheme auth"),
    ("close", ""),
    ("config", "[-c] [-w] [-s]"),
    ("connect", "host:port"),
    ("create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]"),
    ("delete", "[-v version] path"),
    ("deleteall", "path [-b batch size]"),
    ("delquota", "[-n|-b|-N|-B] path"),
    ("get", "[-s] [-w] path"),
    ("getAcl", "[-s] path"),
    ("getAllChildrenNumber", "path"),
    ("getEphemerals", "path"),
    ("help", ""),
    ("history", ""),
    ("listquota", "path"),
    ("ls", "[-s] [-w] [-R] path"),
    ("quit", ""),
    ("reconfig", "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]"),
    ("removewatches", "path [-c|-d|-a|-p|-r]"),
    ("set", "[-s] [-v version] path data"),
    ("setAcl", "[-s] [-v version] [-R] path acl"),
    ("setquota", "-n|-b|-N|-B val path"),
    ("stat", "[-w] path"),
    ("sync", "path"),
    ("whoami", ""),
];

/// Exit status of a command run from the command line, as zkCli's: `ExitCode` 0 and
/// `CliException`'s default 1 (usage errors included), `CommandNotFoundException`'s 127, and
/// `INVALID_INVOCATION` 2 for a bad `meerkat cli` command line.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_INVALID: i32 = 2;
pub const EXIT_NOT_FOUND: i32 = 127;

/// What a command asks of the caller.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Done(i32),
    Quit,
}

pub struct Shell {
    runtime: Runtime,
    client: Option<Client>,
    server: String,
    out: Sink,
    err: Sink,
    /// Print session state changes (interactive use); watch events are always printed.
    print_session_events: bool,
    pub history: Vec<String>,
    /// TLS for every connection (`-client-configuration` with `zookeeper.client.secure=true`).
    pub tls: Option<client::tls::TlsClient>,
    /// zkCli's `-r`: accept a read-only server (`canBeReadOnly`).
    pub read_only: bool,
}

/// A failure of a command: the message, and whether the command was unknown.
enum Failure {
    Usage(String),
    Failed(String),
    NotFound(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Failed(format::error(&e))
    }
}

type CommandResult = Result<(), Failure>;

impl Shell {
    pub fn new(
        server: &str,
        out: Sink,
        err: Sink,
        print_session_events: bool,
    ) -> std::io::Result<Shell> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("meerkat-cli")
            .enable_all()
            .build()?;
        Ok(Shell {
            runtime,
            client: None,
            server: server.to_string(),
            out,
            err,
            print_session_events,
            history: Vec::new(),
            tls: None,
            read_only: false,
        })
    }

    /// Connects to `server` (closing any current session). Prints why on failure.
    pub fn connect(&mut self, server: &str) -> bool {
        if let Some(old) = self.client.take() {
            self.runtime.block_on(old.close());
        }
        self.server = server.to_string();
        let mut config = ClientConfig::default()
            .with_connect_timeout(Duration::from_secs(15))
            .with_can_be_read_only(self.read_only);
        config.tls = self.tls.clone();
        match self.runtime.block_on(Client::connect(server, config)) {
            Ok(client) => {
                if self.print_session_events {
                    self.print_session_changes(&client);
                }
                self.client = Some(client);
                true
            }
            Err(e) => {
                self.println_err(&format!(
                    "Unable to connect to {server}: {}",
                    format::error(&e)
                ));
                false
            }
        }
    }

    /// `[zk: host(STATE) n] `
    pub fn prompt(&self) -> String {
        let state = match &self.client {
            Some(c) => match c.state() {
                client::SessionState::Connected => "CONNECTED",
                client::SessionState::ConnectedReadOnly => "CONNECTEDREADONLY",
                client::SessionState::Disconnected => "CONNECTING",
                client::SessionState::Expired | client::SessionState::Closed => "CLOSED",
                client::SessionState::AuthFailed => "AUTH_FAILED",
            },
            None => "CLOSED",
        };
        format!("[zk: {}({state}) {}] ", self.server, self.history.len())
    }

    /// The client, for completion.
    pub fn client(&self) -> Option<&Client> {
        self.client.as_ref()
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Runs one command line.
    pub fn execute_line(&mut self, line: &str) -> Outcome {
        let words = words::split(line);
        if words.is_empty() {
            return Outcome::Done(EXIT_OK);
        }
        self.history.push(line.trim().to_string());
        self.execute(&words)
    }

    /// Runs one command given as words (command name first).
    pub fn execute(&mut self, words: &[String]) -> Outcome {
        let Some(name) = words.first().map(String::as_str) else {
            return Outcome::Done(EXIT_OK);
        };
        let result = match name {
            "quit" => {
                if let Some(client) = self.client.take() {
                    self.runtime.block_on(client.close());
                }
                return Outcome::Quit;
            }
            "help" => {
                self.usage();
                Ok(())
            }
            "history" => {
                let start = self.history.len().saturating_sub(11);
                let lines: Vec<String> = self.history[start..]
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{} - {l}", start + i))
                    .collect();
                for line in lines {
                    self.println(&line);
                }
                Ok(())
            }
            "connect" => {
                let server = words.get(1).cloned().unwrap_or_else(|| self.server.clone());
                if self.connect(&server) {
                    Ok(())
                } else {
                    Err(Failure::Failed(String::new()))
                }
            }
            "close" => {
                if let Some(client) = &self.client {
                    self.runtime.block_on(client.close());
                }
                Ok(())
            }
            _ if !COMMANDS.iter().any(|(c, _)| *c == name) => {
                self.usage();
                // zkCli words it twice: CommandNotFoundException("Command not found " + cmd)
                // prefixes "Command not found: " itself.
                Err(Failure::NotFound(format!(
                    "Command not found: Command not found {name}"
                )))
            }
            _ => match self.live_client() {
                None => {
                    self.println("Not connected");
                    Err(Failure::Failed(String::new()))
                }
                Some(client) => self.run_command(&client, name, words),
            },
        };
        match result {
            Ok(()) => Outcome::Done(EXIT_OK),
            Err(Failure::Usage(message)) => {
                self.println_err(&message);
                Outcome::Done(EXIT_FAILED)
            }
            Err(Failure::NotFound(message)) => {
                self.println_err(&message);
                Outcome::Done(EXIT_NOT_FOUND)
            }
            Err(Failure::Failed(message)) => {
                if !message.is_empty() {
                    self.println_err(&message);
                }
                Outcome::Done(EXIT_FAILED)
            }
        }
    }

    /// zkCli's `reconfig`.
    fn reconfig(&self, zk: &Client, words: &[String], usage: &str) -> CommandResult {
        let args = super::reconfig_args::parse(words.get(1..).unwrap_or_default(), usage)
            .map_err(Failure::Usage)?;
        let (data, stat) = self.runtime.block_on(zk.reconfig(
            args.joining.as_deref(),
            args.leaving.as_deref(),
            args.members.as_deref(),
            args.from_config,
        ))?;
        self.println(&format!(
            "Committed new configuration:\n{}",
            String::from_utf8_lossy(&data)
        ));
        if args.print_stat {
            self.print(&format::stat(&stat));
        }
        Ok(())
    }

    fn live_client(&self) -> Option<Client> {
        self.client
            .as_ref()
            .filter(|c| !c.state().is_terminal())
            .cloned()
    }

    fn run_command(&mut self, zk: &Client, name: &str, words: &[String]) -> CommandResult {
        let usage = COMMANDS
            .iter()
            .find(|(c, _)| *c == name)
            .map(|(c, u)| format!("{c} {u}"))
            .unwrap_or_default();
        if name == "reconfig" {
            // Word options (-add, -members, ...), not letters: read apart.
            return self.reconfig(zk, words, &usage);
        }
        let (flags, valued) = match name {
            "ls" => ("swR", ""),
            "get" => ("sw", ""),
            "set" => ("s", "v"),
            "create" => ("sec", "t"),
            "delete" => ("", "v"),
            "deleteall" => ("", "b"),
            "stat" => ("w", ""),
            "addWatch" => ("", "m"),
            "removewatches" => ("cdaprl", ""),
            "getAcl" => ("s", ""),
            "config" => ("cws", ""),
            "setAcl" => ("sR", "v"),
            "setquota" => ("", "nbNB"),
            "delquota" => ("nbNB", ""),
            _ => ("", ""),
        };
        let parsed = words::parse(words, flags, valued).map_err(Failure::Usage)?;
        let arg = |i: usize| -> Result<String, Failure> {
            parsed
                .args
                .get(i)
                .cloned()
                .ok_or_else(|| Failure::Usage(usage.clone()))
        };
        let rt = &self.runtime;
        match name {
            "ls" => self.ls(zk, &parsed, &arg(1)?),
            "get" => {
                let path = arg(1)?;
                let (data, stat) = if parsed.has('w') {
                    let (data, stat, watch) = rt.block_on(zk.get_data_w(&path))?;
                    self.print_when_fired(watch);
                    (Some(data), stat)
                } else {
                    rt.block_on(zk.get_data_raw(&path))?
                };
                match data {
                    Some(bytes) => self.println(&String::from_utf8_lossy(&bytes)),
                    None => self.println("null"),
                }
                if parsed.has('s') {
                    self.print(&format::stat(&stat));
                }
                Ok(())
            }
            "set" => {
                let (path, data) = (arg(1)?, arg(2)?);
                let version = version(&parsed)?;
                let stat = rt.block_on(zk.set_data(&path, data.as_bytes(), version))?;
                if parsed.has('s') {
                    self.print(&format::stat(&stat));
                }
                Ok(())
            }
            "create" => self.create(zk, &parsed, &usage),
            "delete" => {
                let path = arg(1)?;
                rt.block_on(zk.delete(&path, version(&parsed)?))?;
                Ok(())
            }
            "deleteall" => {
                let path = arg(1)?;
                let mut paths = vec![path.clone()];
                rt.block_on(collect_subtree(zk, &path, &mut paths))?;
                // As ZKUtil.deleteRecursive: a listing error is an error, a failed deletion
                // is reported and the command still succeeds.
                if rt.block_on(delete_deepest_first(zk, paths)).is_err() {
                    self.println_err("Failed to delete some node(s) in the subtree!");
                }
                Ok(())
            }
            "stat" => {
                let path = arg(1)?;
                let stat = if parsed.has('w') {
                    let (stat, watch) = rt.block_on(zk.exists_w(&path))?;
                    self.print_when_fired(watch);
                    stat
                } else {
                    rt.block_on(zk.exists(&path))?
                };
                let stat =
                    stat.ok_or_else(|| Error::keeper(client::ErrorCode::NoNode, path.clone()))?;
                self.print(&format::stat(&stat));
                Ok(())
            }
            "sync" => {
                let path = arg(1)?;
                match rt.block_on(zk.sync(&path)) {
                    Ok(()) => self.println("Sync is OK"),
                    Err(e) => self.println(&format!("Sync has failed. rc={}", e.code().code())),
                }
                Ok(())
            }
            "addWatch" => {
                if parsed.args.len() != 2 {
                    return Err(Failure::Usage(usage));
                }
                let mode = match parsed.value('m').map(str::to_uppercase).as_deref() {
                    None | Some("PERSISTENT_RECURSIVE") => AddWatchMode::PersistentRecursive,
                    Some("PERSISTENT") => AddWatchMode::Persistent,
                    Some(_) => return Err(Failure::Usage(usage)),
                };
                let watch = rt.block_on(zk.add_watch(&arg(1)?, mode))?;
                self.print_stream(watch);
                Ok(())
            }
            "removewatches" => {
                let path = arg(1)?;
                let kind = if parsed.has('c') {
                    WatcherType::Children
                } else if parsed.has('d') {
                    WatcherType::Data
                } else if parsed.has('p') {
                    WatcherType::Persistent
                } else if parsed.has('r') {
                    WatcherType::PersistentRecursive
                } else {
                    WatcherType::Any
                };
                rt.block_on(zk.remove_all_watches(&path, kind))?;
                Ok(())
            }
            "getAcl" => {
                let path = arg(1)?;
                let (acl_list, stat) = rt.block_on(zk.get_acl(&path))?;
                for a in acl_list {
                    // Jute's CSV `Id.toString()` then `": " + perms`.
                    self.println(&format!("'{},'{}", a.id.scheme, a.id.id));
                    self.println(&format!(": {}", acl::perms_to_string(a.perms)));
                }
                if parsed.has('s') {
                    self.print(&format::stat(&stat));
                }
                Ok(())
            }
            "setAcl" => {
                let (path, acl_text) = (arg(1)?, arg(2)?);
                let acl_list = self.parse_acl(&acl_text);
                let version = version(&parsed)?;
                if parsed.has('R') {
                    let mut paths = vec![path.clone()];
                    rt.block_on(collect_subtree(zk, &path, &mut paths))?;
                    for p in paths {
                        if let Err(e) = rt.block_on(zk.set_acl(&p, &acl_list, version)) {
                            self.print(&e.to_string());
                        }
                    }
                } else {
                    let stat = rt.block_on(zk.set_acl(&path, &acl_list, version))?;
                    if parsed.has('s') {
                        self.print(&format::stat(&stat));
                    }
                }
                Ok(())
            }
            "addauth" => {
                let (scheme, auth) = (arg(1)?, parsed.args.get(2).cloned().unwrap_or_default());
                rt.block_on(zk.add_auth(&scheme, auth.as_bytes()))?;
                Ok(())
            }
            "whoami" => {
                let infos = rt.block_on(zk.who_am_i())?;
                self.println("Auth scheme: User");
                for info in infos {
                    self.println(&format!("{}: {}", info.auth_scheme, info.user));
                }
                Ok(())
            }
            "config" => {
                let (data, stat) = rt.block_on(zk.get_config())?;
                let text = String::from_utf8_lossy(&data);
                if parsed.has('c') {
                    self.println(&super::reconfig_args::client_config(&text));
                } else {
                    self.println(&text);
                }
                if parsed.has('s') {
                    self.print(&format::stat(&stat));
                }
                Ok(())
            }
            "getAllChildrenNumber" => {
                let n = rt.block_on(zk.get_all_children_number(&arg(1)?))?;
                self.println(&n.to_string());
                Ok(())
            }
            "getEphemerals" => {
                let prefix = parsed.args.get(1).cloned().unwrap_or_else(|| "/".into());
                let mut list = rt.block_on(zk.get_ephemerals(&prefix))?;
                list.sort();
                self.println(&format::java_list(&list));
                Ok(())
            }
            "setquota" => self.setquota(zk, &parsed, &usage),
            "listquota" => self.listquota(zk, &parsed, &usage),
            "delquota" => self.delquota(zk, &parsed, &usage),
            _ => Err(Failure::Usage(usage)),
        }
    }

    fn ls(&mut self, zk: &Client, parsed: &Parsed, path: &str) -> CommandResult {
        let rt = &self.runtime;
        if parsed.has('R') {
            let mut paths = vec![path.to_string()];
            rt.block_on(collect_subtree(zk, path, &mut paths))?;
            for p in paths {
                self.println(&p);
            }
            return Ok(());
        }
        let (mut children, stat) = if parsed.has('w') {
            let (children, stat, watch) = rt.block_on(zk.get_children_w(path))?;
            self.print_when_fired(watch);
            (children, stat)
        } else {
            rt.block_on(zk.get_children(path))?
        };
        children.sort();
        self.println(&format::java_list(&children));
        if parsed.has('s') {
            self.print(&format::stat(&stat));
        }
        Ok(())
    }

    fn create(&mut self, zk: &Client, parsed: &Parsed, usage: &str) -> CommandResult {
        let path = parsed
            .args
            .get(1)
            .cloned()
            .ok_or_else(|| Failure::Usage(usage.to_string()))?;
        let (e, s, c) = (parsed.has('e'), parsed.has('s'), parsed.has('c'));
        if c && (e || s) {
            return Err(Failure::Usage(
                "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential."
                    .into(),
            ));
        }
        let ttl = match parsed.value('t') {
            None => None,
            Some(t) => Some(
                t.parse::<i64>()
                    .map_err(|_| Failure::Usage("-t argument must be a long value".into()))?,
            ),
        };
        if ttl.is_some() && e {
            return Err(Failure::Usage(
                "TTLs cannot be used with Ephemeral znodes".into(),
            ));
        }
        if ttl.is_some() && c {
            return Err(Failure::Usage(
                "TTLs cannot be used with Container znodes".into(),
            ));
        }
        let mode = match (e, s, c, ttl) {
            (true, true, _, _) => CreateMode::EphemeralSequential,
            (true, false, _, _) => CreateMode::Ephemeral,
            (_, true, _, Some(t)) => CreateMode::PersistentSequentialWithTtl(t),
            (_, true, _, None) => CreateMode::PersistentSequential,
            (_, _, true, _) => CreateMode::Container,
            (_, _, _, Some(t)) => CreateMode::PersistentWithTtl(t),
            _ => CreateMode::Persistent,
        };
        let data = parsed.args.get(2).map(|d| d.as_bytes().to_vec());
        let acl_list = match parsed.args.get(3) {
            Some(text) => self.parse_acl(text),
            None => acl::open_unsafe(),
        };
        let (created, _) =
            self.runtime
                .block_on(zk.create_nullable(&path, data.as_deref(), &acl_list, mode))?;
        // zkCli prints this on stderr.
        self.println_err(&format!("Created {created}"));
        Ok(())
    }

    /// `AclParser.parse`: `scheme:id:perms[,...]`; malformed entries are reported and skipped.
    fn parse_acl(&self, text: &str) -> Vec<client::Acl> {
        let mut list = Vec::new();
        for entry in text.split(',') {
            let (Some(first), Some(last)) = (entry.find(':'), entry.rfind(':')) else {
                self.println_err(&format!("{entry} does not have the form scheme:id:perm"));
                continue;
            };
            if first == last {
                self.println_err(&format!("{entry} does not have the form scheme:id:perm"));
                continue;
            }
            let perms = &entry[last + 1..];
            let bits = acl::perms_from_string(perms).unwrap_or_else(|| {
                self.println_err(&format!("Unknown perm type: {perms}"));
                acl::perms_from_string(
                    &perms
                        .chars()
                        .filter(|c| "rwcda".contains(*c))
                        .collect::<String>(),
                )
                .unwrap_or(0)
            });
            list.push(acl::acl(bits, &entry[..first], &entry[first + 1..last]));
        }
        list
    }

    /// Prints a one-shot watch's event when it fires, from a background task.
    fn print_when_fired(&self, watch: client::OneshotWatch) {
        let out = self.out.clone();
        self.runtime.spawn(async move {
            let event = watch.await;
            write_event(&out, &event);
        });
    }

    /// Prints every event of a persistent watch as it arrives.
    fn print_stream(&self, mut watch: client::PersistentWatch) {
        let out = self.out.clone();
        self.runtime.spawn(async move {
            while let Some(event) = watch.next().await {
                if event.event_type != client::EventType::None {
                    write_event(&out, &event);
                }
            }
        });
    }

    /// Prints session state changes as zkCli's default watcher does.
    fn print_session_changes(&self, client: &Client) {
        let out = self.out.clone();
        let mut events = client.session_events();
        self.runtime.spawn(async move {
            while let Ok(state) = events.recv().await {
                let event = client::WatchedEvent {
                    event_type: client::EventType::None,
                    state: state.keeper_state(),
                    path: String::new(),
                    zxid: -1,
                };
                write_event(&out, &event);
                if state.is_terminal() {
                    return;
                }
            }
        });
    }

    fn usage(&self) {
        let mut text = String::from(
            "ZooKeeper -server host:port -client-configuration properties-file [-r] cmd args\n",
        );
        for (name, usage) in COMMANDS {
            text.push_str(&format!("\t{name} {usage}\n"));
        }
        self.print_err(&text);
    }

    fn print(&self, text: &str) {
        if let Ok(mut out) = self.out.lock() {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    fn println(&self, text: &str) {
        self.print(&format!("{text}\n"));
    }

    fn print_err(&self, text: &str) {
        if let Ok(mut err) = self.err.lock() {
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }

    fn println_err(&self, text: &str) {
        self.print_err(&format!("{text}\n"));
    }

    /// Closes the session, if any.
    pub fn shutdown(&mut self) {
        if let Some(client) = self.client.take() {
            self.runtime.block_on(client.close());
        }
    }
}

/// `ZooKeeperMain.printMessage("WATCHER::")` then the event, each after a blank line.
fn write_event(out: &Sink, event: &client::WatchedEvent) {
    if let Ok(mut out) = out.lock() {
        let _ = write!(out, "\nWATCHER::\n\n{}\n", format::event(event));
        let _ = out.flush();
    }
}

fn version(parsed: &Parsed) -> Result<i32, Failure> {
    match parsed.value('v') {
        None => Ok(-1),
        Some(v) => v
            .parse()
            .map_err(|_| Failure::Usage(format!("version {v} is not a valid number"))),
    }
}

/// Appends every descendant of `path` in `ZKUtil.visitSubTreeDFS` order: a node's children
/// (sorted) first, then each child's subtree in turn.
async fn collect_subtree(zk: &Client, path: &str, out: &mut Vec<String>) -> client::Result<()> {
    zk.get_data(path).await?;
    // An explicit stack keeps deep trees from recursing.
    let mut stack = vec![path.to_string()];
    while let Some(p) = stack.pop() {
        match children_reversed(zk, &p).await {
            Ok(children) => {
                out.extend(children.iter().rev().cloned());
                stack.extend(children);
            }
            // Deleted between listing and visiting: nothing below it (as ZKUtil).
            Err(e) if e.code() == client::ErrorCode::NoNode => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn children_reversed(zk: &Client, path: &str) -> client::Result<Vec<String>> {
    let (mut children, _) = zk.get_children(path).await?;
    children.sort();
    children.reverse();
    Ok(children
        .iter()
        .map(|c| client::path::join(path, c))
        .collect())
}

/// Deletes `paths` (a subtree) deepest first; a node already gone is fine.
async fn delete_deepest_first(zk: &Client, mut paths: Vec<String>) -> client::Result<()> {
    paths.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    for p in paths {
        match zk.delete(&p, -1).await {
            Ok(()) => {}
            Err(e) if e.code() == client::ErrorCode::NoNode => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
