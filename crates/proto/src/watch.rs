//! Watch enums (`Watcher.Event.EventType`, `KeeperState`, `WatcherType`, `AddWatchMode`).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum EventType {
    None = -1,
    NodeCreated = 1,
    NodeDeleted = 2,
    NodeDataChanged = 3,
    NodeChildrenChanged = 4,
    DataWatchRemoved = 5,
    ChildWatchRemoved = 6,
    PersistentWatchRemoved = 7,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum KeeperState {
    Disconnected = 0,
    SyncConnected = 3,
    AuthFailed = 4,
    ConnectedReadOnly = 5,
    SaslAuthenticated = 6,
    Expired = -112,
    Closed = 7,
}

/// The kind of watch named in checkWatches / removeWatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum WatcherType {
    Children = 1,
    Data = 2,
    Any = 3,
    Persistent = 4,
    PersistentRecursive = 5,
}

impl WatcherType {
    pub fn from_i32(v: i32) -> Option<WatcherType> {
        Some(match v {
            1 => WatcherType::Children,
            2 => WatcherType::Data,
            3 => WatcherType::Any,
            4 => WatcherType::Persistent,
            5 => WatcherType::PersistentRecursive,
            _ => return None,
        })
    }
}

/// addWatch modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum AddWatchMode {
    Persistent = 0,
    PersistentRecursive = 1,
}

impl AddWatchMode {
    pub fn from_i32(v: i32) -> Option<AddWatchMode> {
        match v {
            0 => Some(AddWatchMode::Persistent),
            1 => Some(AddWatchMode::PersistentRecursive),
            _ => None,
        }
    }
}

/// ACL permission bits (`ZooDefs.Perms`).
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}
