//! Recorded client operations, and a light concurrent workload made of them.
//!
//! [`Recorder`] wraps one session ([`client::Client`]) as one process of a [`History`]: each call
//! records its invocation, runs the operation with a time limit, and records the outcome, the
//! zxid the answer carries and the session's last seen zxid. [`Workload`] runs several such
//! processes, each on its own session, writing unique values and reading a few keys until it
//! is stopped; a process whose session ends is replaced by a new one (a new process id).

use crate::history::{History, Operation, Outcome};
use client::{Client, ClientConfig, CreateMode, Error, ErrorCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Operations one workload process runs at most.
pub const OPS_PER_PROCESS_MAX: u64 = 1_000_000;
/// Processes one workload runs at once at most.
pub const PROCESSES_MAX: usize = 64;

/// One session recording its operations into a history as one process.
#[derive(Clone)]
pub struct Recorder {
    pub client: Client,
    pub process: u64,
    history: History,
    op_timeout: Duration,
}

impl Recorder {
    /// `op_timeout` bounds each operation; past it the outcome is unknown.
    pub fn new(client: Client, process: u64, history: History, op_timeout: Duration) -> Recorder {
        Recorder {
            client,
            process,
            history,
            op_timeout,
        }
    }

    /// `set_data(key, value, -1)`.
    pub async fn write(&self, key: &str, value: &str) -> Outcome {
        let operation = Operation::Write {
            key: key.to_string(),
            value: value.to_string(),
        };
        let call = self.client.set_data(key, value.as_bytes(), -1);
        self.record(operation, async {
            call.await.map(|stat| (None, stat.mzxid))
        })
        .await
    }

    /// `create(key, value)`, persistent, open ACL: a write if it succeeds.
    pub async fn create(&self, key: &str, value: &str) -> Outcome {
        let operation = Operation::Write {
            key: key.to_string(),
            value: value.to_string(),
        };
        let acl = client::acl::open_unsafe();
        let call = self
            .client
            .create(key, value.as_bytes(), &acl, CreateMode::Persistent);
        self.record(operation, async {
            call.await.map(|(_, stat)| (None, stat.mzxid))
        })
        .await
    }

    /// `get_data(key)`.
    pub async fn read(&self, key: &str) -> Outcome {
        let operation = Operation::Read {
            key: key.to_string(),
        };
        self.record(operation, get_value(&self.client, key)).await
    }

    /// `sync(key)` then `get_data(key)`.
    pub async fn sync_read(&self, key: &str) -> Outcome {
        let operation = Operation::SyncRead {
            key: key.to_string(),
        };
        let client = &self.client;
        let call = async move {
            client.sync(key).await?;
            get_value(client, key).await
        };
        self.record(operation, call).await
    }

    /// Records `operation`, runs `call` (value read, zxid of the answer) within the time limit,
    /// and records how it ended.
    async fn record<F>(&self, operation: Operation, call: F) -> Outcome
    where
        F: std::future::Future<Output = client::Result<(Option<String>, i64)>>,
    {
        let ticket = self.history.invoke(self.process, operation);
        let (outcome, zxid, answered) = match tokio::time::timeout(self.op_timeout, call).await {
            Ok(Ok((value, zxid))) => (Outcome::Ok { value }, Some(zxid), true),
            Ok(Err(error)) if is_definite(&error) => (Outcome::Fail(error.to_string()), None, true),
            Ok(Err(error)) => (Outcome::Unknown(error.to_string()), None, false),
            Err(_) => (
                Outcome::Unknown(format!("no answer within {:?}", self.op_timeout)),
                None,
                false,
            ),
        };
        let session_zxid = answered.then(|| self.client.info().last_zxid);
        self.history
            .complete(ticket, outcome.clone(), zxid, session_zxid);
        outcome
    }
}

/// The value at `key` and its mzxid; an absent znode is `(None, 0)`.
async fn get_value(client: &Client, key: &str) -> client::Result<(Option<String>, i64)> {
    match client.get_data(key).await {
        Ok((data, stat)) => Ok((
            Some(String::from_utf8_lossy(&data).into_owned()),
            stat.mzxid,
        )),
        Err(e) if e.code() == ErrorCode::NoNode => Ok((None, 0)),
        Err(e) => Err(e),
    }
}

/// Errors the server sends for a request it did not carry out. Anything else (connection
/// loss, session expiry while a request was outstanding, timeouts) leaves the outcome unknown.
fn is_definite(error: &Error) -> bool {
    matches!(
        error.code(),
        ErrorCode::NoNode
            | ErrorCode::NodeExists
            | ErrorCode::BadVersion
            | ErrorCode::NotEmpty
            | ErrorCode::BadArguments
            | ErrorCode::NoAuth
            | ErrorCode::InvalidAcl
    )
}

/// The shape of a [`Workload`].
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    /// Concurrent processes (sessions).
    pub processes: usize,
    /// The registers; they should exist before the workload starts.
    pub keys: Vec<String>,
    /// Pause between two operations of one process.
    pub pause: Duration,
    /// Per operation; past it the outcome is unknown.
    pub op_timeout: Duration,
    pub session_timeout: Duration,
    /// Out of 100 operations: writes, then `sync`+reads; the rest are plain reads.
    pub write_percent: u32,
    pub sync_read_percent: u32,
    /// Seeds each process's choice of operations and keys.
    pub seed: u64,
}

impl Default for WorkloadOptions {
    fn default() -> Self {
        WorkloadOptions {
            processes: 4,
            keys: (0..4).map(|i| format!("/reg-{i}")).collect(),
            pause: Duration::from_millis(15),
            op_timeout: Duration::from_secs(5),
            session_timeout: Duration::from_secs(4),
            write_percent: 50,
            sync_read_percent: 30,
            seed: 1,
        }
    }
}

/// Processes running operations until [`Workload::stop`].
pub struct Workload {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts `options.processes` processes; process `i` connects with `connect_strings[i %
    /// len]` (rotate the hosts so processes start on different servers). Process ids come from
    /// `next_process`, shared with the test's own recorders so that ids stay unique.
    ///
    /// # Panics
    /// With no connect string or more than [`PROCESSES_MAX`] processes.
    pub fn start(
        connect_strings: Vec<String>,
        history: History,
        next_process: Arc<AtomicU64>,
        options: WorkloadOptions,
    ) -> Workload {
        assert!(!connect_strings.is_empty(), "no connect string");
        assert!(options.processes <= PROCESSES_MAX, "too many processes");
        assert!(!options.keys.is_empty(), "no keys");
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..options.processes)
            .map(|i| {
                let worker = Worker {
                    connect_string: connect_strings[i % connect_strings.len()].clone(),
                    history: history.clone(),
                    next_process: next_process.clone(),
                    options: options.clone(),
                    stop: stop.clone(),
                    rng: options.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64 + 1),
                };
                tokio::spawn(worker.run())
            })
            .collect();
        Workload { stop, tasks }
    }

    /// Stops every process after its current operation and waits for them (each waits at most
    /// one operation timeout plus one connection attempt).
    pub async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

struct Worker {
    connect_string: String,
    history: History,
    next_process: Arc<AtomicU64>,
    options: WorkloadOptions,
    stop: Arc<AtomicBool>,
    rng: u64,
}

impl Worker {
    async fn run(mut self) {
        let mut recorder: Option<Recorder> = None;
        for sequence in 0..OPS_PER_PROCESS_MAX {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let session = match recorder.take() {
                Some(r) if !r.client.state().is_terminal() => r,
                _ => match self.connect().await {
                    Some(r) => r,
                    None => continue,
                },
            };
            self.one_operation(&session, sequence).await;
            recorder = Some(session);
            tokio::time::sleep(self.options.pause).await;
        }
        if let Some(r) = recorder {
            r.client.close().await;
        }
    }

    async fn connect(&self) -> Option<Recorder> {
        let config = ClientConfig::default()
            .with_session_timeout(self.options.session_timeout)
            .with_connect_timeout(self.options.op_timeout);
        match Client::connect(&self.connect_string, config).await {
            Ok(client) => {
                let process = self.next_process.fetch_add(1, Ordering::SeqCst);
                let recorder = Recorder::new(
                    client,
                    process,
                    self.history.clone(),
                    self.options.op_timeout,
                );
                Some(recorder)
            }
            Err(_) => {
                tokio::time::sleep(self.options.pause.max(Duration::from_millis(100))).await;
                None
            }
        }
    }

    async fn one_operation(&mut self, recorder: &Recorder, sequence: u64) {
        let pick = self.next_random() % self.options.keys.len() as u64;
        let key = self.options.keys[pick as usize].clone();
        let dice = (self.next_random() % 100) as u32;
        if dice < self.options.write_percent {
            let value = format!("p{}-{sequence}", recorder.process);
            recorder.write(&key, &value).await;
        } else if dice < self.options.write_percent + self.options.sync_read_percent {
            recorder.sync_read(&key).await;
        } else {
            recorder.read(&key).await;
        }
    }

    /// xorshift64*: the process's own seeded sequence.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
