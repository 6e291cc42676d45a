//! Watches as the application holds them, and the client-side registry that routes each
//! notification to them (`ZKWatchManager`).
//!
//! * A one-shot watch ([`OneshotWatch`]) is a future that resolves once: with the event that
//!   fired it, or with a session event (`Expired`, `Closed`, `AuthFailed`) if the session ends
//!   first. Across reconnections it stays armed: the client re-registers it with setWatches.
//! * A persistent or recursive watch ([`PersistentWatch`]) is a stream. Its buffer is bounded
//!   ([`PERSISTENT_WATCH_QUEUE_LEN_MAX`]); a consumer that falls that far behind loses the
//!   watch, and the stream ends, rather than the client buffering without limit or stalling
//!   the session for everyone. Connection state changes are delivered on it too, as ZooKeeper
//!   delivers them to every watcher.
//!
//! The registry fans one server notification out to every matching watch, by ZooKeeper's rules:
//! created/data-changed fire data and exist watches; children-changed fires child watches;
//! deleted fires all three; persistent watches see every type at their path; recursive watches
//! see created, deleted and data-changed at their path and below.

use crate::event::WatchedEvent;
use crate::limits::PERSISTENT_WATCH_QUEUE_LEN_MAX;
use proto::watch::{EventType, KeeperState, WatcherType};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};

/// A one-shot watch: resolves with the event that fired it.
#[derive(Debug)]
pub struct OneshotWatch {
    rx: oneshot::Receiver<WatchedEvent>,
}

impl OneshotWatch {
    /// The event, if it has already arrived.
    pub fn try_event(&mut self) -> Option<WatchedEvent> {
        self.rx.try_recv().ok()
    }
}

impl Future for OneshotWatch {
    type Output = WatchedEvent;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchedEvent> {
        Pin::new(&mut self.rx).poll(cx).map(|result| {
            // The sender is dropped without an event only when the client itself is dropped.
            result.unwrap_or(WatchedEvent {
                event_type: EventType::None,
                state: KeeperState::Closed,
                path: String::new(),
                zxid: -1,
            })
        })
    }
}

/// A persistent (or persistent recursive) watch: a stream of events.
#[derive(Debug)]
pub struct PersistentWatch {
    rx: mpsc::Receiver<WatchedEvent>,
}

impl PersistentWatch {
    /// The next event; `None` once the watch is gone (removed, session ended, or the consumer
    /// fell behind by more than the buffer).
    pub async fn next(&mut self) -> Option<WatchedEvent> {
        self.rx.recv().await
    }

    /// The next event if one is already buffered.
    pub fn try_next(&mut self) -> Option<WatchedEvent> {
        self.rx.try_recv().ok()
    }

    /// Blocks the calling thread for the next event (for the blocking API; never call it from
    /// inside an async task).
    pub fn blocking_next(&mut self) -> Option<WatchedEvent> {
        self.rx.blocking_recv()
    }
}

impl OneshotWatch {
    /// Blocks the calling thread until the event arrives (blocking API only).
    pub fn blocking_wait(self) -> WatchedEvent {
        let closed = WatchedEvent {
            event_type: EventType::None,
            state: KeeperState::Closed,
            path: String::new(),
            zxid: -1,
        };
        self.rx.blocking_recv().unwrap_or(closed)
    }
}

/// The kinds of watch a request can leave behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchKind {
    Data,
    Exist,
    Child,
    Persistent,
    Recursive,
}

/// The sending side of a watch, handed to the driver with the request that sets it. It is
/// registered only if the request succeeds (or, for exists, finds no node), as in ZooKeeper.
#[derive(Debug)]
pub(crate) enum WatchSink {
    Oneshot(oneshot::Sender<WatchedEvent>),
    Stream(mpsc::Sender<WatchedEvent>),
}

/// A watch waiting for its request's answer.
#[derive(Debug)]
pub(crate) struct WatchRegistration {
    pub kind: WatchKind,
    pub path: String,
    pub sink: WatchSink,
}

pub(crate) fn oneshot_watch() -> (oneshot::Sender<WatchedEvent>, OneshotWatch) {
    let (tx, rx) = oneshot::channel();
    (tx, OneshotWatch { rx })
}

pub(crate) fn persistent_watch() -> (mpsc::Sender<WatchedEvent>, PersistentWatch) {
    let (tx, rx) = mpsc::channel(PERSISTENT_WATCH_QUEUE_LEN_MAX);
    (tx, PersistentWatch { rx })
}

/// Every watch of one session, by client path.
#[derive(Debug, Default)]
pub(crate) struct WatchRegistry {
    data: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    exist: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    child: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    persistent: HashMap<String, Vec<mpsc::Sender<WatchedEvent>>>,
    recursive: HashMap<String, Vec<mpsc::Sender<WatchedEvent>>>,
}

/// The paths to re-register after a reconnection, per kind (`SetWatches2` fields).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct WatchPaths {
    pub data: Vec<String>,
    pub exist: Vec<String>,
    pub child: Vec<String>,
    pub persistent: Vec<String>,
    pub recursive: Vec<String>,
}

impl WatchRegistry {
    pub(crate) fn register(&mut self, registration: WatchRegistration) {
        let WatchRegistration { kind, path, sink } = registration;
        match (kind, sink) {
            (WatchKind::Data, WatchSink::Oneshot(tx)) => {
                self.data.entry(path).or_default().push(tx)
            }
            (WatchKind::Exist, WatchSink::Oneshot(tx)) => {
                self.exist.entry(path).or_default().push(tx)
            }
            (WatchKind::Child, WatchSink::Oneshot(tx)) => {
                self.child.entry(path).or_default().push(tx)
            }
            (WatchKind::Persistent, WatchSink::Stream(tx)) => {
                self.persistent.entry(path).or_default().push(tx)
            }
            (WatchKind::Recursive, WatchSink::Stream(tx)) => {
                self.recursive.entry(path).or_default().push(tx)
            }
            // The API never pairs a kind with the other sink type.
            (kind, _) => tracing::error!(?kind, "watch kind and sink do not match; dropped"),
        }
    }

    /// Delivers a server notification to every watch it concerns; one-shot watches fire once
    /// and are removed.
    pub(crate) fn deliver(&mut self, event: &WatchedEvent) {
        let path = event.path.as_str();
        let mut oneshots = Vec::new();
        match event.event_type {
            EventType::NodeCreated | EventType::NodeDataChanged => {
                oneshots.extend(self.data.remove(path).unwrap_or_default());
                oneshots.extend(self.exist.remove(path).unwrap_or_default());
            }
            EventType::NodeChildrenChanged => {
                oneshots.extend(self.child.remove(path).unwrap_or_default());
            }
            EventType::NodeDeleted => {
                oneshots.extend(self.data.remove(path).unwrap_or_default());
                oneshots.extend(self.exist.remove(path).unwrap_or_default());
                oneshots.extend(self.child.remove(path).unwrap_or_default());
            }
            _ => {}
        }
        for tx in oneshots {
            let _ = tx.send(event.clone());
        }
        if matches!(
            event.event_type,
            EventType::NodeCreated
                | EventType::NodeDeleted
                | EventType::NodeDataChanged
                | EventType::NodeChildrenChanged
        ) {
            if let Some(sinks) = self.persistent.get_mut(path) {
                send_all(sinks, event);
            }
        }
        if event.event_type != EventType::NodeChildrenChanged {
            let mut ancestor = Some(path);
            while let Some(p) = ancestor {
                if let Some(sinks) = self.recursive.get_mut(p) {
                    send_all(sinks, event);
                }
                ancestor = if p == "/" {
                    None
                } else {
                    Some(crate::path::parent(p))
                };
            }
        }
        self.persistent.retain(|_, sinks| !sinks.is_empty());
        self.recursive.retain(|_, sinks| !sinks.is_empty());
    }

    /// Tells persistent watches about a connection state change (one-shot watches stay armed
    /// and silent across reconnections).
    pub(crate) fn deliver_state(&mut self, state: KeeperState) {
        let event = WatchedEvent {
            event_type: EventType::None,
            state,
            path: String::new(),
            zxid: -1,
        };
        for sinks in self
            .persistent
            .values_mut()
            .chain(self.recursive.values_mut())
        {
            send_all(sinks, &event);
        }
    }

    /// The session is over: every watch gets the final state and is dropped.
    pub(crate) fn end(&mut self, state: KeeperState) {
        let event = WatchedEvent {
            event_type: EventType::None,
            state,
            path: String::new(),
            zxid: -1,
        };
        for (_, txs) in self
            .data
            .drain()
            .chain(self.exist.drain())
            .chain(self.child.drain())
        {
            for tx in txs {
                let _ = tx.send(event.clone());
            }
        }
        for (_, mut sinks) in self.persistent.drain().chain(self.recursive.drain()) {
            send_all(&mut sinks, &event);
        }
    }

    /// Removes watches of `watcher_type` at `path` locally after a successful removeWatches,
    /// resolving one-shot watches with the `*WatchRemoved` event as ZooKeeper does.
    pub(crate) fn remove(&mut self, path: &str, watcher_type: WatcherType) {
        let removed = |event_type| WatchedEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.to_string(),
            zxid: -1,
        };
        let data = matches!(watcher_type, WatcherType::Data | WatcherType::Any);
        let child = matches!(watcher_type, WatcherType::Children | WatcherType::Any);
        if data {
            for tx in self
                .data
                .remove(path)
                .unwrap_or_default()
                .into_iter()
                .chain(self.exist.remove(path).unwrap_or_default())
            {
                let _ = tx.send(removed(EventType::DataWatchRemoved));
            }
        }
        if child {
            for tx in self.child.remove(path).unwrap_or_default() {
                let _ = tx.send(removed(EventType::ChildWatchRemoved));
            }
        }
        let persistent = matches!(watcher_type, WatcherType::Persistent | WatcherType::Any);
        let recursive = matches!(
            watcher_type,
            WatcherType::PersistentRecursive | WatcherType::Any
        );
        for (wanted, map) in [
            (persistent, &mut self.persistent),
            (recursive, &mut self.recursive),
        ] {
            if wanted {
                if let Some(mut sinks) = map.remove(path) {
                    send_all(&mut sinks, &removed(EventType::PersistentWatchRemoved));
                }
            }
        }
    }

    /// The paths to re-register on a new connection. One-shot watches whose future was dropped
    /// are forgotten here rather than re-registered.
    pub(crate) fn paths(&mut self) -> WatchPaths {
        fn live<T>(map: &mut HashMap<String, Vec<T>>, closed: impl Fn(&T) -> bool) -> Vec<String> {
            map.retain(|_, txs| {
                txs.retain(|tx| !closed(tx));
                !txs.is_empty()
            });
            let mut paths: Vec<String> = map.keys().cloned().collect();
            paths.sort();
            paths
        }
        let oneshot_closed = |tx: &oneshot::Sender<WatchedEvent>| tx.is_closed();
        let stream_closed = |tx: &mpsc::Sender<WatchedEvent>| tx.is_closed();
        WatchPaths {
            data: live(&mut self.data, oneshot_closed),
            exist: live(&mut self.exist, oneshot_closed),
            child: live(&mut self.child, oneshot_closed),
            persistent: live(&mut self.persistent, stream_closed),
            recursive: live(&mut self.recursive, stream_closed),
        }
    }
}

/// Sends to every stream, dropping those whose consumer is gone or too far behind.
fn send_all(sinks: &mut Vec<mpsc::Sender<WatchedEvent>>, event: &WatchedEvent) {
    sinks.retain(|tx| match tx.try_send(event.clone()) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            tracing::warn!(path = %event.path, "persistent watch consumer fell behind; watch dropped");
            false
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event_type: EventType, path: &str) -> WatchedEvent {
        WatchedEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.into(),
            zxid: 7,
        }
    }

    #[test]
    fn fan_out_follows_zookeeper_rules() {
        let mut registry = WatchRegistry::default();
        let (data_tx, mut data) = oneshot_watch();
        let (child_tx, mut child) = oneshot_watch();
        let (rec_tx, mut rec) = persistent_watch();
        let (per_tx, mut per) = persistent_watch();
        for (kind, path, sink) in [
            (WatchKind::Data, "/a/b", WatchSink::Oneshot(data_tx)),
            (WatchKind::Child, "/a/b", WatchSink::Oneshot(child_tx)),
            (WatchKind::Recursive, "/a", WatchSink::Stream(rec_tx)),
            (WatchKind::Persistent, "/a/b", WatchSink::Stream(per_tx)),
        ] {
            registry.register(WatchRegistration {
                kind,
                path: path.into(),
                sink,
            });
        }
        registry.deliver(&event(EventType::NodeChildrenChanged, "/a/b"));
        assert_eq!(data.try_event(), None);
        assert_eq!(
            child.try_event().map(|e| e.event_type),
            Some(EventType::NodeChildrenChanged)
        );
        assert_eq!(
            rec.try_next(),
            None,
            "recursive watches get no child events"
        );
        assert_eq!(
            per.try_next().map(|e| e.event_type),
            Some(EventType::NodeChildrenChanged)
        );
        registry.deliver(&event(EventType::NodeDataChanged, "/a/b"));
        registry.deliver(&event(EventType::NodeDataChanged, "/a/b"));
        assert_eq!(
            data.try_event().map(|e| e.event_type),
            Some(EventType::NodeDataChanged)
        );
        assert_eq!(rec.try_next().map(|e| e.path), Some("/a/b".to_string()));
        assert_eq!(rec.try_next().map(|e| e.path), Some("/a/b".to_string()));
        assert!(
            registry.paths().data.is_empty(),
            "one-shot watch fired once"
        );
        assert_eq!(registry.paths().recursive, vec!["/a".to_string()]);
    }
}
