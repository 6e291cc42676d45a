//! One simulated server running the real replica over the real storage code, stepped
//! (`storage::Execution::Stepped`) on a fault-injecting in-memory disk. A crash drops the
//! replica and keeps what a machine would find on the disk afterwards.

use replica::ensemble::Ensemble;
use replica::{Now, Replica, Settings};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use storage::faulty_fs::{FaultyFs, Tear};
use storage::{Execution, Persistence, PersistenceOptions, Replay};
use zab::{Config, Durability, Sid, Zab, Zxid};

/// The replica as the simulator runs it.
pub type SimReplica = Replica<Persistence>;

/// What a node's ensemble looks like.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub voters: Vec<Sid>,
    pub diskless: bool,
    /// `snapCount`: small, so snapshots and SNAP syncs happen in short runs.
    pub snap_count: u64,
    /// Committed entries a leader keeps for DIFF (small values force SNAP).
    pub committed_log_max: usize,
    /// Every sync is a SNAP (`zab::Config::force_snapshot_sync`).
    pub force_snapshot_sync: bool,
    pub tick_time_ms: u32,
    /// Proposals in flight at the leader, and the backlog behind them.
    pub in_flight_max: usize,
    pub backlog_max: usize,
    /// A planted bug by name, Zab's or the host's (needs the `planted-bugs` feature).
    pub bug: Option<String>,
    /// Clients reconfigure the ensemble now and then (`reconfigEnabled`, the super user).
    pub reconfig: bool,
    /// `readonlymode.enabled`: members cut off from their quorum serve read-only (the
    /// simulated clients do not ask for it, so they are refused there and move on).
    pub read_only: bool,
    /// `localSessionsEnabled` and `localSessionsUpgradingEnabled`.
    pub local_sessions: bool,
}

pub struct Node {
    pub sid: Sid,
    /// The disk: what the running replica wrote, or what survived its last crash.
    pub fs: FaultyFs,
    pub replica: Option<SimReplica>,
    /// Durability reports of the store, waiting to be handed to the replica (see
    /// [`Progress`]).
    reports: Arc<Mutex<Progress>>,
    /// A delivery of `reports` is scheduled.
    pub report_in_flight: bool,
    /// Set when the store failed (the replica must stop).
    failure: Arc<Mutex<Option<String>>>,
    /// Boots so far: events of an earlier boot are stale.
    pub incarnation: u64,
    pub fsync_in_flight: bool,
    pub snapshot_in_flight: bool,
    /// The zxid the replica applied last (for the Zab checker's parent links).
    pub applied: Zxid,
    /// Diskless: the epoch label recovery read at the last boot (the epoch whose initial
    /// history the recovered state claims to hold).
    pub label: u32,
    /// Diskless: the epoch label of the snapshot started last.
    pub snapshot_label: u32,
    /// What the disk durably holds: the log's synced end, or the newest snapshot. Kept
    /// while the node is down.
    pub durable: Zxid,
    /// The disk was wiped: it may have held anything before (amnesia is Zab's business).
    pub wiped: bool,
    /// Crashes so far, and the world's crash count at the last one.
    pub crash_count: u64,
    pub last_crash_at: u64,
    /// Every zxid the applied state holds (for the durability checker).
    pub applied_set: BTreeSet<Zxid>,
    /// While down: what the disk holds (the newest snapshot's zxid, the checkpoint's zxids).
    pub disk: Option<(Zxid, BTreeSet<Zxid>)>,
}

impl Node {
    pub fn new(sid: Sid) -> Node {
        Node {
            sid,
            fs: FaultyFs::new(),
            replica: None,
            reports: Arc::default(),
            report_in_flight: false,
            failure: Arc::default(),
            incarnation: 0,
            fsync_in_flight: false,
            snapshot_in_flight: false,
            applied: Zxid::ZERO,
            label: 0,
            snapshot_label: 0,
            durable: Zxid::ZERO,
            wiped: false,
            crash_count: 0,
            last_crash_at: 0,
            applied_set: BTreeSet::new(),
            disk: None,
        }
    }

    pub fn is_up(&self) -> bool {
        self.replica.is_some()
    }

    /// Boots from the disk as it is: recovery, the member's boot rules, Zab, the replica.
    pub fn boot(&mut self, config: &NodeConfig, now: Now, seed: u64) -> Result<(), String> {
        self.incarnation += 1;
        self.fsync_in_flight = false;
        self.snapshot_in_flight = false;
        self.reports = Arc::default();
        self.report_in_flight = false;
        self.failure = Arc::default();
        let options = PersistenceOptions {
            layout: layout(),
            force_sync: true,
            segment_bytes: 64 * 1024,
            snap_count: config.snap_count,
            snap_retain_count: 3,
            purge_interval: std::time::Duration::ZERO,
            fsync_warn: std::time::Duration::from_secs(3600),
            replay: Replay::Collect,
            diskless: config.diskless,
            busy_snapshot_rest_percent: 100,
            delta_rest_min_ms: storage::DELTA_REST_MIN_MS,
            execution: Execution::Stepped { seed },
        };
        let reports = self.reports.clone();
        let failure = self.failure.clone();
        let (store, recovered) = Persistence::open(
            Arc::new(self.fs.clone()),
            options,
            Box::new(move |zxid| lock(&reports).report(zxid)),
            Box::new(move |e| *lock(&failure) = Some(e.to_string())),
        )
        .map_err(|e| format!("server {} cannot recover: {e}", self.sid))?;
        let mut store = store;
        store.set_clock(now.mono_ms);
        // As the server's progress channel: a report from before a cut no longer holds.
        let cut = self.reports.clone();
        store.on_log_cut(Box::new(move |zxid| lock(&cut).cut(zxid)));
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = config
            .bug
            .as_deref()
            .and_then(storage::planted::StorageBug::from_name)
        {
            store.plant(bug);
        }
        let incarnation = seed ^ (self.incarnation << 48) ^ self.sid;
        let boot = replica::boot::zab_boot(&store, &recovered, config.diskless, incarnation)
            .map_err(|e| format!("server {} cannot boot: {e}", self.sid))?;
        self.applied = Zxid::from_i64(recovered.tree.last_processed_zxid());
        self.label = recovered.epoch_label;
        self.disk = None;
        let settings = Settings {
            tick_time_ms: config.tick_time_ms,
            min_session_timeout_ms: config.tick_time_ms * 2,
            max_session_timeout_ms: config.tick_time_ms * 20,
            failover_hold_ms: u64::from(config.tick_time_ms),
            reconfig_enabled: config.reconfig,
            super_digest: Some(super::client::SUPER_DIGEST.to_string()),
            initial_config: initial_config(&config.voters),
            read_only_mode_enabled: config.read_only,
            local_sessions_enabled: config.local_sessions,
            local_sessions_upgrading_enabled: config.local_sessions,
            observe: true,
            #[cfg(feature = "planted-bugs")]
            planted_bug: config
                .bug
                .as_deref()
                .and_then(replica::planted::HostBug::from_name),
            ..Settings::default()
        };
        // After a reconfiguration the members are the ones /zookeeper/config names.
        let membership = replica::ensemble::reconfig::config_of_tree(&recovered.tree)
            .map(|c| c.membership())
            .unwrap_or_else(|| {
                zab::Membership::new(config.voters.iter().copied().collect(), Default::default())
            });
        let mut replica = Replica::new(settings, store, recovered, 0, now);
        let mut zab_config = Config::new(self.sid, membership.voters, membership.observers);
        zab_config.version = membership.version;
        zab_config.committed_log_max = config.committed_log_max;
        zab_config.proposals_in_flight_max = config.in_flight_max;
        zab_config.force_snapshot_sync = config.force_snapshot_sync;
        if config.diskless {
            zab_config.durability = Durability::Diskless;
        }
        #[cfg(feature = "planted-bugs")]
        {
            zab_config.planted_bug = config.bug.as_deref().and_then(zab::PlantedBug::from_name);
        }
        let zab = Zab::new(zab_config, boot, now.mono_ms)
            .map_err(|e| format!("server {} cannot start Zab: {e}", self.sid))?;
        let peers = config.voters.iter().copied().filter(|&s| s != self.sid);
        let ensemble = Ensemble::new(
            zab,
            self.sid,
            peers.collect(),
            config.backlog_max,
            now.mono_ms,
        );
        replica.join_ensemble(now, ensemble);
        self.replica = Some(replica);
        Ok(())
    }

    /// Power fails while the snapshot thread is at work: the snapshot job runs until its
    /// `ops`-th write to the disk, which fails with all after it (the caller then crashes
    /// the node, and the tear decides how much of what was written unsynced survives).
    pub fn fail_mid_snapshot(&mut self, ops: u64) {
        let Some(replica) = self.replica.as_mut() else {
            return;
        };
        // The job runs when its SnapshotDone event comes; before that it has written nothing.
        if !self.snapshot_in_flight {
            return;
        }
        self.fs.crash_after(self.fs.ops() + ops);
        replica.store.run_snapshot(0);
    }

    /// The process dies: the replica and whatever was not on disk are gone. `tear` decides
    /// how much of what was written but not synced survives.
    pub fn crash(&mut self, tear: Tear) {
        self.replica = None;
        self.fs = self.fs.crash_image(tear);
        self.incarnation += 1;
        self.crash_count += 1;
        self.fsync_in_flight = false;
        self.snapshot_in_flight = false;
        self.report_in_flight = false;
        self.disk = Some(disk_holdings(&self.fs));
    }

    /// While down: whether the disk holds `zxid` (in its newest snapshot or its checkpoint).
    pub fn disk_holds(&self, zxid: Zxid) -> bool {
        self.disk
            .as_ref()
            .is_some_and(|(snapshot, saved)| zxid <= *snapshot || saved.contains(&zxid))
    }

    /// The disk is lost entirely (a replaced machine).
    pub fn wipe(&mut self) {
        self.replica = None;
        self.fs = FaultyFs::new();
        self.incarnation += 1;
        self.wiped = true;
    }

    /// Reads what the running replica's disk durably holds now.
    pub fn note_durable(&mut self) {
        if let Some(r) = &self.replica {
            let log = r
                .store
                .wal_stats()
                .durable_zxid
                .load(std::sync::atomic::Ordering::Relaxed);
            let snapshot = r.store.newest_snapshot_zxid().max(0);
            self.durable = Zxid::from_i64((log as i64).max(snapshot));
        }
    }

    /// Whether the store reported something the replica has not been handed yet.
    pub fn report_waiting(&self) -> bool {
        lock(&self.reports).changed
    }

    /// The store's latest durability report, if it changed since the last call.
    pub fn take_report(&self) -> Option<i64> {
        lock(&self.reports).take()
    }

    /// Why the store stopped, if it did.
    pub fn store_failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }
}

/// The server's progress channel as the simulator runs it: the writer's latest durability
/// report, overwritten by the next one, lowered when the log is cut, and read by the replica
/// some time later (the server's watch channel and its task hop). A report still unread at a
/// cut names entries the log no longer holds; the cut must lower it before it is read.
#[derive(Debug, Default)]
pub struct Progress {
    value: i64,
    changed: bool,
}

impl Progress {
    fn report(&mut self, zxid: i64) {
        self.value = zxid;
        self.changed = true;
    }

    fn cut(&mut self, zxid: i64) {
        self.value = self.value.min(zxid);
        self.changed = true;
    }

    fn take(&mut self) -> Option<i64> {
        std::mem::take(&mut self.changed).then_some(self.value)
    }
}

/// Every server a voter, as the simulated zoo.cfg lists them.
fn initial_config(voters: &[Sid]) -> replica::ensemble::server_spec::ConfigText {
    let members = voters
        .iter()
        .filter_map(|&sid| {
            let spec = super::client::sim_server_spec(sid, "participant");
            replica::ensemble::server_spec::ServerSpec::parse(&spec)
                .ok()
                .map(|s| (sid, s))
        })
        .collect();
    replica::ensemble::server_spec::ConfigText {
        members,
        version: Zxid::ZERO,
    }
}

fn layout() -> storage::Layout {
    storage::Layout::new(Path::new("/data"), Path::new("/data"))
}

/// What a disk holds for the durability checker: the snapshot recovery would load, and the
/// proposals a failure checkpoint saved.
fn disk_holdings(fs: &FaultyFs) -> (Zxid, BTreeSet<Zxid>) {
    let layout = layout();
    let snapshot = storage::recovery::recover_with(fs, &layout, Replay::Collect)
        .map_or(Zxid::ZERO, |r| Zxid::from_i64(r.tree.last_processed_zxid()));
    let saved = match storage::checkpoint::read(fs, &layout) {
        Ok(Some(c)) => c
            .proposals
            .iter()
            .map(|t| Zxid::from_i64(t.header.zxid))
            .collect(),
        _ => BTreeSet::new(),
    };
    (snapshot, saved)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
