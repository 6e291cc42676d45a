package meerkat.compat;

import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.WatcherType;
import org.junit.jupiter.api.Test;

/** addWatch (persistent, persistent-recursive), removeWatches / removeAllWatches and NoWatcher. */
class PersistentWatchTest extends CompatTest {

    @Test
    void persistentWatch() {
        Differential.run("persistentWatch", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            // Set before the node exists; it survives every event.
            Watcher pw = w.watcher("pw");
            w.addWatch(s.p("pw"), pw, AddWatchMode.PERSISTENT);
            m.create(s.p("pw"), "", CreateMode.PERSISTENT);
            w.events(1);
            m.setData(s.p("pw"), "1", -1);
            m.setData(s.p("pw"), "2", -1);
            w.events(2);
            m.create(s.p("pw/a"), "", CreateMode.PERSISTENT);
            m.setData(s.p("pw/a"), "x", -1);
            m.create(s.p("pw/a/deep"), "", CreateMode.PERSISTENT);
            w.events(1);
            m.delete(s.p("pw/a/deep"), -1);
            m.delete(s.p("pw/a"), -1);
            w.events(1);
            m.delete(s.p("pw"), -1);
            w.events(1);
            m.create(s.p("pw"), "", CreateMode.PERSISTENT);
            w.events(1);

            // A one-shot watch and a persistent watch on the same path both fire.
            w.getData(s.p("pw"), w.watcher("oneshot"));
            m.setData(s.p("pw"), "3", -1);
            w.events(2);
            m.setData(s.p("pw"), "4", -1);
            w.events(1);

            w.removeWatches(s.p("pw"), w.watcher("never-added"), WatcherType.Persistent);
            s.check(w.lastError == Code.NOWATCHER, "removeWatches with a watcher object never added gives NoWatcher");
            w.removeWatches(s.p("pw"), pw, WatcherType.Persistent);
            w.events(1);
            m.setData(s.p("pw"), "5", -1);
            w.noEvents();
        });
    }

    @Test
    void recursiveWatch() {
        Differential.run("recursiveWatch", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            Watcher rw = w.watcher("rw");
            w.addWatch(s.p("rw"), rw, AddWatchMode.PERSISTENT_RECURSIVE);
            m.create(s.p("rw"), "", CreateMode.PERSISTENT);
            m.create(s.p("rw/a"), "", CreateMode.PERSISTENT);
            m.create(s.p("rw/a/b"), "", CreateMode.EPHEMERAL);
            m.setData(s.p("rw/a/b"), "x", -1);
            m.setData(s.p("rw"), "y", -1);
            // Siblings with a common name prefix are not below /rw.
            m.create(s.p("rwx"), "", CreateMode.PERSISTENT);
            m.delete(s.p("rw/a/b"), -1);
            w.events(6);
            // Closing the mutator deletes nothing under /rw now; add an ephemeral and close.
            m.create(s.p("rw/a/eph"), "", CreateMode.EPHEMERAL);
            w.events(1);
            m.closeRecorded();
            w.events(1);

            w.removeWatches(s.p("rw"), rw, WatcherType.PersistentRecursive);
            w.events(1);
            Session m2 = s.connect("mutator2");
            m2.create(s.p("rw/a/c"), "", CreateMode.PERSISTENT);
            w.noEvents();
        });
    }

    @Test
    void removeWatches() {
        Differential.run("removeWatches", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("n"), "", CreateMode.PERSISTENT);
            Watcher data = w.watcher("data");
            Watcher child = w.watcher("child");
            Watcher both = w.watcher("both");
            Watcher pers = w.watcher("pers");

            // Typed removal of one watcher object.
            w.getData(s.p("n"), data);
            w.removeWatches(s.p("n"), data, WatcherType.Data);
            w.events(1);
            w.getChildren(s.p("n"), child);
            w.removeWatches(s.p("n"), child, WatcherType.Data);
            s.check(w.lastError == Code.NOWATCHER, "removing a Data watch from a child-only watcher gives NoWatcher");
            w.removeWatches(s.p("n"), child, WatcherType.Children);
            w.events(1);
            // An exists watch counts as a data watch.
            w.exists(s.p("n"), data);
            w.removeWatches(s.p("n"), data, WatcherType.Data);
            w.events(1);
            // Any removes both kinds for that watcher.
            w.getData(s.p("n"), both);
            w.getChildren(s.p("n"), both);
            w.removeWatches(s.p("n"), both, WatcherType.Any);
            w.events(2);
            // Persistent watches are removed by type Persistent or Any.
            w.addWatch(s.p("n"), pers, AddWatchMode.PERSISTENT);
            w.removeWatches(s.p("n"), pers, WatcherType.Children);
            w.removeWatches(s.p("n"), pers, WatcherType.Persistent);
            w.events(1);

            // removeAllWatches takes every watcher of that type on the path.
            w.getData(s.p("n"), data);
            w.getData(s.p("n"), both);
            w.getChildren(s.p("n"), child);
            w.addWatch(s.p("n"), pers, AddWatchMode.PERSISTENT);
            w.removeAllWatches(s.p("n"), WatcherType.Data);
            w.events(2);
            w.removeAllWatches(s.p("n"), WatcherType.Any);
            w.events(2);
            m.setData(s.p("n"), "after removal", -1);
            m.create(s.p("n/kid"), "", CreateMode.PERSISTENT);
            w.noEvents();

            // Nothing left to remove.
            w.removeAllWatches(s.p("n"), WatcherType.Any);
            s.check(w.lastError == Code.NOWATCHER, "removeAllWatches with no watches gives NoWatcher");
            w.removeWatches(s.p("missing"), data, WatcherType.Any);
            w.removeAllWatches(s.p("missing"), WatcherType.Children);
        });
    }
}
