//! The shell against a real (in-process) meerkat server: zkCli's outputs, error messages, exit
//! codes and watch event lines.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::shell::{Outcome, Shell, Sink, EXIT_FAILED, EXIT_NOT_FOUND, EXIT_OK};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(super) struct Fixture {
    pub(super) shell: Shell,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    /// Everything printed on stdout so far (watch events may land in any command's output).
    log: String,
    // Keeps the server's runtime (and so the server) alive.
    _server_runtime: tokio::runtime::Runtime,
    data_dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shell.shutdown();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// A fresh data directory for one test's server.
fn fresh_data_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "meerkat-cli-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Fixture {
    pub(super) fn new() -> Fixture {
        Fixture::configured(|_| {})
    }

    /// As [`Fixture::new`], with `configure` applied to the server's configuration.
    pub(super) fn configured(configure: impl FnOnce(&mut server::config::ServerConfig)) -> Fixture {
        let server_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut config = server::config::ServerConfig::embedded_default();
        config.client_port = 0;
        config.client_port_address = IpAddr::V4(Ipv4Addr::LOCALHOST);
        config.extended_types_enabled = true;
        let data_dir = fresh_data_dir();
        config.data_dir = data_dir.clone();
        config.data_log_dir = data_dir.clone();
        config.pre_alloc_size_kb = 1024;
        configure(&mut config);
        let server = server_runtime.block_on(server::start(config)).unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        let (out_sink, err_sink): (Sink, Sink) = (out.clone(), err.clone());
        let address = server.client_address.to_string();
        let mut shell = Shell::new(&address, out_sink, err_sink, false).unwrap();
        assert!(shell.connect(&address));
        Fixture {
            shell,
            out,
            err,
            log: String::new(),
            _server_runtime: server_runtime,
            data_dir,
        }
    }

    /// Runs a line; returns (exit code, stdout, stderr) of that line alone.
    pub(super) fn run(&mut self, line: &str) -> (i32, String, String) {
        self.take_out();
        self.err.lock().unwrap().clear();
        let code = match self.shell.execute_line(line) {
            Outcome::Done(code) => code,
            Outcome::Quit => -1,
        };
        (
            code,
            self.take_out(),
            String::from_utf8(self.err.lock().unwrap().clone()).unwrap(),
        )
    }

    fn take_out(&mut self) -> String {
        let out = String::from_utf8(std::mem::take(&mut *self.out.lock().unwrap())).unwrap();
        self.log.push_str(&out);
        out
    }

    /// Waits (bounded) until stdout has shown `text`; returns everything shown, and forgets it.
    fn wait_out(&mut self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            self.take_out();
            if self.log.contains(text) {
                return std::mem::take(&mut self.log);
            }
            let out = self.log.clone();
            assert!(
                Instant::now() < deadline,
                "never printed {text:?}; got {out:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn create_get_set_ls_delete_like_zkcli() {
    let mut f = Fixture::new();
    assert_eq!(
        f.run("create /app hello"),
        (EXIT_OK, String::new(), "Created /app\n".into())
    );
    assert_eq!(
        f.run("create /app/b"),
        (EXIT_OK, String::new(), "Created /app/b\n".into())
    );
    assert_eq!(f.run("get /app").1, "hello\n");
    assert_eq!(
        f.run("get /app/b").1,
        "null\n",
        "zkCli stores null data without an argument"
    );
    let (code, out, _) = f.run("get -s /app");
    assert_eq!(code, EXIT_OK);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "hello");
    assert!(lines[1].starts_with("cZxid = 0x"));
    assert!(lines[2].starts_with("ctime = ") && lines[2].contains(" UTC "));
    assert_eq!(lines[6], "cversion = 1");
    assert_eq!(lines[7], "dataVersion = 0");
    assert_eq!(lines[11], "numChildren = 1");
    assert_eq!(f.run("set /app 'hi there' -v 0").0, EXIT_OK);
    assert_eq!(f.run("get /app").1, "hi there\n");
    assert_eq!(
        f.run("set /app x -v 0"),
        (
            EXIT_FAILED,
            String::new(),
            "version No is not valid : /app\n".into()
        )
    );
    let (_, out, _) = f.run("set -s /app y");
    assert!(out.contains("dataVersion = 2\n"), "{out}");
    f.run("create -s /app/q- x");
    f.run("create -e /app/e");
    assert_eq!(f.run("ls /app").1, "[b, e, q-0000000001]\n");
    assert_eq!(
        f.run("ls -R /app").1,
        "/app\n/app/b\n/app/e\n/app/q-0000000001\n"
    );
    let (_, out, _) = f.run("ls -s /app");
    assert!(out.starts_with("[b, e, q-0000000001]\ncZxid = 0x"));
    assert!(out.contains("numChildren = 3\n"));
    let (_, out, _) = f.run("stat /app/e");
    assert!(out.contains("ephemeralOwner = 0x") && !out.contains("ephemeralOwner = 0x0\n"));
    assert_eq!(f.run("getAllChildrenNumber /app").1, "3\n");
    assert_eq!(f.run("getEphemerals /app").1, "[/app/e]\n");
    assert_eq!(f.run("sync /app").1, "Sync is OK\n");
    assert_eq!(
        f.run("delete /app"),
        (EXIT_FAILED, String::new(), "Node not empty: /app\n".into())
    );
    assert_eq!(
        f.run("delete -v 3 /app/b").2,
        "version No is not valid : /app/b\n"
    );
    assert_eq!(f.run("delete /app/b").0, EXIT_OK);
    assert_eq!(f.run("deleteall /app").0, EXIT_OK);
    assert_eq!(
        f.run("get /app"),
        (
            EXIT_FAILED,
            String::new(),
            "Node does not exist: /app\n".into()
        )
    );
    assert_eq!(f.run("stat /x").2, "Node does not exist: /x\n");
    assert_eq!(
        f.run("create /x"),
        (EXIT_OK, String::new(), "Created /x\n".into())
    );
    assert_eq!(f.run("create /x").2, "Node already exists: /x\n");
    assert_eq!(f.run("create -c -e /y").0, EXIT_FAILED);
    assert_eq!(f.run("create -t 5000 /ttl").2, "Created /ttl\n");
    assert_eq!(f.run("create -c /container").2, "Created /container\n");
    f.shell.shutdown();
}

#[test]
fn acl_auth_and_whoami_like_zkcli() {
    let mut f = Fixture::new();
    assert_eq!(f.run("getAcl /").1, "'world,'anyone\n: cdrwa\n");
    assert_eq!(f.run("addauth digest alice:pw").0, EXIT_OK);
    let (_, out, _) = f.run("whoami");
    assert!(out.starts_with("Auth scheme: User\n"), "{out}");
    assert!(out.contains("digest: alice\n"), "{out}");
    f.run("create /secret s auth::cdrwa");
    let digest = client::acl::digest_id("alice:pw");
    assert_eq!(
        f.run("getAcl /secret").1,
        format!("'digest,'{digest}\n: cdrwa\n")
    );
    assert_eq!(f.run("setAcl /secret world:anyone:r").0, EXIT_OK);
    assert_eq!(f.run("getAcl /secret").1, "'world,'anyone\n: r\n");
    assert_eq!(
        f.run("set /secret x"),
        (
            EXIT_FAILED,
            String::new(),
            "Insufficient permission : /secret\n".into()
        )
    );
    f.shell.shutdown();
}

#[test]
fn watch_events_are_printed_as_they_arrive() {
    let mut f = Fixture::new();
    f.run("create /w a");
    assert_eq!(f.run("get -w /w").1, "a\n");
    f.run("set /w b");
    let out = f.wait_out("NodeDataChanged");
    assert!(
        out.contains(
            "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:/w zxid: "
        ),
        "{out:?}"
    );
    assert_eq!(f.run("addWatch -m persistent /w").0, EXIT_OK);
    f.run("set /w c");
    f.wait_out("type:NodeDataChanged path:/w");
    assert_eq!(f.run("addWatch /r").0, EXIT_OK);
    f.run("create /r");
    f.run("create /r/kid");
    f.wait_out("type:NodeCreated path:/r/kid");
    assert_eq!(f.run("removewatches /w -p").0, EXIT_OK);
    // The removal's own event is printed asynchronously; let it out before the next command,
    // whose output is compared whole.
    f.wait_out("type:PersistentWatchRemoved path:/w");
    assert_eq!(f.run("ls -w /r").1, "[kid]\n");
    f.run("delete /r/kid");
    f.wait_out("type:NodeChildrenChanged path:/r");
    assert_eq!(
        f.run("stat -w /nothing").2,
        "Node does not exist: /nothing\n"
    );
    f.run("create /nothing");
    f.wait_out("type:NodeCreated path:/nothing");
    f.shell.shutdown();
}

#[test]
fn usage_errors_closed_sessions_and_quit() {
    let mut f = Fixture::new();
    let (code, _, err) = f.run("frobnicate /");
    assert_eq!(code, EXIT_NOT_FOUND);
    assert!(
        err.ends_with("Command not found: Command not found frobnicate\n"),
        "{err}"
    );
    assert_eq!(f.run("ls").0, EXIT_FAILED);
    assert_eq!(
        f.run("ls -q /").2,
        "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -q\n"
    );
    assert_eq!(f.run("close").0, EXIT_OK);
    assert_eq!(
        f.run("ls /"),
        (EXIT_FAILED, "Not connected\n".into(), String::new())
    );
    let server = f.shell.prompt();
    assert!(server.contains("(CLOSED)"), "{server}");
    let address = server
        .trim_start_matches("[zk: ")
        .split('(')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(f.run(&format!("connect {address}")).0, EXIT_OK);
    assert!(f.shell.prompt().contains("(CONNECTED)"));
    assert_eq!(f.run("ls /zookeeper").0, EXIT_OK);
    assert_eq!(f.shell.execute_line("quit"), Outcome::Quit);
}

/// The quota commands against meerkat with `enforceQuota=true`: the server's stats in
/// `listquota`, a create past the hard limit refused with zkCli's message, the limit lifted.
#[test]
fn quotas_like_zkcli_with_enforcement() {
    let mut f = Fixture::configured(|c| c.enforce_quota = Some(true));
    f.run("create /app hello");
    f.run("create /app/a 12");
    assert_eq!(
        f.run("setquota -N 3 /app"),
        (EXIT_OK, String::new(), String::new())
    );
    let absolute = "absolute path is /zookeeper/quota/app/zookeeper_limits\n";
    assert_eq!(
        f.run("listquota /app"),
        (
            EXIT_OK,
            "Output quota for /app count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3\n\
             Output stat for /app count=2,bytes=7\n"
                .into(),
            absolute.into()
        )
    );
    assert_eq!(f.run("create /app/b").0, EXIT_OK);
    assert_eq!(
        f.run("create /app/c"),
        (
            EXIT_FAILED,
            String::new(),
            "Quota has exceeded : /app/c\n".into()
        )
    );
    assert!(f
        .run("listquota /app")
        .1
        .ends_with("Output stat for /app count=3,bytes=7\n"));
    assert_eq!(f.run("delquota -N /app").0, EXIT_OK);
    assert_eq!(f.run("create /app/c").0, EXIT_OK);
    assert_eq!(f.run("delquota /app").0, EXIT_OK);
    assert_eq!(
        f.run("listquota /app"),
        (
            EXIT_OK,
            String::new(),
            format!("{absolute}quota for /app does not exist.\n")
        )
    );
    assert_eq!(f.run("ls /zookeeper/quota").1, "[]\n");
}
