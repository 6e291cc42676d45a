//! Watches, as ZooKeeper keeps them (`WatchManager`, `DataTree`): two tables, *data* (getData,
//! exists, persistent and recursive watches) and *child* (getChildren and persistent watches),
//! each mapping a path to the connections watching it and their modes.
//!
//! Watches belong to a connection, not a session: when a connection closes its watches go, and
//! a reconnecting client re-registers them with setWatches.

use proto::watch::{EventType, WatcherType};
use std::collections::{HashMap, HashSet};
use tree::path;

pub type ConnId = u64;

/// Modes one connection holds on one path of one table, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modes(u8);

impl Modes {
    pub const STANDARD: Modes = Modes(1);
    pub const PERSISTENT: Modes = Modes(2);
    pub const RECURSIVE: Modes = Modes(4);

    fn has(self, m: Modes) -> bool {
        self.0 & m.0 != 0
    }
    fn with(self, m: Modes) -> Modes {
        Modes(self.0 | m.0)
    }
    fn without(self, m: Modes) -> Modes {
        Modes(self.0 & !m.0)
    }
    fn is_empty(self) -> bool {
        self.0 == 0
    }
}

#[derive(Debug, Default)]
struct Table {
    by_path: HashMap<String, HashMap<ConnId, Modes>>,
    by_conn: HashMap<ConnId, HashSet<String>>,
    recursive_count: usize,
}

impl Table {
    fn add(&mut self, node_path: &str, conn: ConnId, mode: Modes) {
        let modes = self
            .by_path
            .entry(node_path.to_string())
            .or_default()
            .entry(conn)
            .or_default();
        if mode == Modes::RECURSIVE && !modes.has(Modes::RECURSIVE) {
            self.recursive_count += 1;
        }
        *modes = modes.with(mode);
        self.by_conn
            .entry(conn)
            .or_default()
            .insert(node_path.to_string());
    }

    fn contains(&self, node_path: &str, conn: ConnId, mode: Option<Modes>) -> bool {
        let modes = self.by_path.get(node_path).and_then(|m| m.get(&conn));
        match (modes, mode) {
            (Some(m), Some(mode)) => m.has(mode),
            (Some(m), None) => !m.is_empty(),
            (None, _) => false,
        }
    }

    /// Removes `mode` (all modes when `None`); true if something was removed.
    fn remove(&mut self, node_path: &str, conn: ConnId, mode: Option<Modes>) -> bool {
        let Some(watchers) = self.by_path.get_mut(node_path) else {
            return false;
        };
        let Some(modes) = watchers.get_mut(&conn) else {
            return false;
        };
        let old = *modes;
        let new = match mode {
            Some(m) => old.without(m),
            None => Modes::default(),
        };
        if new == old {
            return false;
        }
        if old.has(Modes::RECURSIVE) && !new.has(Modes::RECURSIVE) {
            self.recursive_count -= 1;
        }
        *modes = new;
        if new.is_empty() {
            watchers.remove(&conn);
            if watchers.is_empty() {
                self.by_path.remove(node_path);
            }
            if let Some(paths) = self.by_conn.get_mut(&conn) {
                paths.remove(node_path);
                if paths.is_empty() {
                    self.by_conn.remove(&conn);
                }
            }
        }
        true
    }

    /// The connections to notify of `event_path` changing: standard and persistent watchers of
    /// the path itself (standard ones are consumed) and recursive watchers of its ancestors.
    fn trigger(&mut self, event_path: &str, out: &mut Vec<ConnId>) {
        if let Some(watchers) = self.by_path.get(event_path) {
            let fired: Vec<(ConnId, Modes)> = watchers.iter().map(|(c, m)| (*c, *m)).collect();
            for (conn, modes) in fired {
                out.push(conn);
                if modes.has(Modes::STANDARD) {
                    self.remove(event_path, conn, Some(Modes::STANDARD));
                }
            }
        }
        if self.recursive_count == 0 {
            return;
        }
        let mut ancestor = event_path;
        while ancestor != "/" {
            ancestor = path::parent_of(ancestor);
            if let Some(watchers) = self.by_path.get(ancestor) {
                out.extend(
                    watchers
                        .iter()
                        .filter(|(_, m)| m.has(Modes::RECURSIVE))
                        .map(|(c, _)| *c),
                );
            }
        }
    }

    fn remove_conn(&mut self, conn: ConnId) {
        for node_path in self.by_conn.remove(&conn).unwrap_or_default() {
            if let Some(watchers) = self.by_path.get_mut(&node_path) {
                if let Some(modes) = watchers.remove(&conn) {
                    if modes.has(Modes::RECURSIVE) {
                        self.recursive_count -= 1;
                    }
                }
                if watchers.is_empty() {
                    self.by_path.remove(&node_path);
                }
            }
        }
    }

    fn count(&self) -> usize {
        self.by_path.values().map(HashMap::len).sum()
    }
}

#[derive(Debug, Default)]
pub struct WatchManager {
    data: Table,
    child: Table,
}

/// A notification due to one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub conn: ConnId,
    pub event: EventType,
    pub path: String,
}

impl WatchManager {
    /// getData and exists watches.
    pub fn add_data_watch(&mut self, node_path: &str, conn: ConnId) {
        self.data.add(node_path, conn, Modes::STANDARD);
    }

    pub fn add_child_watch(&mut self, node_path: &str, conn: ConnId) {
        self.child.add(node_path, conn, Modes::STANDARD);
    }

    /// addWatch: persistent watches see data and child events of the path; recursive ones see
    /// data, create and delete events of the whole subtree but no child events (`DataTree.addWatch`).
    pub fn add_persistent(&mut self, node_path: &str, conn: ConnId, recursive: bool) {
        if recursive {
            self.data.add(node_path, conn, Modes::RECURSIVE);
        } else {
            self.data.add(node_path, conn, Modes::PERSISTENT);
            self.child.add(node_path, conn, Modes::PERSISTENT);
        }
    }

    pub fn contains(&self, node_path: &str, conn: ConnId, kind: WatcherType) -> bool {
        match kind {
            WatcherType::Children => self.child.contains(node_path, conn, Some(Modes::STANDARD)),
            WatcherType::Data => self.data.contains(node_path, conn, Some(Modes::STANDARD)),
            WatcherType::Persistent => self.data.contains(node_path, conn, Some(Modes::PERSISTENT)),
            WatcherType::PersistentRecursive => {
                self.data.contains(node_path, conn, Some(Modes::RECURSIVE))
            }
            WatcherType::Any => {
                self.child.contains(node_path, conn, None)
                    || self.data.contains(node_path, conn, None)
            }
        }
    }

    pub fn remove(&mut self, node_path: &str, conn: ConnId, kind: WatcherType) -> bool {
        match kind {
            WatcherType::Children => self.child.remove(node_path, conn, Some(Modes::STANDARD)),
            WatcherType::Data => self.data.remove(node_path, conn, Some(Modes::STANDARD)),
            WatcherType::Persistent => {
                let c = self.child.remove(node_path, conn, Some(Modes::PERSISTENT));
                let d = self.data.remove(node_path, conn, Some(Modes::PERSISTENT));
                c || d
            }
            WatcherType::PersistentRecursive => {
                self.data.remove(node_path, conn, Some(Modes::RECURSIVE))
            }
            WatcherType::Any => {
                let c = self.child.remove(node_path, conn, None);
                let d = self.data.remove(node_path, conn, None);
                c || d
            }
        }
    }

    pub fn remove_connection(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }

    /// The notifications one change causes, each connection notified once per event.
    pub fn trigger(&mut self, change: &tree::Trigger, out: &mut Vec<Notification>) {
        let mut conns = Vec::new();
        let (event, event_path) = match change {
            tree::Trigger::Created(p, _) => {
                self.data.trigger(p, &mut conns);
                (EventType::NodeCreated, p)
            }
            tree::Trigger::DataChanged(p, _) => {
                self.data.trigger(p, &mut conns);
                (EventType::NodeDataChanged, p)
            }
            tree::Trigger::Deleted(p, _) => {
                self.data.trigger(p, &mut conns);
                self.child.trigger(p, &mut conns);
                (EventType::NodeDeleted, p)
            }
            tree::Trigger::ChildrenChanged(p, _) => {
                self.child.trigger(p, &mut conns);
                (EventType::NodeChildrenChanged, p)
            }
        };
        conns.sort_unstable();
        conns.dedup();
        out.extend(conns.into_iter().map(|conn| Notification {
            conn,
            event,
            path: String::from(*event_path),
        }));
    }

    pub fn watch_count(&self) -> usize {
        self.data.count() + self.child.count()
    }

    pub fn watches_of(&self, conn: ConnId) -> usize {
        self.data.by_conn.get(&conn).map_or(0, HashSet::len)
            + self.child.by_conn.get(&conn).map_or(0, HashSet::len)
    }

    /// Paths with data (getData/exists/persistent) watches, by connection: what ZooKeeper's
    /// wchs/wchc report (they read only its data-watch table).
    pub fn by_connection(&self) -> HashMap<ConnId, Vec<String>> {
        let mut out: HashMap<ConnId, Vec<String>> = HashMap::new();
        for (conn, paths) in &self.data.by_conn {
            out.entry(*conn).or_default().extend(paths.iter().cloned());
        }
        for paths in out.values_mut() {
            paths.sort();
            paths.dedup();
        }
        out
    }

    /// Connections with data watches on each path (wchp).
    pub fn by_path(&self) -> HashMap<String, Vec<ConnId>> {
        let mut out: HashMap<String, Vec<ConnId>> = HashMap::new();
        for table in [&self.data] {
            for (p, conns) in &table.by_path {
                out.entry(p.clone())
                    .or_default()
                    .extend(conns.keys().copied());
            }
        }
        for conns in out.values_mut() {
            conns.sort_unstable();
            conns.dedup();
        }
        out
    }

    pub fn path_count(&self) -> usize {
        self.data.by_path.len()
    }

    /// Data watches only, as ZooKeeper's wchs "Total watches".
    pub fn data_watch_count(&self) -> usize {
        self.data.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tree::Trigger;

    fn open() -> tree::acl::AclList {
        tree::acl::open_acl_unsafe().into()
    }
    fn created(p: &str) -> Trigger<'_> {
        Trigger::Created(p, open())
    }
    fn deleted(p: &str) -> Trigger<'_> {
        Trigger::Deleted(p, open())
    }
    fn data_changed(p: &str) -> Trigger<'_> {
        Trigger::DataChanged(p, open())
    }
    fn children_changed(p: &str) -> Trigger<'_> {
        Trigger::ChildrenChanged(p, open())
    }

    fn fire(w: &mut WatchManager, t: Trigger) -> Vec<(ConnId, EventType)> {
        let mut out = Vec::new();
        w.trigger(&t, &mut out);
        out.into_iter().map(|n| (n.conn, n.event)).collect()
    }

    #[test]
    fn standard_watches_fire_once() {
        let mut w = WatchManager::default();
        w.add_data_watch("/a", 1);
        assert_eq!(
            fire(&mut w, data_changed("/a")),
            vec![(1, EventType::NodeDataChanged)]
        );
        assert!(fire(&mut w, data_changed("/a")).is_empty());
    }

    #[test]
    fn delete_notifies_data_and_child_watchers_once() {
        let mut w = WatchManager::default();
        w.add_data_watch("/a", 1);
        w.add_child_watch("/a", 1);
        w.add_child_watch("/a", 2);
        assert_eq!(
            fire(&mut w, deleted("/a")),
            vec![(1, EventType::NodeDeleted), (2, EventType::NodeDeleted)]
        );
        assert_eq!(w.watch_count(), 0);
    }

    #[test]
    fn persistent_and_recursive() {
        let mut w = WatchManager::default();
        w.add_persistent("/a", 1, false);
        w.add_persistent("/a", 2, true);
        assert_eq!(
            fire(&mut w, children_changed("/a")),
            vec![(1, EventType::NodeChildrenChanged)]
        );
        assert_eq!(
            fire(&mut w, created("/a/b/c")),
            vec![(2, EventType::NodeCreated)]
        );
        assert_eq!(fire(&mut w, data_changed("/a")).len(), 2);
        assert_eq!(
            fire(&mut w, data_changed("/a")).len(),
            2,
            "persistent watches stay"
        );
        assert!(w.remove("/a", 2, WatcherType::PersistentRecursive));
        assert!(!w.contains("/a", 2, WatcherType::Any));
        w.remove_connection(1);
        assert_eq!(w.watch_count(), 0);
    }
}
