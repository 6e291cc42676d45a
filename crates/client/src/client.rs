//! The async client: every operation of DESIGN.md §1 on one session.
//!
//! A [`Client`] is a cheap handle (clone it freely) onto a session driver task (see
//! [`crate::session`]). Each call validates its arguments, applies the chroot, hands the request
//! to the driver and waits for the answer. Many calls may be in flight at once from any number
//! of tasks; the server executes them in the order they reached the driver and the answers come
//! back in that order.

use crate::config::ClientConfig;
use crate::connect_string::ConnectString;
use crate::create_mode::CreateMode;
use crate::error::{Error, Result};
use crate::event::SessionState;
use crate::limits::SESSION_EVENT_QUEUE_LEN_MAX;
use crate::op::{self, Op, OpResult};
use crate::path::{self, Chroot};
use crate::session::{self, Command, DriverParts, LocalEffect, SessionInfo, Submission};
use crate::submit_queue::SubmitQueue;
use crate::watch::{
    oneshot_watch, persistent_watch, OneshotWatch, PersistentWatch, WatchKind, WatchRegistration,
    WatchSink,
};
use proto::request::Request;
use proto::response::Response;
use proto::watch::{AddWatchMode, WatcherType};
use proto::{
    Acl, AddWatchRequest, ClientInfo, CreateRequest, CreateTtlRequest, ErrorCode, PathAndVersion,
    PathAndWatch, PathAndWatcherType, PathRecord, SetAclRequest, SetDataRequest, Stat,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// Where an ensemble keeps its configuration.
const CONFIG_NODE: &str = "/zookeeper/config";

/// A ZooKeeper session. Dropping the last handle closes the session.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    commands: Arc<SubmitQueue>,
    close: mpsc::Sender<oneshot::Sender<()>>,
    state: watch::Receiver<SessionState>,
    events: broadcast::Sender<SessionState>,
    info: Arc<Mutex<SessionInfo>>,
    chroot: Chroot,
}

/// The last handle gone: tell the driver to close the session.
impl Drop for Inner {
    fn drop(&mut self) {
        self.commands.orphan();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("session_id", &format_args!("0x{:x}", self.session_id()))
            .field("state", &self.state())
            .finish()
    }
}

impl Client {
    /// Connects to one of the servers of `connect_string` (`host:port,...[/chroot]`) and
    /// establishes a new session. Must be called inside a tokio runtime; the session lives in a
    /// task of that runtime.
    ///
    /// # Errors
    /// An invalid connect string; ConnectionLoss if no server accepted a session within
    /// `config.connect_timeout`.
    pub async fn connect(connect_string: &str, config: ClientConfig) -> Result<Client> {
        let parsed = ConnectString::parse(connect_string)?;
        let commands = Arc::new(SubmitQueue::default());
        let (close_tx, close_rx) = mpsc::channel(1);
        let (state_tx, state_rx) = watch::channel(SessionState::Disconnected);
        let (events_tx, _) = broadcast::channel(SESSION_EVENT_QUEUE_LEN_MAX);
        let info = Arc::new(Mutex::new(SessionInfo::default()));
        let timeout_ms = config.session_timeout.as_millis().min(i32::MAX as u128) as i32;
        tokio::spawn(session::run(DriverParts {
            hosts: parsed.hosts,
            chroot: parsed.chroot.clone(),
            requested_timeout_ms: timeout_ms,
            auth: config.auth.clone(),
            commands: commands.clone(),
            close: close_rx,
            state: state_tx,
            events: events_tx.clone(),
            info: info.clone(),
            tls: config.tls.clone(),
            can_be_read_only: config.can_be_read_only,
        }));
        let client = Client {
            inner: Arc::new(Inner {
                commands,
                close: close_tx,
                state: state_rx,
                events: events_tx,
                info,
                chroot: parsed.chroot,
            }),
        };
        match client.wait_for_state(config.connect_timeout).await {
            SessionState::Connected | SessionState::ConnectedReadOnly => Ok(client),
            SessionState::Disconnected => {
                // Give up: close the session attempt so the driver task ends.
                client.close().await;
                Err(Error::keeper(ErrorCode::ConnectionLoss, ""))
            }
            state => Err(terminal_error(state, "")),
        }
    }

    /// Waits up to `limit` for the session to be connected (read-write, or read-only with
    /// `can_be_read_only`) or to end; returns the state then.
    pub async fn wait_for_state(&self, limit: Duration) -> SessionState {
        let mut state = self.inner.state.clone();
        let reached = tokio::time::timeout(limit, async {
            loop {
                let now = *state.borrow_and_update();
                if now.is_connected() || now.is_terminal() {
                    return now;
                }
                if state.changed().await.is_err() {
                    return *state.borrow();
                }
            }
        })
        .await;
        reached.unwrap_or_else(|_| self.state())
    }

    /// The session state now.
    pub fn state(&self) -> SessionState {
        *self.inner.state.borrow()
    }

    /// Every later session state change, in order (connected, disconnected, expired, auth
    /// failed, closed). The queue is bounded: a reader that falls far behind is told it lagged.
    pub fn session_events(&self) -> broadcast::Receiver<SessionState> {
        self.inner.events.subscribe()
    }

    pub fn session_id(&self) -> i64 {
        self.info().session_id
    }

    /// The negotiated session timeout.
    pub fn session_timeout(&self) -> Duration {
        Duration::from_millis(self.info().timeout_ms.max(0) as u64)
    }

    /// Session id, password, server and last zxid seen.
    pub fn info(&self) -> SessionInfo {
        self.inner
            .info
            .lock()
            .map(|info| info.clone())
            .unwrap_or_default()
    }

    /// Closes the session (ephemerals go at once) and waits until the driver has ended.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.inner.close.send(tx).await.is_ok() {
            let _ = rx.await;
        }
    }

    // ---- writes ----

    /// Creates a znode; returns its actual path (sequential suffix included) and Stat.
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
    ) -> Result<(String, Stat)> {
        self.create_nullable(path, Some(data), acl, mode).await
    }

    /// As [`Client::create`], but `None` stores Java's `null` data (what zkCli's `create /x`
    /// does).
    pub async fn create_nullable(
        &self,
        path: &str,
        data: Option<&[u8]>,
        acl: &[Acl],
        mode: CreateMode,
    ) -> Result<(String, Stat)> {
        path::validate(path, mode.is_sequential())?;
        let server_path = self.inner.chroot.to_server(path);
        let data = data.map(<[u8]>::to_vec);
        let request = match mode.ttl() {
            Some(ttl) => {
                if ttl <= 0 {
                    return Err(Error::InvalidArgument(format!(
                        "ttl {ttl} must be positive"
                    )));
                }
                Request::CreateTtl(CreateTtlRequest {
                    path: server_path,
                    data,
                    acl: acl.to_vec(),
                    flags: mode.flags(),
                    ttl,
                })
            }
            None => Request::Create {
                op: mode.op_code(),
                req: CreateRequest {
                    path: server_path,
                    data,
                    acl: acl.to_vec(),
                    flags: mode.flags(),
                },
            },
        };
        match self.call(request, path, None, None).await? {
            Response::Create2(r) => Ok((self.inner.chroot.to_client(&r.path), r.stat)),
            other => Err(unexpected(other, path)),
        }
    }

    /// Deletes a znode if its version is `version` (−1: any).
    pub async fn delete(&self, path: &str, version: i32) -> Result<()> {
        path::validate(path, false)?;
        let request = Request::Delete(PathAndVersion {
            path: self.inner.chroot.to_server(path),
            version,
        });
        self.call(request, path, None, None).await.map(drop)
    }

    /// Replaces a znode's data if its version is `version` (−1: any).
    pub async fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat> {
        path::validate(path, false)?;
        let request = Request::SetData(SetDataRequest {
            path: self.inner.chroot.to_server(path),
            data: Some(data.to_vec()),
            version,
        });
        self.stat_of(self.call(request, path, None, None).await?, path)
    }

    /// Replaces a znode's ACL if its ACL version is `version` (−1: any).
    pub async fn set_acl(&self, path: &str, acl: &[Acl], version: i32) -> Result<Stat> {
        path::validate(path, false)?;
        let request = Request::SetAcl(SetAclRequest {
            path: self.inner.chroot.to_server(path),
            acl: acl.to_vec(),
            version,
        });
        self.stat_of(self.call(request, path, None, None).await?, path)
    }

    /// Runs `ops` atomically: all succeed or none does. On failure the error is that of the
    /// first operation that failed (as `KeeperException` from Java's `multi`).
    pub async fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        let results = self.multi_results(ops, false).await?;
        if let Some(OpResult::Error(_)) = results.first() {
            // Every result is an error after a failure; report the one that is not −2 / 0.
            for result in &results {
                if let OpResult::Error(e) = result {
                    if !matches!(e.code(), ErrorCode::Ok | ErrorCode::RuntimeInconsistency) {
                        return Err(e.clone());
                    }
                }
            }
        }
        Ok(results)
    }

    /// Reads several znodes in one round trip; each result is its own success or error.
    pub async fn multi_read(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.multi_results(ops, true).await
    }

    async fn multi_results(&self, ops: &[Op], read: bool) -> Result<Vec<OpResult>> {
        for op in ops {
            let sequential = matches!(op, Op::Create { mode, .. } if mode.is_sequential());
            path::validate(op.path(), sequential)?;
            let allowed = matches!(op, Op::GetChildren { .. } | Op::GetData { .. }) == read;
            if !allowed {
                return Err(Error::InvalidArgument(format!(
                    "{op:?} is not allowed in {}",
                    if read { "multiRead" } else { "multi" }
                )));
            }
        }
        let wire = ops
            .iter()
            .map(|op| op.to_wire(&self.inner.chroot))
            .collect();
        let request = if read {
            Request::MultiRead(wire)
        } else {
            Request::Multi(wire)
        };
        match self.call(request, "", None, None).await? {
            Response::Multi(results) => Ok(results
                .into_iter()
                .zip(ops)
                .map(|(result, op)| op::from_wire(result, op, &self.inner.chroot))
                .collect()),
            other => Err(unexpected(other, "")),
        }
    }

    // ---- reads ----

    /// The Stat of a znode, `None` if it does not exist.
    pub async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.exists_inner(path, None).await
    }

    /// As [`Client::exists`], leaving a one-shot watch that fires when the node is created,
    /// deleted or changed.
    pub async fn exists_w(&self, path: &str) -> Result<(Option<Stat>, OneshotWatch)> {
        let (tx, watch) = oneshot_watch();
        let stat = self
            .exists_inner(path, Some(self.registration(WatchKind::Exist, path, tx)))
            .await?;
        Ok((stat, watch))
    }

    async fn exists_inner(
        &self,
        path: &str,
        watch: Option<WatchRegistration>,
    ) -> Result<Option<Stat>> {
        path::validate(path, false)?;
        let request = Request::Exists(PathAndWatch {
            path: self.inner.chroot.to_server(path),
            watch: watch.is_some(),
        });
        match self.call(request, path, watch, None).await {
            Ok(response) => self.stat_of(response, path).map(Some),
            Err(e) if e.code() == ErrorCode::NoNode => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A znode's data and Stat (Java `null` data reads as empty).
    pub async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self.get_data_nullable(path, None).await?;
        Ok((data.unwrap_or_default(), stat))
    }

    /// As [`Client::get_data`], leaving a one-shot watch for a data change or deletion.
    pub async fn get_data_w(&self, path: &str) -> Result<(Vec<u8>, Stat, OneshotWatch)> {
        let (tx, watch) = oneshot_watch();
        let (data, stat) = self
            .get_data_nullable(path, Some(self.registration(WatchKind::Data, path, tx)))
            .await?;
        Ok((data.unwrap_or_default(), stat, watch))
    }

    /// A znode's data as stored: `None` for Java's `null` (zkCli prints it as `null`).
    pub async fn get_data_raw(&self, path: &str) -> Result<(Option<Vec<u8>>, Stat)> {
        self.get_data_nullable(path, None).await
    }

    async fn get_data_nullable(
        &self,
        path: &str,
        watch: Option<WatchRegistration>,
    ) -> Result<(Option<Vec<u8>>, Stat)> {
        path::validate(path, false)?;
        let request = Request::GetData(PathAndWatch {
            path: self.inner.chroot.to_server(path),
            watch: watch.is_some(),
        });
        match self.call(request, path, watch, None).await? {
            Response::GetData(r) => Ok((r.data, r.stat)),
            other => Err(unexpected(other, path)),
        }
    }

    /// The names of a znode's children (unsorted, as the server sends them) and its Stat.
    pub async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        self.get_children_inner(path, None).await
    }

    /// As [`Client::get_children`], leaving a one-shot watch for a change of the child list or
    /// the node's deletion.
    pub async fn get_children_w(&self, path: &str) -> Result<(Vec<String>, Stat, OneshotWatch)> {
        let (tx, watch) = oneshot_watch();
        let (children, stat) = self
            .get_children_inner(path, Some(self.registration(WatchKind::Child, path, tx)))
            .await?;
        Ok((children, stat, watch))
    }

    async fn get_children_inner(
        &self,
        path: &str,
        watch: Option<WatchRegistration>,
    ) -> Result<(Vec<String>, Stat)> {
        path::validate(path, false)?;
        let request = Request::GetChildren2(PathAndWatch {
            path: self.inner.chroot.to_server(path),
            watch: watch.is_some(),
        });
        match self.call(request, path, watch, None).await? {
            Response::GetChildren2(r) => Ok((r.children, r.stat)),
            other => Err(unexpected(other, path)),
        }
    }

    /// A znode's ACL and Stat.
    pub async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        path::validate(path, false)?;
        let request = Request::GetAcl(PathRecord {
            path: self.inner.chroot.to_server(path),
        });
        match self.call(request, path, None, None).await? {
            Response::GetAcl(r) => Ok((r.acl, r.stat)),
            other => Err(unexpected(other, path)),
        }
    }

    /// The ensemble's configuration (`/zookeeper/config`, ZooKeeper's `getConfig`).
    pub async fn get_config(&self) -> Result<(Vec<u8>, Stat)> {
        let request = Request::GetData(PathAndWatch {
            path: CONFIG_NODE.to_string(),
            watch: false,
        });
        match self.call(request, CONFIG_NODE, None, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other, CONFIG_NODE)),
        }
    }

    /// Changes the ensemble's membership (ZooKeeper's `reconfig`; the server needs
    /// `reconfigEnabled=true` and the caller the super user): incremental with `joining`
    /// (`server.N=host:port:port[:role];[host:]port`, comma-separated) and `leaving` (ids), or
    /// a whole new membership with `members`. `from_config` is the configuration version it
    /// must start from, -1 for any. Answers with the new configuration.
    pub async fn reconfig(
        &self,
        joining: Option<&str>,
        leaving: Option<&str>,
        members: Option<&str>,
        from_config: i64,
    ) -> Result<(Vec<u8>, Stat)> {
        let request = Request::Reconfig(proto::records::ReconfigRequest {
            joining_servers: joining.map(str::to_string),
            leaving_servers: leaving.map(str::to_string),
            new_members: members.map(str::to_string),
            cur_config_id: from_config,
        });
        match self.call(request, CONFIG_NODE, None, None).await? {
            Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
            other => Err(unexpected(other, CONFIG_NODE)),
        }
    }

    /// The number of descendants of a znode (itself excluded).
    pub async fn get_all_children_number(&self, path: &str) -> Result<i32> {
        path::validate(path, false)?;
        let request = Request::GetAllChildrenNumber(PathRecord {
            path: self.inner.chroot.to_server(path),
        });
        match self.call(request, path, None, None).await? {
            Response::GetAllChildrenNumber(n) => Ok(n),
            other => Err(unexpected(other, path)),
        }
    }

    /// The session's ephemeral znodes whose paths start with `prefix` (`/` for all).
    pub async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>> {
        path::validate(prefix, true)?;
        let request = Request::GetEphemerals(PathRecord {
            path: self.inner.chroot.to_server(prefix),
        });
        match self.call(request, prefix, None, None).await? {
            Response::GetEphemerals(r) => Ok(r
                .ephemerals
                .iter()
                .map(|p| self.inner.chroot.to_client(p))
                .collect()),
            other => Err(unexpected(other, prefix)),
        }
    }

    /// Waits until the server this session is connected to has seen every write committed
    /// before the call (paper §2.3: sync + read).
    pub async fn sync(&self, path: &str) -> Result<()> {
        path::validate(path, false)?;
        let request = Request::Sync(PathRecord {
            path: self.inner.chroot.to_server(path),
        });
        self.call(request, path, None, None).await.map(drop)
    }

    // ---- watches, auth ----

    /// Adds a persistent (`AddWatchMode::Persistent`) or persistent recursive watch at `path`;
    /// it stays until removed and survives reconnections.
    pub async fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatch> {
        path::validate(path, false)?;
        let (tx, watch) = persistent_watch();
        let kind = match mode {
            AddWatchMode::Persistent => WatchKind::Persistent,
            AddWatchMode::PersistentRecursive => WatchKind::Recursive,
        };
        let registration = WatchRegistration {
            kind,
            path: path.to_string(),
            sink: WatchSink::Stream(tx),
        };
        let request = Request::AddWatch(AddWatchRequest {
            path: self.inner.chroot.to_server(path),
            mode: mode as i32,
        });
        self.call(request, path, Some(registration), None).await?;
        Ok(watch)
    }

    /// Removes every watch of `watcher_type` this session has at `path`, on the server and
    /// locally (local one-shot watches resolve with a `*WatchRemoved` event). NoWatcher if the
    /// server has none.
    pub async fn remove_all_watches(&self, path: &str, watcher_type: WatcherType) -> Result<()> {
        path::validate(path, false)?;
        let request = Request::RemoveWatches(PathAndWatcherType {
            path: self.inner.chroot.to_server(path),
            watcher_type: watcher_type as i32,
        });
        let effect = LocalEffect::RemoveWatches(path.to_string(), watcher_type);
        self.call(request, path, None, Some(effect)).await.map(drop)
    }

    /// Asks the server whether this session has a watch of `watcher_type` at `path`
    /// (checkWatches); NoWatcher if not.
    pub async fn check_watches(&self, path: &str, watcher_type: WatcherType) -> Result<()> {
        path::validate(path, false)?;
        let request = Request::CheckWatches(PathAndWatcherType {
            path: self.inner.chroot.to_server(path),
            watcher_type: watcher_type as i32,
        });
        self.call(request, path, None, None).await.map(drop)
    }

    /// Adds credentials to the session (`digest`: `user:password`). They are sent again on
    /// every reconnection. Refused credentials end the session with AuthFailed.
    pub async fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        let command = Command::AddAuth {
            scheme: scheme.to_string(),
            auth: auth.to_vec(),
            reply,
        };
        if self.inner.commands.submit(command).await.is_err() {
            return Err(terminal_error(self.state(), ""));
        }
        rx.await
            .unwrap_or_else(|_| Err(terminal_error(self.state(), "")))
    }

    /// The identities the session is authenticated as.
    pub async fn who_am_i(&self) -> Result<Vec<ClientInfo>> {
        match self.call(Request::WhoAmI, "", None, None).await? {
            Response::WhoAmI(r) => Ok(r.client_info),
            other => Err(unexpected(other, "")),
        }
    }

    // ---- plumbing ----

    fn registration(
        &self,
        kind: WatchKind,
        path: &str,
        tx: oneshot::Sender<crate::WatchedEvent>,
    ) -> WatchRegistration {
        WatchRegistration {
            kind,
            path: path.to_string(),
            sink: WatchSink::Oneshot(tx),
        }
    }

    async fn call(
        &self,
        request: Request,
        path: &str,
        watch: Option<WatchRegistration>,
        effect: Option<LocalEffect>,
    ) -> Result<Response> {
        let (reply, rx) = oneshot::channel();
        let submission = Submission {
            request,
            path: path.to_string(),
            watch,
            effect,
            reply,
        };
        if self
            .inner
            .commands
            .submit(Command::Submit(submission))
            .await
            .is_err()
        {
            return Err(terminal_error(self.state(), path));
        }
        rx.await
            .unwrap_or_else(|_| Err(terminal_error(self.state(), path)))
    }

    fn stat_of(&self, response: Response, path: &str) -> Result<Stat> {
        match response {
            Response::Stat(stat) => Ok(stat),
            other => Err(unexpected(other, path)),
        }
    }
}

/// The error for a request made after the session ended (`ClientCnxn.conLossPacket`).
fn terminal_error(state: SessionState, path: &str) -> Error {
    let code = match state {
        SessionState::AuthFailed => ErrorCode::AuthFailed,
        SessionState::Expired | SessionState::Closed => ErrorCode::SessionExpired,
        _ => ErrorCode::ConnectionLoss,
    };
    Error::keeper(code, path)
}

fn unexpected(response: Response, path: &str) -> Error {
    tracing::warn!(?response, "reply body of the wrong kind");
    Error::keeper(ErrorCode::MarshallingError, path)
}
