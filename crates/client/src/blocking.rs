//! The blocking client: every operation of [`crate::Client`] for code without an async runtime.
//!
//! It owns a small tokio runtime (one worker thread) on which the session driver runs, and
//! blocks the calling thread on each call. Calls from several threads share the session and
//! are pipelined like async calls. Do not use it from inside an async task.

use crate::config::ClientConfig;
use crate::create_mode::CreateMode;
use crate::error::{Error, Result};
use crate::event::SessionState;
use crate::op::{Op, OpResult};
use crate::session::SessionInfo;
use crate::watch::{OneshotWatch, PersistentWatch};
use proto::watch::{AddWatchMode, WatcherType};
use proto::{Acl, ClientInfo, ErrorCode, Stat};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A blocking handle onto a session; clone it to share the session between threads. Dropping
/// the last clone closes the session.
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
    runtime: Arc<Owned>,
}

/// The runtime the session runs on; closes the session before the runtime goes.
#[derive(Debug)]
struct Owned {
    runtime: tokio::runtime::Runtime,
    client: crate::Client,
}

impl Drop for Owned {
    fn drop(&mut self) {
        // Dropping a runtime cancels the driver mid-flight; close the session properly first
        // (not possible from inside another runtime, where blocking is forbidden).
        if tokio::runtime::Handle::try_current().is_err() {
            self.runtime.block_on(self.client.close());
        }
    }
}

impl Client {
    /// Connects as [`crate::Client::connect`] does.
    pub fn connect(connect_string: &str, config: ClientConfig) -> Result<Client> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("meerkat-client")
            .enable_all()
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot start the client runtime");
                Error::keeper(ErrorCode::SystemError, "")
            })?;
        let inner = runtime.block_on(crate::Client::connect(connect_string, config))?;
        Ok(Client {
            runtime: Arc::new(Owned {
                runtime,
                client: inner.clone(),
            }),
            inner,
        })
    }

    fn run<F: Future>(&self, future: F) -> F::Output {
        self.runtime.runtime.block_on(future)
    }

    /// The async client behind this one (same session).
    pub fn async_client(&self) -> &crate::Client {
        &self.inner
    }

    pub fn state(&self) -> SessionState {
        self.inner.state()
    }

    pub fn wait_for_state(&self, limit: Duration) -> SessionState {
        self.run(self.inner.wait_for_state(limit))
    }

    /// Session state changes; read with `blocking_recv`.
    pub fn session_events(&self) -> tokio::sync::broadcast::Receiver<SessionState> {
        self.inner.session_events()
    }

    pub fn session_id(&self) -> i64 {
        self.inner.session_id()
    }

    pub fn session_timeout(&self) -> Duration {
        self.inner.session_timeout()
    }

    pub fn info(&self) -> SessionInfo {
        self.inner.info()
    }

    pub fn close(&self) {
        self.run(self.inner.close())
    }

    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
    ) -> Result<(String, Stat)> {
        self.run(self.inner.create(path, data, acl, mode))
    }

    pub fn create_nullable(
        &self,
        path: &str,
        data: Option<&[u8]>,
        acl: &[Acl],
        mode: CreateMode,
    ) -> Result<(String, Stat)> {
        self.run(self.inner.create_nullable(path, data, acl, mode))
    }

    pub fn delete(&self, path: &str, version: i32) -> Result<()> {
        self.run(self.inner.delete(path, version))
    }

    pub fn set_data(&self, path: &str, data: &[u8], version: i32) -> Result<Stat> {
        self.run(self.inner.set_data(path, data, version))
    }

    pub fn set_acl(&self, path: &str, acl: &[Acl], version: i32) -> Result<Stat> {
        self.run(self.inner.set_acl(path, acl, version))
    }

    pub fn multi(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.run(self.inner.multi(ops))
    }

    pub fn multi_read(&self, ops: &[Op]) -> Result<Vec<OpResult>> {
        self.run(self.inner.multi_read(ops))
    }

    pub fn exists(&self, path: &str) -> Result<Option<Stat>> {
        self.run(self.inner.exists(path))
    }

    pub fn exists_w(&self, path: &str) -> Result<(Option<Stat>, OneshotWatch)> {
        self.run(self.inner.exists_w(path))
    }

    pub fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        self.run(self.inner.get_data(path))
    }

    pub fn get_data_w(&self, path: &str) -> Result<(Vec<u8>, Stat, OneshotWatch)> {
        self.run(self.inner.get_data_w(path))
    }

    pub fn get_data_raw(&self, path: &str) -> Result<(Option<Vec<u8>>, Stat)> {
        self.run(self.inner.get_data_raw(path))
    }

    pub fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        self.run(self.inner.get_children(path))
    }

    pub fn get_children_w(&self, path: &str) -> Result<(Vec<String>, Stat, OneshotWatch)> {
        self.run(self.inner.get_children_w(path))
    }

    pub fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        self.run(self.inner.get_acl(path))
    }

    pub fn get_all_children_number(&self, path: &str) -> Result<i32> {
        self.run(self.inner.get_all_children_number(path))
    }

    pub fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>> {
        self.run(self.inner.get_ephemerals(prefix))
    }

    pub fn sync(&self, path: &str) -> Result<()> {
        self.run(self.inner.sync(path))
    }

    pub fn add_watch(&self, path: &str, mode: AddWatchMode) -> Result<PersistentWatch> {
        self.run(self.inner.add_watch(path, mode))
    }

    pub fn remove_all_watches(&self, path: &str, watcher_type: WatcherType) -> Result<()> {
        self.run(self.inner.remove_all_watches(path, watcher_type))
    }

    pub fn check_watches(&self, path: &str, watcher_type: WatcherType) -> Result<()> {
        self.run(self.inner.check_watches(path, watcher_type))
    }

    pub fn add_auth(&self, scheme: &str, auth: &[u8]) -> Result<()> {
        self.run(self.inner.add_auth(scheme, auth))
    }

    pub fn who_am_i(&self) -> Result<Vec<ClientInfo>> {
        self.run(self.inner.who_am_i())
    }
}
