//! What the client tells the application: watch events and session state changes.

use proto::watch::{EventType, KeeperState};

/// A watch fired: something changed at `path` (a watch never says what).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub event_type: EventType,
    pub state: KeeperState,
    /// The client path (chroot removed); empty for session events.
    pub path: String,
    /// The zxid of the change; −1 for events the server replays after setWatches.
    pub zxid: i64,
}

/// The state of a session as the application sees it (`Watcher.Event.KeeperState` for the
/// states a session passes through).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionState {
    /// Connected to a server; requests flow.
    Connected,
    /// Connected to a read-only server (only with `can_be_read_only`): reads flow, writes fail
    /// with NotReadOnly; the client looks for a read-write server meanwhile.
    ConnectedReadOnly,
    /// The connection is lost; the client is looking for a server. The session may still be
    /// alive: requests wait for the next connection.
    Disconnected,
    /// The server declared the session expired: every ephemeral is gone. Terminal.
    Expired,
    /// The server refused the credentials given with `add_auth`. Terminal.
    AuthFailed,
    /// The application closed the client. Terminal.
    Closed,
}

impl SessionState {
    /// Connected, read-write or read-only.
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }

    /// The `KeeperState` ZooKeeper reports for this state.
    pub fn keeper_state(self) -> KeeperState {
        match self {
            SessionState::Connected => KeeperState::SyncConnected,
            SessionState::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
            SessionState::Disconnected => KeeperState::Disconnected,
            SessionState::Expired => KeeperState::Expired,
            SessionState::AuthFailed => KeeperState::AuthFailed,
            SessionState::Closed => KeeperState::Closed,
        }
    }
}

/// `EventType` from its wire value; an unknown value (a newer server) is `None`.
pub fn event_type_from_wire(v: i32) -> Option<EventType> {
    Some(match v {
        -1 => EventType::None,
        1 => EventType::NodeCreated,
        2 => EventType::NodeDeleted,
        3 => EventType::NodeDataChanged,
        4 => EventType::NodeChildrenChanged,
        5 => EventType::DataWatchRemoved,
        6 => EventType::ChildWatchRemoved,
        7 => EventType::PersistentWatchRemoved,
        _ => return None,
    })
}

/// `KeeperState` from its wire value.
pub fn keeper_state_from_wire(v: i32) -> Option<KeeperState> {
    Some(match v {
        0 => KeeperState::Disconnected,
        3 => KeeperState::SyncConnected,
        4 => KeeperState::AuthFailed,
        5 => KeeperState::ConnectedReadOnly,
        6 => KeeperState::SaslAuthenticated,
        -112 => KeeperState::Expired,
        7 => KeeperState::Closed,
        _ => return None,
    })
}
