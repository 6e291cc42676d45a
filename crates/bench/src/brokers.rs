//! The message brokers of `queue-vs-brokers` (thesis Fig. 5.7), started by the bench like the
//! other targets: from Maven Central artifacts (`scripts/brokers.sh`, `compat/brokers`), on
//! free loopback ports, each node a process of its own, SIGKILLed by pid when done.
//!
//! * Kafka 3.9: 3 nodes in KRaft mode, each broker and controller at once (no ZooKeeper), the
//!   queue a topic with replication factor 3 and `min.insync.replicas=2`, producers with
//!   `acks=all`. Kafka's default flush policy: a message is acknowledged once the in-sync
//!   replicas have it in memory (the page cache), not fsynced.
//! * ActiveMQ Artemis 2.37: a replicated live/backup pair (the job starts once the backup is
//!   in sync), a durable anycast queue; a durable send returns once the live broker has the
//!   message in its journal, fsynced, and replicated to the backup.
//!
//! The job itself runs in Java (`QueueJob`, Kafka's own client), since a broker is only fairly
//! measured through its own client; it prints a [`JobResult`] as one JSON line.

use crate::scenarios::queue_vs_brokers::JobResult;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A fixed KRaft cluster id (a base64 UUID): every cluster is new, in a fresh directory.
const KAFKA_CLUSTER_ID: &str = "bWVlcmthdC1xdWV1ZWpvYg";
/// How long a cluster may take to start (JVM starts and formatting included).
const START_TIME_MAX: Duration = Duration::from_secs(180);
/// A job's time for its set-up (topic, consumer group, sessions)...
const JOB_SETUP_TIME: Duration = Duration::from_secs(180);
/// ...and per message: far above what a broker on a loaded 2-core machine takes (a few ms).
const JOB_TIME_PER_MESSAGE: Duration = Duration::from_millis(20);
/// How long the job's JVM may outlive its own deadline (its report, its exit) before the bench
/// kills it.
const JOB_EXIT_GRACE: Duration = Duration::from_secs(30);
/// Lines of a log shown when a broker or the job fails.
const LOG_TAIL_LINES: usize = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Broker {
    /// Apache Kafka 3.9.1, 3 KRaft nodes, acks=all, min.insync.replicas=2.
    Kafka,
    /// ActiveMQ Artemis 2.37.0, a replicated live/backup pair, durable messages.
    Artemis,
}

impl Broker {
    pub fn name(self) -> &'static str {
        match self {
            Broker::Kafka => "kafka",
            Broker::Artemis => "artemis",
        }
    }
}

/// A running cluster; dropping it SIGKILLs every node.
pub struct Cluster {
    pub broker: Broker,
    /// The client's bootstrap list (`host:port,...`).
    pub bootstrap: String,
    /// Where the nodes' directories and logs are.
    dir: PathBuf,
    nodes: Vec<Child>,
    logs: Vec<PathBuf>,
}

impl Cluster {
    /// Starts `broker` under `dir` (Kafka with `nodes` nodes; Artemis always as a live/backup
    /// pair) and waits until it can take the job.
    pub async fn start(
        broker: Broker,
        script: &Path,
        dir: &Path,
        nodes: usize,
    ) -> anyhow::Result<Cluster> {
        match broker {
            Broker::Kafka => start_kafka(script, dir, nodes).await,
            Broker::Artemis => start_artemis(script, dir).await,
        }
    }

    pub fn stop(mut self) {
        self.kill_all();
    }

    fn kill_all(&mut self) {
        for node in &mut self.nodes {
            // SIGKILL to the pid we spawned (the script execs the JVM), then reap it.
            let _ = node.kill();
            let _ = node.wait();
        }
        self.nodes.clear();
    }

    /// The tail of every node's log, for an error that needs them.
    fn log_tails(&self) -> String {
        self.logs
            .iter()
            .map(|log| format!("== {}\n{}", log.display(), log_tail(log)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}

async fn start_kafka(script: &Path, dir: &Path, nodes: usize) -> anyhow::Result<Cluster> {
    std::fs::create_dir_all(dir)?;
    let (ports, hold) = ports::free_ports(nodes * 2)?;
    let (client_ports, controller_ports) = ports.split_at(nodes);
    let voters: Vec<String> = controller_ports
        .iter()
        .enumerate()
        .map(|(i, port)| format!("{}@127.0.0.1:{port}", i + 1))
        .collect();
    let mut configs = Vec::new();
    for i in 0..nodes {
        let home = dir.join(format!("kafka-{}", i + 1));
        std::fs::create_dir_all(&home)?;
        let config = home.join("server.properties");
        std::fs::write(
            &config,
            kafka_properties(
                i + 1,
                client_ports[i],
                controller_ports[i],
                &voters,
                &home.join("data"),
            ),
        )?;
        configs.push(config);
    }
    let started = Instant::now();
    // Formatting starts a JVM per node: run them side by side.
    let mut formats = Vec::new();
    for config in &configs {
        let log = config.with_file_name("format.log");
        let child = spawn_logged(
            script_command(script, &["kafka-format", KAFKA_CLUSTER_ID], config),
            &log,
        )?;
        formats.push((child, log));
    }
    for (child, log) in formats {
        let status = wait_bounded(child, started + START_TIME_MAX).await?;
        anyhow::ensure!(
            status.is_some_and(|s| s.success()),
            "formatting a Kafka node: {}; {} ends:\n{}",
            describe(status),
            log.display(),
            log_tail(&log)
        );
    }
    drop(hold);
    let mut cluster = Cluster {
        broker: Broker::Kafka,
        bootstrap: client_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(","),
        dir: dir.to_path_buf(),
        nodes: Vec::new(),
        logs: Vec::new(),
    };
    for config in &configs {
        let log = config.with_file_name("server.log");
        let node = spawn_logged(script_command(script, &["kafka-run"], config), &log)?;
        cluster.nodes.push(node);
        cluster.logs.push(log);
    }
    for port in client_ports {
        if let Err(e) = wait_listening(*port, started + START_TIME_MAX).await {
            anyhow::bail!("{e}; the nodes' logs end:\n{}", cluster.log_tails());
        }
    }
    Ok(cluster)
}

fn kafka_properties(
    id: usize,
    client: u16,
    controller: u16,
    voters: &[String],
    data: &Path,
) -> String {
    format!(
        "process.roles=broker,controller\n\
         node.id={id}\n\
         controller.quorum.voters={voters}\n\
         listeners=PLAINTEXT://127.0.0.1:{client},CONTROLLER://127.0.0.1:{controller}\n\
         advertised.listeners=PLAINTEXT://127.0.0.1:{client}\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
         inter.broker.listener.name=PLAINTEXT\n\
         log.dirs={data}\n\
         default.replication.factor=3\n\
         min.insync.replicas=2\n\
         offsets.topic.replication.factor=3\n\
         offsets.topic.num.partitions=3\n\
         transaction.state.log.replication.factor=3\n\
         transaction.state.log.min.isr=2\n\
         group.initial.rebalance.delay.ms=0\n",
        voters = voters.join(","),
        data = data.display(),
    )
}

async fn start_artemis(script: &Path, dir: &Path) -> anyhow::Result<Cluster> {
    std::fs::create_dir_all(dir)?;
    let (ports, hold) = ports::free_ports(2)?;
    let mut configs = Vec::new();
    for (i, role) in ["live", "backup"].into_iter().enumerate() {
        let home = dir.join(format!("artemis-{role}"));
        std::fs::create_dir_all(&home)?;
        let config = home.join("broker.xml");
        std::fs::write(&config, artemis_xml(role, ports[i], ports[1 - i], &home))?;
        configs.push(config);
    }
    drop(hold);
    let mut cluster = Cluster {
        broker: Broker::Artemis,
        bootstrap: format!(
            "(tcp://127.0.0.1:{},tcp://127.0.0.1:{})?ha=true&reconnectAttempts=-1",
            ports[0], ports[1]
        ),
        dir: dir.to_path_buf(),
        nodes: Vec::new(),
        logs: Vec::new(),
    };
    let deadline = Instant::now() + START_TIME_MAX;
    // The live broker first: the backup replicates from it.
    for (config, ready) in configs.iter().zip(["started", "backup in sync"]) {
        let log = config.with_file_name("server.log");
        let node = spawn_logged(script_command(script, &["artemis-run"], config), &log)?;
        cluster.nodes.push(node);
        cluster.logs.push(log.clone());
        wait_for_line(&log, ready, deadline).await?;
    }
    Ok(cluster)
}

/// broker.xml of one broker of the pair: persistence on (journal fsynced on every durable
/// send and acknowledgement), replication to or from `peer`. Producers are blocked only when
/// the disk is full: by default Artemis blocks them once the whole disk (not its own files) is
/// 90 % used, and then the job waits for ever (seen on a build machine whose disk was 95 %
/// used by other things).
fn artemis_xml(role: &str, port: u16, peer: u16, home: &Path) -> String {
    let policy = if role == "live" {
        "<primary><check-for-active-server>true</check-for-active-server></primary>"
    } else {
        "<backup><allow-failback>true</allow-failback></backup>"
    };
    let home = home.display();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<configuration xmlns="urn:activemq" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
               xsi:schemaLocation="urn:activemq /schema/artemis-configuration.xsd">
  <core xmlns="urn:activemq:core">
    <name>{role}</name>
    <persistence-enabled>true</persistence-enabled>
    <journal-type>NIO</journal-type>
    <journal-sync-transactional>true</journal-sync-transactional>
    <journal-sync-non-transactional>true</journal-sync-non-transactional>
    <journal-pool-files>10</journal-pool-files>
    <max-disk-usage>100</max-disk-usage>
    <bindings-directory>{home}/bindings</bindings-directory>
    <journal-directory>{home}/journal</journal-directory>
    <paging-directory>{home}/paging</paging-directory>
    <large-messages-directory>{home}/large-messages</large-messages-directory>
    <security-enabled>false</security-enabled>
    <cluster-user>bench</cluster-user>
    <cluster-password>bench</cluster-password>
    <connectors>
      <connector name="self">tcp://127.0.0.1:{port}</connector>
      <connector name="peer">tcp://127.0.0.1:{peer}</connector>
    </connectors>
    <acceptors>
      <acceptor name="core">tcp://127.0.0.1:{port}?protocols=CORE</acceptor>
    </acceptors>
    <cluster-connections>
      <cluster-connection name="pair">
        <connector-ref>self</connector-ref>
        <static-connectors><connector-ref>peer</connector-ref></static-connectors>
      </cluster-connection>
    </cluster-connections>
    <ha-policy><replication>{policy}</replication></ha-policy>
  </core>
</configuration>
"#
    )
}

/// Waits until the log at `path` has a line equal to `line` (a node exiting shows up as a
/// timeout, with the log's tail).
async fn wait_for_line(path: &Path, line: &str, deadline: Instant) -> anyhow::Result<()> {
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().any(|l| l == line) {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!(
                "{} did not say {line:?} within {START_TIME_MAX:?}; its log ends:\n{}",
                path.display(),
                log_tail(path)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The last [`LOG_TAIL_LINES`] lines of the file at `path` (empty if it cannot be read).
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Spawns `command` with its output (stdout and stderr) going to a new file at `log`.
fn spawn_logged(mut command: Command, log: &Path) -> anyhow::Result<Child> {
    let file = std::fs::File::create(log)?;
    Ok(command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()?)
}

/// Waits for `child` to exit until `deadline`; past it, SIGKILLs it (by its pid) and reaps it.
/// `None`: it was killed.
async fn wait_bounded(
    mut child: Child,
    deadline: Instant,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How a bounded child ended, for an error message.
fn describe(status: Option<std::process::ExitStatus>) -> String {
    match status {
        Some(status) => format!("it exited with {status}"),
        None => "it was still running at its deadline and was killed".into(),
    }
}

/// `bash brokers.sh ARGS... CONFIG`.
fn script_command(script: &Path, args: &[&str], config: &Path) -> Command {
    let mut command = Command::new("bash");
    command.arg(script).args(args).arg(config);
    command
}

async fn wait_listening(port: u16, deadline: Instant) -> anyhow::Result<()> {
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no broker listening on 127.0.0.1:{port} after {START_TIME_MAX:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The time a job of `messages` messages is given, set-up included.
pub fn job_time_max(messages: u64) -> Duration {
    JOB_SETUP_TIME + JOB_TIME_PER_MESSAGE * u32::try_from(messages).unwrap_or(u32::MAX)
}

/// Runs the producer/consumer job against `cluster` with Kafka's own client. The job has
/// [`job_time_max`] to finish; a job that fails or outlives it (then killed) fails the run
/// with the job's output and the tails of the nodes' logs.
pub async fn run_job(
    script: &Path,
    cluster: &Cluster,
    messages: u64,
    producers: usize,
    consumers: usize,
    size: usize,
) -> anyhow::Result<JobResult> {
    let time_max = job_time_max(messages);
    let args: Vec<String> = vec![
        "job".into(),
        cluster.broker.name().into(),
        cluster.bootstrap.clone(),
        messages.to_string(),
        producers.to_string(),
        consumers.to_string(),
        size.to_string(),
        time_max.as_secs().to_string(),
    ];
    let stdout_path = cluster.dir.join("job.out");
    let stderr_path = cluster.dir.join("job.err");
    let child = Command::new("bash")
        .arg(script)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()?;
    let status = wait_bounded(child, Instant::now() + time_max + JOB_EXIT_GRACE).await?;
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    anyhow::ensure!(
        status.is_some_and(|s| s.success()),
        "the {} job failed ({}); {} ends:\n{}\nthe nodes' logs end:\n{}",
        cluster.broker.name(),
        describe(status),
        stderr_path.display(),
        log_tail(&stderr_path),
        cluster.log_tails()
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the {} job printed no result: {stdout}",
                cluster.broker.name()
            )
        })?;
    Ok(serde_json::from_str(line)?)
}
