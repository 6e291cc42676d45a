//! Replicated ensembles of real processes under faults (DESIGN.md §7, the server row): leader
//! SIGKILL and SIGSTOP, follower catch-up, a partitioned leader, a session outliving its
//! server, quorum loss and recovery with 5 members.
//!
//! Each scenario runs against meerkat (`scenario::meerkat`, in plain `cargo test`) and against
//! Apache ZooKeeper 3.9.3, the reference (`scenario::zookeeper`: it needs Java and fetches jars
//! with Maven the first time, so plain `cargo test` leaves it out and `scripts/test-all.sh`
//! runs it):
//!
//! ```sh
//! cargo test -p meerkat --test ensemble zookeeper -- --ignored --nocapture
//! ```
//!
//! While faults are injected, a light workload of several sessions writes unique values to a few
//! registers and reads them (plain and `sync`+read). Every operation is recorded, and at the end
//! the history must be linearizable per register (writes and `sync`+reads; unknown outcomes may
//! or may not have happened) and each session's zxids must never go backwards; a violation fails
//! the test with the offending operations. Scenarios run one at a time (they share 2 cores).
//! `MEERKAT_TEST_KEEP=1` keeps every ensemble's files; a failing scenario keeps its own.
//!
//! `over_quorum_tls` runs every scenario again with `sslQuorum=true`: every peer connection
//! mutual TLS (certificates made by the test), the peer fault proxies in between.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{anyhow, bail, ensure, Context, Result};
use client::{acl, Client, ClientConfig, CreateMode, EventType, SessionState};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::history::Outcome;
use testkit::workload::{Recorder, Workload, WorkloadOptions};
use testkit::{Cut, Ensemble, Flavor, History, Options, Role, Signal};

// ---- running a scenario against each flavor ----

fn meerkat() -> Option<Flavor> {
    Some(Flavor::Meerkat {
        binary: PathBuf::from(env!("CARGO_BIN_EXE_meerkat")),
    })
}

fn zookeeper() -> Option<Flavor> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/zookeeper.sh");
    Some(Flavor::ZooKeeper { script })
}

/// One scenario at a time: ensembles of JVMs or meerkats compete for 2 cores otherwise.
static SERIAL: Mutex<()> = Mutex::new(());

/// zoo.cfg lines every member of the running scenario gets besides its options' (set under
/// [`SERIAL`] by [`run_over_quorum_tls`]).
static EXTRA_CONFIG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn extra_config() -> Vec<String> {
    EXTRA_CONFIG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// Runs a meerkat scenario with `sslQuorum=true`: a CA and one member certificate for
/// 127.0.0.1 (every member and proxy is there), as PEM files in a directory of their own.
fn run_over_quorum_tls<F, Fut>(scenario: F)
where
    F: FnOnce(Flavor) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let dir = tempfile::tempdir().expect("certificate dir");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca");
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "ensemble CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca =
        rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().expect("key"))
            .expect("ca cert");
    let key = rcgen::KeyPair::generate().expect("key");
    let member = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("member")
        .signed_by(&key, &ca)
        .expect("member cert");
    let (trust, store) = (dir.path().join("ca.pem"), dir.path().join("member.pem"));
    std::fs::write(&trust, ca.pem()).expect("write");
    std::fs::write(&store, format!("{}{}", key.serialize_pem(), member.pem())).expect("write");
    let lines = vec![
        "sslQuorum=true".to_string(),
        format!("ssl.quorum.keyStore.location={}", store.display()),
        format!("ssl.quorum.trustStore.location={}", trust.display()),
    ];
    run_with(meerkat(), lines, scenario);
}

fn run<F, Fut>(flavor: Option<Flavor>, scenario: F)
where
    F: FnOnce(Flavor) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    run_with(flavor, Vec::new(), scenario);
}

fn run_with<F, Fut>(flavor: Option<Flavor>, extra: Vec<String>, scenario: F)
where
    F: FnOnce(Flavor) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let Some(flavor) = flavor else {
        return;
    };
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    *EXTRA_CONFIG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = extra;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    if let Err(error) = runtime.block_on(scenario(flavor)) {
        panic!("{error:#}");
    }
}

macro_rules! against_both {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[test]
            fn meerkat() {
                super::run(super::meerkat(), super::$scenario)
            }
            #[test]
            #[ignore = "the Apache ZooKeeper reference run needs Java; scripts/test-all.sh runs it"]
            fn zookeeper() {
                super::run(super::zookeeper(), super::$scenario)
            }
        }
    )*};
}

against_both!(
    reconfig_remove_and_add,
    leader_kill,
    leader_term,
    minority_releases_clients,
    leader_pause,
    follower_catch_up,
    leader_partition,
    leader_partition_silent,
    session_survives_server_kill,
    five_servers_quorum_loss,
);

macro_rules! over_quorum_tls {
    ($($scenario:ident),* $(,)?) => {
        /// Every fault scenario again with every peer connection in mutual TLS (meerkat only:
        /// the reference runs above are plaintext).
        mod over_quorum_tls {$(
            #[test]
            fn $scenario() {
                super::run_over_quorum_tls(super::$scenario)
            }
        )*}
    };
}

over_quorum_tls!(
    leader_kill,
    minority_releases_clients,
    leader_pause,
    follower_catch_up,
    leader_partition,
    leader_partition_silent,
    session_survives_server_kill,
    five_servers_quorum_loss,
    diskless_restarts,
    diskless_power_loss,
);

/// Lost-quorum recovery is meerkat's own command: meerkat only.
#[test]
fn lost_quorum_recovery_meerkat() {
    run(meerkat(), lost_quorum_recovery)
}

/// Diskless mode has no ZooKeeper counterpart: meerkat only.
#[test]
fn diskless_thesis_alg_5_2() {
    run(meerkat(), diskless_restarts)
}

/// Diskless mode's stated risk, with real processes: the whole ensemble SIGKILLed at once.
#[test]
fn diskless_whole_ensemble_power_loss() {
    run(meerkat(), diskless_power_loss)
}

// ---- the fixture every scenario uses ----

const KEYS: [&str; 4] = ["/reg-0", "/reg-1", "/reg-2", "/reg-3"];
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
const OP_TIMEOUT: Duration = Duration::from_secs(5);
/// Per operation of the probes aimed at a server that is expected not to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Bound on waiting for the first write after a fault.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(30);

/// An ensemble, the history of everything done to it, and the process ids handed out.
struct Fixture {
    ensemble: Ensemble,
    history: History,
    next_process: Arc<AtomicU64>,
    began: Instant,
}

impl Fixture {
    async fn start(flavor: Flavor, mut options: Options) -> Result<Fixture> {
        options.extra_config.extend(extra_config());
        let began = Instant::now();
        let ensemble = Ensemble::start(flavor, options).await?;
        let fixture = Fixture {
            ensemble,
            history: History::new(),
            next_process: Arc::new(AtomicU64::new(1)),
            began,
        };
        fixture.note(&format!("started: {}", fixture.ensemble.describe().await));
        Ok(fixture)
    }

    fn note(&self, message: &str) {
        eprintln!(
            "[{} +{:.2}s] {message}",
            self.ensemble.flavor().name(),
            self.began.elapsed().as_secs_f64()
        );
    }

    /// A recorded session on `connect_string`, as a new process.
    async fn recorder(&self, connect_string: &str) -> Result<Recorder> {
        self.recorder_within(connect_string, OP_TIMEOUT).await
    }

    /// A recorded session whose operations (and connection) wait at most `op_timeout`.
    async fn recorder_within(
        &self,
        connect_string: &str,
        op_timeout: Duration,
    ) -> Result<Recorder> {
        let config = ClientConfig::default()
            .with_session_timeout(SESSION_TIMEOUT)
            .with_connect_timeout(op_timeout);
        let client = Client::connect(connect_string, config)
            .await
            .with_context(|| format!("connecting to {connect_string}"))?;
        let process = self.next_process.fetch_add(1, Ordering::SeqCst);
        Ok(Recorder::new(
            client,
            process,
            self.history.clone(),
            op_timeout,
        ))
    }

    /// Creates the registers (recorded: they start absent).
    async fn create_registers(&self, keys: &[&str]) -> Result<()> {
        let setup = self.recorder(&self.ensemble.connect_string()).await?;
        for key in keys {
            let outcome = setup.create(key, "init").await;
            ensure!(
                matches!(outcome, Outcome::Ok { .. }),
                "create {key}: {outcome:?}"
            );
        }
        setup.client.close().await;
        Ok(())
    }

    fn workload(&self) -> Workload {
        let options = WorkloadOptions {
            processes: 4,
            keys: KEYS.iter().map(|k| k.to_string()).collect(),
            op_timeout: OP_TIMEOUT,
            session_timeout: SESSION_TIMEOUT,
            ..WorkloadOptions::default()
        };
        Workload::start(
            self.ensemble.connect_strings(),
            self.history.clone(),
            self.next_process.clone(),
            options,
        )
    }

    /// Successful writes invoked at or after `from_ns` and completed before `until_ns`.
    fn ok_writes_between(&self, from_ns: u64, until_ns: u64) -> usize {
        self.history
            .records()
            .iter()
            .filter(|r| r.is_ok() && r.operation.is_write() && r.invoke_ns >= from_ns)
            .filter(|r| r.complete_ns.is_some_and(|c| c < until_ns))
            .count()
    }

    /// Waits for a write invoked at or after `from_ns` to succeed; returns how long after
    /// `from_ns` it completed.
    async fn first_write_after(&self, from_ns: u64) -> Result<Duration> {
        let deadline = Instant::now() + PROGRESS_TIMEOUT;
        loop {
            let first = self
                .history
                .records()
                .iter()
                .filter(|r| r.is_ok() && r.operation.is_write() && r.invoke_ns >= from_ns)
                .filter_map(|r| r.complete_ns)
                .min();
            if let Some(done) = first {
                return Ok(Duration::from_nanos(done - from_ns));
            }
            if Instant::now() >= deadline {
                bail!(
                    "no write succeeded within {PROGRESS_TIMEOUT:?}; members: {}",
                    self.ensemble.describe().await
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until all live members agree, then `sync`+reads every key on each of them
    /// (recorded) and requires the same values everywhere.
    async fn converge_and_compare(&self, keys: &[&str]) -> Result<()> {
        let converged = self.ensemble.wait_converged().await?;
        self.note(&format!("converged: {converged:?}"));
        let mut seen: BTreeMap<&str, (u32, Option<String>)> = BTreeMap::new();
        for sid in self.ensemble.live_sids() {
            let only = self.ensemble.client_address(sid).to_string();
            let reader = self.recorder(&only).await?;
            for &key in keys {
                let Outcome::Ok { value } = reader.sync_read(key).await else {
                    bail!("sync+read of {key} on server {sid} failed");
                };
                match seen.get(key) {
                    Some((other, v)) if *v != value => bail!(
                        "servers disagree on {key}: server {other} has {v:?}, \
                         server {sid} has {value:?}"
                    ),
                    _ => {
                        seen.insert(key, (sid, value));
                    }
                }
            }
            reader.client.close().await;
        }
        Ok(())
    }

    /// Full-house elections won by the live members, from `mntr` (meerkat only).
    async fn full_house_elections(&self) -> Result<u64> {
        let mut total = 0;
        for sid in self.ensemble.live_sids() {
            total += self
                .ensemble
                .mntr(sid)
                .await?
                .get("zk_full_house_elections")
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| anyhow!("no zk_full_house_elections in mntr of {sid}"))?;
        }
        Ok(total)
    }

    /// Runs the checkers on the history.
    fn check_history(&self) -> Result<()> {
        let records = self.history.records();
        let summary = testkit::check_history(&records).map_err(|v| anyhow!(v))?;
        self.note(&summary);
        Ok(())
    }

    /// Ends a scenario: on failure, keeps the files and says what the members were doing.
    async fn finish(self, result: Result<()>) -> Result<()> {
        if let Err(error) = &result {
            self.ensemble.keep_files();
            self.note(&format!(
                "FAILED: {error:#}\n  members: {}",
                self.ensemble.describe().await
            ));
        } else {
            self.note("passed");
        }
        result
    }
}

/// Lines of a member's log since its latest start that tell how it synchronised.
fn sync_lines(ensemble: &Ensemble, sid: u32) -> Vec<String> {
    let words = ["DIFF", "SNAP", "TRUNC", "diff from", "snapshot from"];
    ensemble
        .log_since_last_start(sid)
        .lines()
        .filter(|line| words.iter().any(|w| line.contains(w)))
        .map(|line| line.chars().take(200).collect())
        .take(6)
        .collect()
}

// ---- the scenarios ----

/// 3 servers: SIGKILL the leader under a light write load; a new leader is elected and writes
/// continue; the old leader rejoins after a restart and everyone converges.
async fn leader_kill(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let kill_ns = f.history.now_ns();
        f.ensemble.signal(leader, Signal::Kill)?;
        f.note(&format!("SIGKILL leader {leader}"));
        let after = f.first_write_after(kill_ns).await?;
        let new_leader = f.ensemble.wait_leader(&[leader]).await?;
        f.note(&format!(
            "new leader {new_leader}; first write committed {} ms after the kill",
            after.as_millis()
        ));
        tokio::time::sleep(Duration::from_secs(1)).await;
        f.ensemble.restart(leader)?;
        f.ensemble.wait_serving(leader).await?;
        f.note(&format!(
            "old leader {leader} back as {:?}",
            f.ensemble.role(leader).await
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        workload.stop().await;
        let writes = f.ok_writes_between(kill_ns, u64::MAX);
        ensure!(writes > 0, "no write succeeded after the kill");
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// 3 servers: SIGTERM the leader under load (a planned stop). meerkat's leader first hands
/// leadership over to its most up-to-date follower (docs/ensemble.md): its log says so and
/// names the successor, which is the next leader. ZooKeeper's leader just stops. Either way
/// writes go on and the history stays linearizable.
async fn leader_term(flavor: Flavor) -> Result<()> {
    let meerkat = matches!(flavor, Flavor::Meerkat { .. });
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let term_ns = f.history.now_ns();
        let stopping = Instant::now();
        f.ensemble.signal(leader, Signal::Term)?;
        f.note(&format!(
            "SIGTERM leader {leader}: exited after {} ms",
            stopping.elapsed().as_millis()
        ));
        let after = f.first_write_after(term_ns).await?;
        let new_leader = f.ensemble.wait_leader(&[leader]).await?;
        f.note(&format!(
            "new leader {new_leader}; first write committed {} ms after the SIGTERM",
            after.as_millis()
        ));
        if meerkat {
            let log = f.ensemble.log_since_last_start(leader);
            let line = log
                .lines()
                .find(|l| l.contains("handed leadership over, shutting down"))
                .ok_or_else(|| anyhow::anyhow!("the leader did not hand over:\n{log}"))?;
            ensure!(
                line.contains(&format!("successor={new_leader}")),
                "the leader named another successor than the one that leads: {line}"
            );
        }
        f.ensemble.restart(leader)?;
        f.ensemble.wait_serving(leader).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        workload.stop().await;
        ensure!(
            f.ok_writes_between(term_ns, u64::MAX) > 0,
            "no write succeeded after the SIGTERM"
        );
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// 3 servers: SIGKILL the leader and one follower. The survivor has no quorum: a client pinned
/// to it must be let go (meerkat: after holding it for `failoverHoldMs`, one tickTime by
/// default; ZooKeeper: at once), so that it can move to the majority side. Once the two are
/// back, the pinned client carries on with its session, and no acknowledged write is missing
/// anywhere (the recorded history stays linearizable).
async fn minority_releases_clients(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let followers: Vec<u32> = f
            .ensemble
            .sids()
            .into_iter()
            .filter(|&s| s != leader)
            .collect();
        let (gone, stay) = (followers[0], followers[1]);
        let config = ClientConfig::default().with_session_timeout(Duration::from_secs(30));
        let pinned = Client::connect(&f.ensemble.client_address(stay).to_string(), config).await?;
        let session = pinned.session_id();
        let mut events = pinned.session_events();
        f.ensemble.signal(leader, Signal::Kill)?;
        f.ensemble.signal(gone, Signal::Kill)?;
        let killed = Instant::now();
        f.note(&format!(
            "SIGKILL leader {leader} and follower {gone}; {stay} left alone"
        ));
        let released = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match events.recv().await {
                    Ok(SessionState::Disconnected) => return Ok(()),
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        })
        .await;
        ensure!(
            matches!(released, Ok(Ok(()))),
            "the client of the member left in a minority was never let go: {released:?}"
        );
        f.note(&format!(
            "the minority member let its client go {} ms after the kills",
            killed.elapsed().as_millis()
        ));
        for sid in [leader, gone] {
            f.ensemble.restart(sid)?;
        }
        for sid in [leader, gone] {
            f.ensemble.wait_serving(sid).await?;
        }
        ensure!(
            pinned.wait_for_state(Duration::from_secs(30)).await == SessionState::Connected,
            "the pinned client did not get back"
        );
        ensure!(
            pinned.session_id() == session,
            "the pinned client lost its session"
        );
        pinned
            .create(
                "/minority-after",
                b"",
                &acl::open_unsafe(),
                CreateMode::Persistent,
            )
            .await?;
        pinned.close().await;
        workload.stop().await;
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// 3 servers: SIGSTOP the leader beyond syncLimit × tickTime, let the others elect, SIGCONT it.
/// It must not go on as the leader of a stale epoch: writes through it (one on a session made
/// before the pause, one on a session made after) either fail or are visible everywhere.
async fn leader_pause(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&[KEYS[0], KEYS[1], KEYS[2], KEYS[3], "/probe"])
            .await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let old = f.ensemble.leader().await?;
        let only_old = f.ensemble.client_address(old).to_string();
        let early_probe = f.recorder_within(&only_old, PROBE_TIMEOUT).await?;
        let stop_ns = f.history.now_ns();
        f.ensemble.signal(old, Signal::Stop)?;
        f.note(&format!("SIGSTOP leader {old}"));
        tokio::time::sleep(f.ensemble.options().sync_timeout() * 3).await;
        let new = f.ensemble.wait_leader(&[old]).await?;
        let new_epoch = f.ensemble.status(new).await.epoch();
        f.first_write_after(stop_ns).await?;
        f.note(&format!(
            "new leader {new} (epoch {new_epoch:?}) takes writes; SIGCONT {old}"
        ));
        f.ensemble.signal(old, Signal::Cont)?;
        let (stale_reports, (early, late)) = tokio::join!(
            watch_stale_leader(f, old, new_epoch, Duration::from_secs(3)),
            async {
                let early = early_probe.write("/probe", "early-probe").await;
                let late = match f.recorder_within(&only_old, PROBE_TIMEOUT).await {
                    Ok(r) => r.write("/probe", "late-probe").await,
                    Err(e) => Outcome::Fail(format!("no session through {old}: {e:#}")),
                };
                (early, late)
            }
        );
        f.note(&format!(
            "after SIGCONT: write via {old} on the old session: {early:?}; on a new session: \
             {late:?}; srvr samples calling {old} leader of an older epoch: {stale_reports}"
        ));
        let settled = f
            .ensemble
            .wait_until(f.ensemble.options().leader_timeout, || async {
                f.ensemble.role(old).await == Role::Follower
                    || f.ensemble.leader().await.is_ok_and(|l| l == old)
            })
            .await;
        ensure!(
            settled,
            "server {old} never rejoined: {}",
            f.ensemble.describe().await
        );
        workload.stop().await;
        early_probe.client.close().await;
        f.converge_and_compare(&[KEYS[0], KEYS[1], KEYS[2], KEYS[3], "/probe"])
            .await?;
        probes_visible_if_acknowledged(f, &[("early-probe", &early), ("late-probe", &late)])
            .await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// Samples `srvr` of `sid` for `window`; counts the samples where it says it leads with an
/// epoch older than `epoch` (the new leader's).
async fn watch_stale_leader(f: &Fixture, sid: u32, epoch: Option<i64>, window: Duration) -> usize {
    let deadline = Instant::now() + window;
    let mut stale = 0;
    while Instant::now() < deadline {
        let status = f.ensemble.status(sid).await;
        if status.role == Role::Leader && status.epoch() < epoch {
            stale += 1;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stale
}

/// An acknowledged probe write must be what every member now returns for `/probe`, unless a
/// later probe (acknowledged or unknown) overwrote it.
async fn probes_visible_if_acknowledged(f: &Fixture, probes: &[(&str, &Outcome)]) -> Result<()> {
    let possible: Vec<&str> = probes
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Fail(_)))
        .map(|(v, _)| *v)
        .collect();
    if !probes.iter().any(|(_, o)| matches!(o, Outcome::Ok { .. })) {
        return Ok(());
    }
    for sid in f.ensemble.live_sids() {
        let reader = f
            .recorder(&f.ensemble.client_address(sid).to_string())
            .await?;
        let outcome = reader.sync_read("/probe").await;
        reader.client.close().await;
        let Outcome::Ok { value: Some(value) } = &outcome else {
            bail!("sync+read of /probe on {sid}: {outcome:?}");
        };
        ensure!(
            possible.contains(&value.as_str()),
            "an acknowledged write through the resumed leader is not on server {sid}: \
             it has {value:?}"
        );
    }
    Ok(())
}

/// 3 servers: a follower SIGKILLed misses a few writes, then (second round) 2000 writes, more
/// than the leader keeps in memory; each time it restarts and has every znode.
async fn follower_catch_up(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        let leader = f.ensemble.leader().await?;
        let follower = f
            .ensemble
            .sids()
            .into_iter()
            .find(|&s| s != leader)
            .context("a follower")?;
        let writer = Client::connect(
            &f.ensemble.connect_string_from(leader),
            ClientConfig::default(),
        )
        .await?;
        writer
            .create("/few", b"", &acl::open_unsafe(), CreateMode::Persistent)
            .await?;
        writer
            .create("/bulk", b"", &acl::open_unsafe(), CreateMode::Persistent)
            .await?;
        for (parent, count) in [("/few", 50usize), ("/bulk", 2000)] {
            f.ensemble.signal(follower, Signal::Kill)?;
            let started = Instant::now();
            let expected = create_children(&writer, parent, count).await?;
            f.note(&format!(
                "follower {follower} down; {count} writes under {parent} in {} ms",
                started.elapsed().as_millis()
            ));
            f.ensemble.restart(follower)?;
            f.ensemble.wait_serving(follower).await?;
            f.note(&format!(
                "follower {follower} back; sync: {:?}",
                sync_lines(&f.ensemble, follower)
            ));
            replica_has(f, follower, parent, &expected).await?;
            same_znode_count(f, leader, follower).await?;
        }
        workload.stop().await;
        writer.close().await;
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// Creates `parent/n-<i>` with value `v<i>` for i < count, 16 at a time; returns them.
async fn create_children(
    writer: &Client,
    parent: &str,
    count: usize,
) -> Result<BTreeMap<String, String>> {
    const IN_FLIGHT: usize = 16;
    let mut tasks = tokio::task::JoinSet::new();
    for lane in 0..IN_FLIGHT {
        let (writer, parent) = (writer.clone(), parent.to_string());
        tasks.spawn(async move {
            let mut made = Vec::new();
            for i in (lane..count).step_by(IN_FLIGHT) {
                let (path, value) = (format!("{parent}/n-{i:05}"), format!("v{i}"));
                writer
                    .create(
                        &path,
                        value.as_bytes(),
                        &acl::open_unsafe(),
                        CreateMode::Persistent,
                    )
                    .await
                    .with_context(|| format!("create {path}"))?;
                made.push((path, value));
            }
            anyhow::Ok(made)
        });
    }
    let mut all = BTreeMap::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done??);
    }
    Ok(all)
}

/// Reads every expected child of `parent` from member `sid` alone, after a sync.
async fn replica_has(
    f: &Fixture,
    sid: u32,
    parent: &str,
    expected: &BTreeMap<String, String>,
) -> Result<()> {
    let only = f.ensemble.client_address(sid).to_string();
    let reader = Client::connect(&only, ClientConfig::default()).await?;
    reader.sync(parent).await?;
    let (children, _) = reader.get_children(parent).await?;
    ensure!(
        children.len() == expected.len(),
        "server {sid} has {} children under {parent}, expected {}",
        children.len(),
        expected.len()
    );
    for (path, value) in expected {
        let (data, _) = reader
            .get_data(path)
            .await
            .with_context(|| format!("{path} on server {sid}"))?;
        ensure!(data == value.as_bytes(), "{path} on server {sid}: {data:?}");
    }
    reader.close().await;
    Ok(())
}

/// `mntr`'s `zk_znode_count` of `a` and `b` become equal (bounded).
async fn same_znode_count(f: &Fixture, a: u32, b: u32) -> Result<()> {
    let count = |sid| async move {
        f.ensemble
            .mntr(sid)
            .await
            .ok()
            .and_then(|m| m.get("zk_znode_count").cloned())
    };
    let equal = f
        .ensemble
        .wait_until(Duration::from_secs(10), || async {
            let (x, y) = (count(a).await, count(b).await);
            x.is_some() && x == y
        })
        .await;
    ensure!(
        equal,
        "zk_znode_count differs: server {a} {:?}, server {b} {:?}",
        count(a).await,
        count(b).await
    );
    f.note(&format!(
        "zk_znode_count equal on {a} and {b}: {:?}",
        count(a).await
    ));
    Ok(())
}

/// 3 servers behind peer proxies: cut the leader off from both followers, closing its
/// connections. The two elect a new leader and take writes; the old leader stops leading, and no
/// write through it succeeds while it is cut off; after healing every member converges.
async fn leader_partition(flavor: Flavor) -> Result<()> {
    partition_the_leader(flavor, Cut::Close).await
}

/// As [`leader_partition`], but the cut is silent: connections stay open and carry nothing, so
/// each side learns of it only by its own timeouts (syncLimit × tickTime). Meanwhile a session
/// on the old leader keeps doing `sync`+reads: none may return a value older than a write the
/// new leader has acknowledged.
async fn leader_partition_silent(flavor: Flavor) -> Result<()> {
    partition_the_leader(flavor, Cut::Silent).await
}

async fn partition_the_leader(flavor: Flavor, cut: Cut) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3).with_peer_proxies()).await?;
    let result = async {
        let f = &fixture;
        let keys = [KEYS[0], KEYS[1], KEYS[2], KEYS[3], "/probe"];
        f.create_registers(&keys).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let old = f.ensemble.leader().await?;
        let only_old = f.ensemble.client_address(old).to_string();
        let probe = f.recorder_within(&only_old, PROBE_TIMEOUT).await?;
        let reader = f.recorder_within(&only_old, PROBE_TIMEOUT).await?;
        let (cut_ns, cut_at) = (f.history.now_ns(), Instant::now());
        f.ensemble.isolate(old, cut)?;
        f.note(&format!("leader {old} isolated ({cut:?})"));
        let stop_reading = AtomicBool::new(false);
        let (served, outcome) = tokio::join!(read_until_stopped(&reader, &stop_reading), async {
            let first_probe = probe.write("/probe", "isolated-probe-1").await;
            let outcome = new_leader_and_old_steps_down(f, old, cut_ns).await;
            stop_reading.store(true, Ordering::SeqCst);
            outcome.map(|()| first_probe)
        });
        let first_probe = outcome?;
        let (served, last) = served;
        let last_ms = last.map(|at| at.saturating_duration_since(cut_at).as_millis());
        f.note(&format!(
            "sync+reads answered by the isolated {old} after the cut: {served}, \
             the last {last_ms:?} ms after it"
        ));
        let second_probe = probe.write("/probe", "isolated-probe-2").await;
        f.note(&format!(
            "writes through the isolated {old}: {first_probe:?}, {second_probe:?}"
        ));
        for outcome in [&first_probe, &second_probe] {
            ensure!(
                !matches!(outcome, Outcome::Ok { .. }),
                "a write through the isolated old leader succeeded"
            );
        }
        f.ensemble.heal();
        f.ensemble.wait_serving(old).await?;
        f.note(&format!(
            "healed; {old} is {:?}",
            f.ensemble.role(old).await
        ));
        workload.stop().await;
        probe.client.close().await;
        reader.client.close().await;
        f.converge_and_compare(&keys).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// A new leader other than `old` is elected and takes writes, and `old` stops leading.
async fn new_leader_and_old_steps_down(f: &Fixture, old: u32, cut_ns: u64) -> Result<()> {
    let new = f.ensemble.wait_leader(&[old]).await?;
    let after = f.first_write_after(cut_ns).await?;
    f.note(&format!(
        "new leader {new}; first write {} ms after the cut",
        after.as_millis()
    ));
    let stepped_down = f
        .ensemble
        .wait_until(f.ensemble.options().leader_timeout, || async {
            f.ensemble.role(old).await != Role::Leader
        })
        .await;
    ensure!(stepped_down, "isolated server {old} still says it leads");
    let stepped_ms = (f.history.now_ns() - cut_ns) / 1_000_000;
    f.note(&format!(
        "isolated {old} is {:?} ({stepped_ms} ms after the cut)",
        f.ensemble.role(old).await
    ));
    Ok(())
}

/// `sync`+reads the registers in turn until told to stop; returns how many succeeded and
/// when the last one completed.
async fn read_until_stopped(reader: &Recorder, stop: &AtomicBool) -> (usize, Option<Instant>) {
    let (mut served, mut last) = (0, None);
    for round in 0..10_000 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if let Outcome::Ok { .. } = reader.sync_read(KEYS[round % KEYS.len()]).await {
            served += 1;
            last = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (served, last)
}

/// 3 servers: a session on a follower, then one on the leader, each with an ephemeral znode and
/// a data watch. SIGKILL its server: the client moves to another server with the same session,
/// the ephemeral is still there, and the watch fires on a later change.
async fn session_survives_server_kill(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        let leader = f.ensemble.leader().await?;
        let follower = f
            .ensemble
            .sids()
            .into_iter()
            .find(|&s| s != leader)
            .context("a follower")?;
        for (what, sid) in [("follower", follower), ("leader", leader)] {
            session_moves(f, sid)
                .await
                .with_context(|| format!("session on the {what} {sid}"))?;
            f.ensemble.restart(sid)?;
            f.ensemble.wait_serving(sid).await?;
            f.ensemble.leader().await?;
        }
        workload.stop().await;
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

async fn session_moves(f: &Fixture, sid: u32) -> Result<()> {
    let (ephemeral, watched) = (format!("/eph-{sid}"), format!("/watched-{sid}"));
    let config = ClientConfig::default().with_session_timeout(SESSION_TIMEOUT);
    let other =
        Client::connect(&f.ensemble.connect_string_from(sid % 3 + 1), config.clone()).await?;
    other
        .create(
            &watched,
            b"before",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await?;
    let session = Client::connect(&f.ensemble.connect_string_from(sid), config).await?;
    let address = f.ensemble.client_address(sid).to_string();
    ensure!(
        session.info().server == address,
        "connected to {} not {address}",
        session.info().server
    );
    let id = session.session_id();
    session
        .create(&ephemeral, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
        .await?;
    let (_, _, watch) = session.get_data_w(&watched).await?;
    let mut events = session.session_events();
    f.ensemble.signal(sid, Signal::Kill)?;
    let killed = Instant::now();
    f.note(&format!("SIGKILL server {sid} holding session 0x{id:x}"));
    wait_reconnected(&mut events).await?;
    let info = session.info();
    f.note(&format!(
        "session 0x{id:x} reconnected to {} after {} ms",
        info.server,
        killed.elapsed().as_millis()
    ));
    ensure!(
        session.session_id() == id,
        "session id changed: 0x{:x}",
        session.session_id()
    );
    ensure!(info.server != address, "reconnected to the killed server");
    let stat = session
        .exists(&ephemeral)
        .await?
        .context("the ephemeral is gone")?;
    ensure!(
        stat.ephemeral_owner == id,
        "ephemeral owner 0x{:x}",
        stat.ephemeral_owner
    );
    other.set_data(&watched, b"after", -1).await?;
    let event = tokio::time::timeout(PROGRESS_TIMEOUT, watch)
        .await
        .map_err(|_| anyhow!("the data watch did not fire"))?;
    ensure!(
        event.event_type == EventType::NodeDataChanged && event.path == watched,
        "unexpected watch event {event:?}"
    );
    session.close().await;
    other.close().await;
    Ok(())
}

/// Waits for the session to be connected again; an ended session fails.
async fn wait_reconnected(
    events: &mut tokio::sync::broadcast::Receiver<SessionState>,
) -> Result<()> {
    let reconnected = tokio::time::timeout(PROGRESS_TIMEOUT, async {
        loop {
            match events.recv().await {
                Ok(SessionState::Connected) => return Ok(()),
                Ok(state) if state.is_terminal() => {
                    return Err(anyhow!("session ended: {state:?}"))
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => return Err(anyhow!("session events: {e}")),
            }
        }
    })
    .await
    .map_err(|_| anyhow!("not reconnected within {PROGRESS_TIMEOUT:?}"))?;
    reconnected
}

/// 5 servers: kill the leader and a follower, writes continue; kill a third, no write
/// invoked afterwards succeeds; restart one, writes continue; restart all, they converge.
async fn five_servers_quorum_loss(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(5)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let others: Vec<u32> = f
            .ensemble
            .sids()
            .into_iter()
            .filter(|&s| s != leader)
            .collect();
        let kill_ns = f.history.now_ns();
        f.ensemble.signal(leader, Signal::Kill)?;
        f.ensemble.signal(others[0], Signal::Kill)?;
        f.note(&format!(
            "SIGKILL leader {leader} and follower {}",
            others[0]
        ));
        let new = f.ensemble.wait_leader(&[]).await?;
        let after = f.first_write_after(kill_ns).await?;
        f.note(&format!(
            "new leader {new}; first write {} ms after the kills",
            after.as_millis()
        ));
        let third = *others[1..]
            .iter()
            .find(|&&s| s != new)
            .context("a follower")?;
        let lost_ns = f.history.now_ns();
        f.ensemble.signal(third, Signal::Kill)?;
        f.note(&format!("SIGKILL follower {third}: 2 of 5 left"));
        tokio::time::sleep(f.ensemble.options().sync_timeout() * 2 + Duration::from_secs(2)).await;
        let restart_ns = f.history.now_ns();
        let during = f.ok_writes_between(lost_ns, restart_ns);
        f.note(&format!(
            "without quorum: {during} writes succeeded; members: {}",
            f.ensemble.describe().await
        ));
        ensure!(
            during == 0,
            "{during} writes invoked after quorum was lost succeeded"
        );
        f.ensemble.restart(others[0])?;
        f.ensemble.wait_serving(others[0]).await?;
        let back = f.first_write_after(restart_ns).await?;
        f.note(&format!(
            "restarted {}: first write {} ms after the restart",
            others[0],
            back.as_millis()
        ));
        for sid in [leader, third] {
            f.ensemble.restart(sid)?;
        }
        for sid in [leader, third] {
            f.ensemble.wait_serving(sid).await?;
        }
        workload.stop().await;
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// The kit itself against one standalone meerkat (runs today, before ensembles do): start,
/// `srvr`, a recorded workload across a SIGKILL and restart, and the checkers.
#[test]
fn kit_drives_a_standalone_meerkat() {
    run(meerkat(), |flavor| async move {
        let fixture = Fixture::start(flavor, Options::new(1)).await?;
        let result = async {
            let f = &fixture;
            ensure!(
                f.ensemble.role(1).await == Role::Standalone,
                "{}",
                f.ensemble.describe().await
            );
            f.create_registers(&KEYS).await?;
            let workload = f.workload();
            tokio::time::sleep(Duration::from_millis(500)).await;
            let kill_ns = f.history.now_ns();
            f.ensemble.signal(1, Signal::Kill)?;
            f.ensemble.restart(1)?;
            f.ensemble.wait_serving(1).await?;
            let after = f.first_write_after(kill_ns).await?;
            f.note(&format!(
                "first write {} ms after the kill",
                after.as_millis()
            ));
            workload.stop().await;
            let status = f.ensemble.status(1).await;
            ensure!(
                status.node_count.is_some() && status.zxid.is_some(),
                "{status:?}"
            );
            f.check_history()
        }
        .await;
        fixture.finish(result).await
    });
}

/// Thesis Alg. 5.2 with real processes in diskless mode, under load: SIGKILL and restart a
/// follower; SIGKILL the leader and restart it; SIGKILL both followers and restart them.
/// After each step every member converges on the same state and every value agrees; at the
/// end the recorded history must be linearizable, so no acknowledged write was lost.
async fn diskless_restarts(flavor: Flavor) -> Result<()> {
    let mut options = Options::new(3);
    options.extra_config.push("diskless=true".into());
    let fixture = Fixture::start(flavor, options).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        for step in ["a follower", "the leader", "both followers"] {
            // Load through each fault, stopped before the members are compared.
            let workload = f.workload();
            tokio::time::sleep(Duration::from_millis(700)).await;
            let leader = f.ensemble.leader().await?;
            let followers: Vec<u32> = f
                .ensemble
                .live_sids()
                .into_iter()
                .filter(|&s| s != leader)
                .collect();
            let victims = match step {
                "a follower" => vec![followers[0]],
                "the leader" => vec![leader],
                _ => followers,
            };
            for &sid in &victims {
                f.ensemble.signal(sid, Signal::Kill)?;
            }
            f.note(&format!("SIGKILL {step}: {victims:?}"));
            tokio::time::sleep(Duration::from_millis(300)).await;
            if step == "both followers" {
                // The leader must lose its quorum (and write its failure checkpoint) before
                // the followers return, or they would simply rejoin it.
                let deadline = Instant::now() + Duration::from_secs(10);
                while f.ensemble.role(leader).await == Role::Leader {
                    ensure!(
                        Instant::now() < deadline,
                        "the leader kept leading without a quorum"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            for &sid in &victims {
                f.ensemble.restart(sid)?;
            }
            for &sid in &victims {
                f.ensemble.wait_serving(sid).await?;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            workload.stop().await;
            f.converge_and_compare(&KEYS).await?;
            // Same zxid and znode count (above), and the same tree digest everywhere.
            let mut digests = BTreeMap::new();
            for sid in f.ensemble.live_sids() {
                let address = f.ensemble.client_address(sid);
                digests.insert(sid, testkit::four_letter::ask(address, "hash").await?);
            }
            let first = digests.values().next().cloned().unwrap_or_default();
            ensure!(
                digests.values().all(|d| *d == first),
                "digests differ after {step}: {digests:?}"
            );
            f.note(&format!("after {step}: digest {}", first.trim()));
            if step == "both followers" {
                // Two amnesiac voters and one whole: only a full house could elect.
                let full_houses = f.full_house_elections().await?;
                ensure!(
                    full_houses == 1,
                    "{full_houses} full-house elections, not 1"
                );
            }
        }
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

/// Every server of a diskless ensemble SIGKILLed at once under one steady writer (a power cut
/// to the rack), then all restarted. The ensemble must come back through a full house; the
/// writes lost must be the newest ones (a suffix of the writer's sequence, DESIGN.md §5), and
/// every write acknowledged more than [`POWER_LOSS_SAFE_AFTER`] before the cut must be there.
/// The window (writes lost, and how long before the cut the oldest of them was acknowledged)
/// is printed for docs/durability.md.
async fn diskless_power_loss(flavor: Flavor) -> Result<()> {
    let mut options = Options::new(3);
    options.extra_config.push("diskless=true".into());
    let fixture = Fixture::start(flavor, options).await?;
    let result = async {
        let f = &fixture;
        let config = ClientConfig::default()
            .with_session_timeout(SESSION_TIMEOUT)
            .with_connect_timeout(OP_TIMEOUT);
        let writer = Client::connect(&f.ensemble.connect_string(), config.clone()).await?;
        writer
            .create("/pl", b"", &acl::open_unsafe(), CreateMode::Persistent)
            .await?;
        let cut = Arc::new(AtomicBool::new(false));
        let writing = {
            let cut = cut.clone();
            tokio::spawn(async move {
                let mut acked: Vec<(u64, Instant)> = Vec::new();
                for k in 0u64.. {
                    if cut.load(Ordering::SeqCst) {
                        break;
                    }
                    let path = format!("/pl/{k:010}");
                    match writer
                        .create(&path, b"v", &acl::open_unsafe(), CreateMode::Persistent)
                        .await
                    {
                        Ok(_) => acked.push((k, Instant::now())),
                        Err(_) => break,
                    }
                }
                acked
            })
        };
        tokio::time::sleep(POWER_LOSS_SAFE_AFTER * 2).await;
        let sids = f.ensemble.sids();
        for &sid in &sids {
            f.ensemble.signal(sid, Signal::Kill)?;
        }
        let cut_at = Instant::now();
        cut.store(true, Ordering::SeqCst);
        f.note("SIGKILL every server at once");
        let acked = writing.await?;
        ensure!(!acked.is_empty(), "the writer never got an acknowledgement");
        tokio::time::sleep(Duration::from_millis(300)).await;
        for &sid in &sids {
            f.ensemble.restart(sid)?;
        }
        for &sid in &sids {
            f.ensemble.wait_serving(sid).await?;
        }
        let converged = f.ensemble.wait_converged().await?;
        f.note(&format!("back: {converged:?}"));
        let reader = Client::connect(&f.ensemble.connect_string(), config).await?;
        let (children, _) = reader.get_children("/pl").await?;
        reader.close().await;
        let present: std::collections::BTreeSet<u64> =
            children.iter().filter_map(|c| c.parse().ok()).collect();
        let lost: Vec<&(u64, Instant)> =
            acked.iter().filter(|(k, _)| !present.contains(k)).collect();
        if let Some(&&(first_lost, acked_at)) = lost.first() {
            ensure!(
                acked.iter().all(|(k, _)| *k < first_lost || !present.contains(k)),
                "a hole: write {first_lost} is lost but a later acknowledged one survived"
            );
            let before_cut = cut_at.saturating_duration_since(acked_at);
            ensure!(
                before_cut < POWER_LOSS_SAFE_AFTER,
                "write {first_lost}, acknowledged {before_cut:?} before the cut, was lost"
            );
            f.note(&format!(
                "power-loss window: {} of {} acknowledged writes lost, the oldest acknowledged {:.1} ms before the cut",
                lost.len(),
                acked.len(),
                before_cut.as_secs_f64() * 1000.0
            ));
        } else {
            f.note(&format!(
                "power-loss window: none of {} acknowledged writes lost",
                acked.len()
            ));
        }
        let full_houses = f.full_house_elections().await?;
        ensure!(full_houses == 1, "{full_houses} full-house elections, not 1");
        Ok(())
    }
    .await;
    fixture.finish(result).await
}

/// Writes acknowledged longer than this before a whole-ensemble power loss must survive it:
/// busy snapshots of this scenario's small tree take milliseconds.
const POWER_LOSS_SAFE_AFTER: Duration = Duration::from_secs(2);

// ---- dynamic reconfiguration ----

/// `super:test` as ZooKeeper's DigestAuthenticationProvider prints it.
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

/// Apache ZooKeeper's own zkCli (3.9.3), with `lines` on its standard input, as an operator
/// types them; its standard output.
fn zkcli(server: &str, lines: &[String]) -> Result<String> {
    use std::io::Write;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/compat-curator.sh");
    let classpath = std::process::Command::new("bash")
        .arg(script)
        .arg("classpath")
        .output()
        .context("compat-curator.sh classpath")?;
    ensure!(classpath.status.success(), "no ZooKeeper class path");
    let mut child = std::process::Command::new("java")
        .args([
            "-Xmx128m",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
            "-cp",
        ])
        .arg(String::from_utf8_lossy(&classpath.stdout).trim())
        .args(["org.apache.zookeeper.ZooKeeperMain", "-server", server])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("java runs zkCli")?;
    let mut stdin = child.stdin.take().context("zkCli stdin")?;
    for line in lines.iter().map(String::as_str).chain(["quit"]) {
        writeln!(stdin, "{line}")?;
    }
    drop(stdin);
    let out = child.wait_with_output()?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The configuration lines of a `config` command's output.
fn config_lines(out: &str) -> Vec<String> {
    out.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("server.") || l.starts_with("version="))
        .map(str::to_string)
        .collect()
}

/// Server `sid`'s spec in the configuration zkCli's `config` prints, with its client address
/// added when the line has none, as `reconfig -add` takes it.
fn server_spec(ensemble: &Ensemble, config: &str, sid: u32) -> Result<String> {
    let prefix = format!("server.{sid}=");
    let spec = config
        .lines()
        .find_map(|l| l.trim().strip_prefix(&prefix))
        .ok_or_else(|| anyhow!("no {prefix} line in the configuration:\n{config}"))?;
    Ok(match spec.contains(';') {
        true => spec.to_string(),
        false => format!("{spec};{}", ensemble.client_address(sid)),
    })
}

/// 3 servers with `reconfigEnabled=true`: while a workload runs, Apache ZooKeeper's own zkCli
/// removes a follower from the ensemble and adds it back. Every acknowledged write survives
/// and the history stays linearizable; the configuration zkCli prints says who is in; and
/// (meerkat) the removed member stops serving clients until it is added again (ZooKeeper keeps
/// serving on it as a non-voting follower).
async fn reconfig_remove_and_add(flavor: Flavor) -> Result<()> {
    let meerkat = matches!(flavor, Flavor::Meerkat { .. });
    let mut options = Options::new(3);
    options.extra_config = vec![
        "reconfigEnabled=true".to_string(),
        format!("DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"),
    ];
    let fixture = Fixture::start(flavor, options).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let removed = f
            .ensemble
            .sids()
            .into_iter()
            .rfind(|&s| s != leader)
            .context("a follower")?;
        let via = f.ensemble.client_address(leader).to_string();
        let config = zkcli(&via, &["config".to_string()])?;
        let spec = server_spec(&f.ensemble, &config, removed)?;
        let auth = "addauth digest super:test".to_string();
        let begun_ns = f.history.now_ns();
        let out = zkcli(&via, &[auth.clone(), format!("reconfig -remove {removed}")])?;
        f.note(&format!(
            "zkCli reconfig -remove {removed}:\n{}",
            out.trim()
        ));
        ensure!(
            out.contains("server.") && !out.contains(&format!("server.{removed}=")),
            "the new configuration still lists server {removed} (or none was printed)"
        );
        if meerkat {
            let deadline = Instant::now() + Duration::from_secs(10);
            while f.ensemble.role(removed).await.is_serving() {
                ensure!(
                    Instant::now() < deadline,
                    "server {removed} still serves after its removal"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            f.note(&format!("server {removed} stopped serving"));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let out = zkcli(
            &via,
            &[auth, format!("reconfig -add server.{removed}={spec}")],
        )?;
        f.note(&format!(
            "zkCli reconfig -add server.{removed}:\n{}",
            out.trim()
        ));
        ensure!(
            out.contains(&format!("server.{removed}=")),
            "the new configuration does not list server {removed}"
        );
        f.ensemble.wait_serving(removed).await?;
        // Both write the active configuration beside zoo.cfg as zoo.cfg.dynamic.<version>.
        let version = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("version="))
            .context("no version in the new configuration")?
            .to_string();
        let dynamic = f
            .ensemble
            .dir()
            .join(format!("server-{leader}"))
            .join(format!("zoo.cfg.dynamic.{version}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !dynamic.exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let text = std::fs::read_to_string(&dynamic)
            .with_context(|| format!("no {}", dynamic.display()))?;
        ensure!(
            text.contains(&format!("server.{removed}=")) && !text.contains("version="),
            "{} holds {text:?}",
            dynamic.display()
        );
        // `meerkat cli config` prints what zkCli's `config` prints.
        let theirs = config_lines(&zkcli(&via, &["config".to_string()])?);
        let ours = std::process::Command::new(env!("CARGO_BIN_EXE_meerkat"))
            .args(["cli", "-server", &via, "config"])
            .output()?;
        let ours = config_lines(&String::from_utf8_lossy(&ours.stdout));
        ensure!(
            !theirs.is_empty() && ours == theirs,
            "meerkat cli config says {ours:?}, zkCli {theirs:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        workload.stop().await;
        ensure!(
            f.ok_writes_between(begun_ns, u64::MAX) > 0,
            "no write succeeded while the membership changed"
        );
        f.converge_and_compare(&KEYS).await?;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}

// ---- lost-quorum recovery ----

/// `meerkat data recover-quorum`, as an operator runs it (the server's binary).
fn recover_quorum(args: &[String]) -> Result<(bool, String)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(["data", "recover-quorum"])
        .args(args)
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// 3 servers lose two members for good (one follower SIGKILLed, writes go on with the other
/// two, then the other follower and the leader SIGKILLed too). The survivor, which cannot
/// serve alone, is made a one-member ensemble with `meerkat data recover-quorum`: run on the
/// member that is behind, the check refuses (the other is further ahead); on the most
/// up-to-date one it warns what may be lost and writes a new configuration. Started, it serves
/// every acknowledged write (the history stays linearizable) and takes new ones.
async fn lost_quorum_recovery(flavor: Flavor) -> Result<()> {
    let fixture = Fixture::start(flavor, Options::new(3)).await?;
    let result = async {
        let f = &fixture;
        f.create_registers(&KEYS).await?;
        let workload = f.workload();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let leader = f.ensemble.leader().await?;
        let followers: Vec<u32> = f
            .ensemble
            .sids()
            .into_iter()
            .filter(|&s| s != leader)
            .collect();
        let (first, second) = (followers[0], followers[1]);
        f.ensemble.signal(first, Signal::Kill)?;
        let killed_ns = f.history.now_ns();
        tokio::time::sleep(Duration::from_secs(1)).await;
        ensure!(
            f.ok_writes_between(killed_ns, u64::MAX) > 0,
            "no write after the first follower was lost"
        );
        f.ensemble.signal(second, Signal::Kill)?;
        f.ensemble.signal(leader, Signal::Kill)?;
        workload.stop().await;
        let cfg = |sid: u32| {
            f.ensemble
                .dir()
                .join(format!("server-{sid}"))
                .join("zoo.cfg")
                .display()
                .to_string()
        };
        // The member lost first is behind the leader: the check refuses to recover it.
        let (ok, out) =
            recover_quorum(&[cfg(first), "--compare".into(), cfg(leader), "--yes".into()])?;
        f.note(&format!(
            "recover-quorum on server {first}:\n{}",
            out.trim()
        ));
        ensure!(
            !ok && out.contains("further ahead"),
            "recovering a member that is behind was not refused"
        );
        let args = vec![
            cfg(leader),
            "--compare".into(),
            cfg(first),
            "--compare".into(),
            cfg(second),
            "--yes".into(),
        ];
        let (ok, out) = recover_quorum(&args)?;
        f.note(&format!(
            "recover-quorum on server {leader}:\n{}",
            out.trim()
        ));
        ensure!(
            ok && out.contains("LOST"),
            "recover-quorum failed or gave no warning"
        );
        f.ensemble.restart(leader)?;
        f.ensemble.wait_serving(leader).await?;
        f.converge_and_compare(&KEYS).await?;
        let writer = f
            .recorder(&f.ensemble.client_address(leader).to_string())
            .await?;
        let Outcome::Ok { .. } = writer.write(KEYS[0], "after-recovery").await else {
            bail!("no write after the recovery");
        };
        writer.client.close().await;
        f.check_history()
    }
    .await;
    fixture.finish(result).await
}
