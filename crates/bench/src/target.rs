//! The servers a scenario runs against, started and stopped by the bench itself with the same
//! topology and the same zoo.cfg keys: meerkat (this binary), Apache ZooKeeper 3.9.3
//! (`scripts/zookeeper.sh`, fetched from Maven Central on first use), and `null`.

use crate::null_server;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Meerkat,
    #[value(name = "zookeeper")]
    ZooKeeper,
    /// Answers every request at once without doing any work: the ceiling of the generator and
    /// the kernel on this machine.
    Null,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Meerkat => "meerkat",
            Target::ZooKeeper => "zookeeper",
            Target::Null => "null",
        }
    }
}

/// Where the programs are.
#[derive(Debug, Clone)]
pub struct Programs {
    pub meerkat: PathBuf,
    pub zookeeper_script: PathBuf,
}

impl Programs {
    /// meerkat is this executable; the ZooKeeper script is found from the working directory
    /// or the executable's location (target/<profile>/meerkat inside the repository).
    pub fn locate() -> anyhow::Result<Programs> {
        let meerkat = std::env::current_exe()?;
        let mut candidates = vec![std::env::current_dir()?];
        candidates.extend(meerkat.ancestors().map(Path::to_path_buf));
        let script = candidates
            .iter()
            .flat_map(|d| {
                d.ancestors()
                    .map(|a| a.join("scripts/zookeeper.sh"))
                    .collect::<Vec<_>>()
            })
            .find(|p| p.is_file())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "scripts/zookeeper.sh not found: run meerkat bench from the repository"
                )
            })?;
        Ok(Programs {
            meerkat,
            zookeeper_script: script,
        })
    }
}

/// zoo.cfg settings a scenario chooses (the same for every target).
#[derive(Debug, Clone, Default)]
pub struct ServerSettings {
    pub extra: Vec<(String, String)>,
}

pub struct Launched {
    pub target: Target,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    child: Option<Child>,
    null: Option<null_server::NullServer>,
}

impl Launched {
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops the server (SIGKILL for processes: the bench does not measure shutdown).
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(null) = self.null.take() {
            null.stop();
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts `target` with its data in `dir` (kept if it exists: restarts reuse it) and waits
/// until it serves.
pub async fn launch(
    target: Target,
    programs: &Programs,
    dir: &Path,
    settings: &ServerSettings,
) -> anyhow::Result<Launched> {
    std::fs::create_dir_all(dir)?;
    if target == Target::Null {
        let null = null_server::NullServer::start().await?;
        return Ok(Launched {
            target,
            addr: null.addr,
            dir: dir.to_path_buf(),
            child: None,
            null: Some(null),
        });
    }
    let port = free_port()?;
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let data = dir.join("data");
    std::fs::create_dir_all(&data)?;
    let mut cfg = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n4lw.commands.whitelist=*\n",
        data.display()
    );
    for (k, v) in &settings.extra {
        cfg.push_str(&format!("{k}={v}\n"));
    }
    let cfg_path = dir.join("zoo.cfg");
    std::fs::write(&cfg_path, cfg)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))?;
    let mut command = match target {
        Target::Meerkat => {
            let mut c = Command::new(&programs.meerkat);
            c.arg("server").arg(&cfg_path).env("MEERKAT_LOG", "info");
            c
        }
        Target::ZooKeeper => {
            let mut c = Command::new("bash");
            c.arg(&programs.zookeeper_script)
                .arg("run")
                .arg(&cfg_path)
                .env(
                    "ZK_LOG_LEVEL",
                    std::env::var("ZK_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
                );
            c
        }
        Target::Null => unreachable!("handled above"),
    };
    let child = command.stdout(Stdio::null()).stderr(log).spawn()?;
    let launched = Launched {
        target,
        addr,
        dir: dir.to_path_buf(),
        child: Some(child),
        null: None,
    };
    wait_serving(addr, Duration::from_secs(300)).await?;
    Ok(launched)
}

/// Waits until a session can be established (not just a TCP accept).
pub async fn wait_serving(addr: SocketAddr, limit: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        if let Ok(Ok(_)) = tokio::time::timeout(
            Duration::from_secs(2),
            crate::wire::Session::open(addr, 30_000),
        )
        .await
        {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < limit,
            "server at {addr} did not start serving within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
