//! A real Apache ZooKeeper 3.9.3 (`scripts/zookeeper.sh run`), standalone on a free loopback
//! port with a temporary dataDir. The JVM is the child process itself (the script execs java),
//! so the guard kills it by its pid on drop, panics included.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct ZooKeeper {
    child: Option<Child>,
    pub address: SocketAddr,
    dir: tempfile::TempDir,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/zookeeper.sh")
}

fn free_port() -> u16 {
    ports::free_port().expect("a free port")
}

impl ZooKeeper {
    /// Starts a server and waits until it answers `ruok`.
    pub fn start() -> ZooKeeper {
        // Fetch the jars first (Maven, first run only), outside the bounded wait for `ruok`.
        let fetched = Command::new("bash")
            .arg(script())
            .arg("classpath")
            .stdout(Stdio::null())
            .status()
            .expect("zookeeper.sh classpath");
        assert!(fetched.success(), "fetching ZooKeeper 3.9.3 failed");
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let cfg = dir.path().join("zoo.cfg");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        std::fs::write(
            &cfg,
            format!(
                "tickTime=2000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
                 4lw.commands.whitelist=*\nextendedTypesEnabled=true\nadmin.enableServer=false\n",
                data.display()
            ),
        )
        .expect("zoo.cfg");
        let mut zk = ZooKeeper {
            child: None,
            address: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
        };
        zk.spawn();
        zk
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .expect("log file");
        let child = Command::new("bash")
            .arg(script())
            .arg("run")
            .arg(self.dir.path().join("zoo.cfg"))
            .env("ZK_LOG_LEVEL", "warn")
            .env("ZK_HEAP", "256m")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("zookeeper.sh starts");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Kills the server (SIGKILL, by pid) and starts it again on the same port and dataDir:
    /// sessions and znodes survive, connections do not.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        for _ in 0..600 {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "zookeeper exited with {status}; log: {}",
                        std::fs::read_to_string(self.dir.path().join("server.log"))
                            .unwrap_or_default()
                    );
                }
            }
            if ruok(self.address) {
                return;
            }
            if started.elapsed() > Duration::from_secs(120) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("zookeeper did not answer ruok on {}", self.address);
    }
}

fn ruok(address: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"ruok").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer == "imok"
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        self.kill();
    }
}
