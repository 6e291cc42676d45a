package meerkat.compat;

import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Watcher;
import org.junit.jupiter.api.Test;

/** One-shot watches set by getData, exists and getChildren, and what fires them. */
class WatchTest extends CompatTest {

    @Test
    void dataAndExistsWatches() {
        Differential.run("dataAndExistsWatches", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("d"), "0", CreateMode.PERSISTENT);

            // Data watch: fires once on setData, then is gone.
            w.getData(s.p("d"), w.watcher("data1"));
            m.setData(s.p("d"), "1", -1);
            List<String> ev = w.events(1);
            m.setData(s.p("d"), "2", -1);
            w.noEvents();

            // Exists watch on a missing node (the call returns null but the watch is set).
            w.exists(s.p("later"), w.watcher("exists-missing"));
            m.create(s.p("later"), "", CreateMode.PERSISTENT);
            w.events(1);

            // Exists watch on an existing node: data change, then delete needs a new watch.
            w.exists(s.p("later"), w.watcher("exists-present"));
            m.setData(s.p("later"), "x", -1);
            w.events(1);
            w.exists(s.p("later"), w.watcher("exists-present"));
            m.delete(s.p("later"), -1);
            w.events(1);

            // The default watcher via watch=true.
            w.exists(s.p("d"), true);
            m.setData(s.p("d"), "3", -1);
            w.events(1);

            // The same watcher object set twice on one path fires once.
            Watcher twice = w.watcher("twice");
            w.getData(s.p("d"), twice);
            w.exists(s.p("d"), twice);
            m.setData(s.p("d"), "4", -1);
            w.events(1);

            // A session's own write fires its own watch, and the event comes before the reply is used.
            w.getData(s.p("d"), w.watcher("own"));
            w.setData(s.p("d"), "5", -1);
            w.events(1);

            // A failed setData (bad version) fires nothing.
            w.getData(s.p("d"), w.watcher("nofire"));
            m.setData(s.p("d"), "6", 999);
            w.noEvents();
            m.setData(s.p("d"), "7", -1);
            w.events(1);

            // Events carry the zxid of the change that fired them.
            s.check(ev.size() == 1 && ev.get(0).contains("NodeDataChanged") && !ev.get(0).endsWith("zxid=-"),
                    "data watch fires NodeDataChanged with the change's zxid");
        });
    }

    @Test
    void childWatches() {
        Differential.run("childWatches", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("p"), "", CreateMode.PERSISTENT);

            w.getChildren(s.p("p"), w.watcher("child1"));
            m.create(s.p("p/a"), "", CreateMode.PERSISTENT);
            w.events(1);
            m.create(s.p("p/b"), "", CreateMode.PERSISTENT);
            w.noEvents();

            // setData on the parent or on a child is no child event.
            w.getChildren2(s.p("p"), w.watcher("child2"));
            m.setData(s.p("p"), "x", -1);
            m.setData(s.p("p/a"), "x", -1);
            w.noEvents();
            m.delete(s.p("p/a"), -1);
            w.events(1);

            // Grandchildren do not fire a child watch.
            w.getChildren(s.p("p"), w.watcher("child3"));
            m.create(s.p("p/b/deep"), "", CreateMode.PERSISTENT);
            w.noEvents();
            m.create(s.p("p/c"), "", CreateMode.EPHEMERAL);
            w.events(1);

            // multi fires the watches of every op it applies, in op order.
            w.getChildren(s.p("p"), w.watcher("child4"));
            w.getData(s.p("p/b"), w.watcher("data-b"));
            m.multi("[setData p/b, create p/d]", List.of(
                    Op.setData(s.p("p/b"), Session.bytes("m"), -1),
                    Op.create(s.p("p/d"), Session.bytes(""), Session.OPEN, CreateMode.PERSISTENT)));
            w.events(2);
        });
    }

    /** Deleting a node fires its data, exists and child watches and the parent's child watch. */
    @Test
    void watchesOnDelete() {
        Differential.run("watchesOnDelete", s -> {
            Session w = s.connect("watcher");
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("n"), "", CreateMode.PERSISTENT);
            w.getData(s.p("n"), w.watcher("data"));
            w.exists(s.p("n"), w.watcher("exists"));
            w.getChildren(s.p("n"), w.watcher("child"));
            w.getChildren(s.root(), w.watcher("parent"));
            m.delete(s.p("n"), -1);
            w.events(4);

            // Re-creating the node fires nothing: those watches were one-shot.
            m.create(s.p("n"), "", CreateMode.PERSISTENT);
            w.noEvents();
        });
    }
}
