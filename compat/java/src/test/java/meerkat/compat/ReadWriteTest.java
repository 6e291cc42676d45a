package meerkat.compat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/** Reads and writes with their Stats, delete with versions, sync, and the counting/listing calls. */
class ReadWriteTest extends CompatTest {

    @Test
    void dataAndStats() {
        Differential.run("dataAndStats", s -> {
            Session c = s.connect("c1");
            Stat root = c.create2(s.root(), "r", CreateMode.PERSISTENT, -1);
            c.create(s.p("n"), "v0", CreateMode.PERSISTENT);
            byte[] d0 = c.getData(s.p("n"));
            Stat st1 = c.setData(s.p("n"), "v1", 0);
            c.setData(s.p("n"), "v2", 0);
            s.check(c.lastError == Code.BADVERSION, "setData with a stale version gives BadVersion");
            Stat st2 = c.setData(s.p("n"), "longer value 2", -1);
            c.setData(s.p("n"), null, st2 == null ? 2 : st2.getVersion());
            c.getData(s.p("n"));
            c.setData(s.p("missing"), "x", -1);
            s.check(c.lastError == Code.NONODE, "setData of a missing node gives NoNode");
            c.getData(s.p("missing"));
            c.exists(s.p("n"), false);
            c.exists(s.p("missing"), false);

            // Children and the parent's cversion / pzxid / numChildren.
            c.create(s.p("n/a"), "", CreateMode.PERSISTENT);
            c.create(s.p("n/b"), "", CreateMode.PERSISTENT);
            c.getChildren(s.p("n"), null);
            Stat parent1 = c.exists(s.p("n"), false);
            c.setData(s.p("n/a"), "child data does not touch the parent", -1);
            Stat parent2 = c.exists(s.p("n"), false);
            c.delete(s.p("n/b"), -1);
            c.getChildren2(s.p("n"), null);
            c.getChildren2(s.p("n/a"), null);
            c.getChildren(s.p("missing"), null);
            c.getChildren2(s.root(), null);

            s.check(d0 != null && new String(d0).equals("v0"), "getData returns what create stored");
            s.check(st1 != null && st1.getVersion() == 1 && st1.getMzxid() > st1.getCzxid(), "setData bumps version and mzxid");
            s.check(parent1 != null && parent1.getCversion() == 2 && parent1.getNumChildren() == 2, "two creates: cversion 2");
            s.check(parent1 != null && parent2 != null && parent1.getPzxid() == parent2.getPzxid()
                    && parent1.getMzxid() == parent2.getMzxid(), "a child's setData changes neither pzxid nor mzxid of the parent");
            s.check(root != null && root.getPzxid() == root.getCzxid(), "a new node's pzxid is its czxid");
        });
    }

    @Test
    void deleteWithVersions() {
        Differential.run("deleteWithVersions", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("x"), "", CreateMode.PERSISTENT);
            c.setData(s.p("x"), "1", -1);
            c.setData(s.p("x"), "2", -1);
            c.delete(s.p("x"), 1);
            c.delete(s.p("x"), 3);
            c.delete(s.p("x"), 2);
            c.delete(s.p("x"), 2);
            c.exists(s.p("x"), false);
            c.create(s.p("y"), "", CreateMode.PERSISTENT);
            c.delete(s.p("y"), -1);
            c.delete("/", -1);
            c.delete("/zookeeper", -1);
            c.exists(s.root(), false);
        });
    }

    /** sync succeeds on any path (even a missing one) and later reads see the writes. */
    @Test
    void syncThenRead() {
        Differential.run("syncThenRead", s -> {
            Session a = s.connect("c1");
            Session b = s.connect("c2");
            a.create(s.root(), "", CreateMode.PERSISTENT);
            a.create(s.p("k"), "before", CreateMode.PERSISTENT);
            a.setData(s.p("k"), "after", -1);
            b.sync(s.p("k"));
            b.getData(s.p("k"));
            b.sync(s.p("missing"));
            b.sync("/");
        });
    }

    @Test
    void ephemeralsAndCounts() {
        Differential.run("ephemeralsAndCounts", s -> {
            Session a = s.connect("c1");
            Session b = s.connect("c2");
            a.create(s.root(), "", CreateMode.PERSISTENT);
            a.create(s.p("x"), "", CreateMode.PERSISTENT);
            a.create(s.p("y"), "", CreateMode.PERSISTENT);
            a.create(s.p("x/e1"), "", CreateMode.EPHEMERAL);
            a.create(s.p("x/e2-"), "", CreateMode.EPHEMERAL_SEQUENTIAL);
            a.create(s.p("y/e3"), "", CreateMode.EPHEMERAL);
            a.create(s.p("y/p"), "", CreateMode.PERSISTENT);
            b.create(s.p("x/other"), "", CreateMode.EPHEMERAL);

            List<String> all = a.getEphemerals(null);
            a.getEphemerals(s.p("x"));
            a.getEphemerals(s.p("x/e"));
            a.getEphemerals(s.p("y/"));
            a.getEphemerals(s.p("nothing"));
            a.getEphemerals("/");
            b.getEphemerals(null);

            a.getAllChildrenNumber(s.root());
            a.getAllChildrenNumber(s.p("x"));
            a.getAllChildrenNumber(s.p("x/e1"));
            a.getAllChildrenNumber(s.p("missing"));

            s.check(all != null && all.size() == 3, "getEphemerals() lists only this session's 3 ephemerals");
        });
    }

    /** The system znodes that Curator and zkCli rely on. */
    @Test
    void systemNodes() {
        Differential.run("systemNodes", s -> {
            Session c = s.connect("c1");
            List<String> kids = c.getChildren2("/zookeeper", null);
            c.exists("/zookeeper/quota", false);
            Stat cfg = c.exists("/zookeeper/config", false);
            c.getChildren("/zookeeper/quota", null);
            c.getData("/zookeeper/config");
            c.getData("/zookeeper/quota");
            c.getACL("/zookeeper");
            c.getACL("/zookeeper/config");
            c.setData("/zookeeper/config", "x", -1);
            s.check(kids != null && kids.contains("quota") && kids.contains("config"),
                    "/zookeeper has quota and config children");
            s.check(cfg != null, "/zookeeper/config exists");
        });
    }

    /**
     * Many async calls in flight on one session: replies (errors included) must
     * come back in request order, and each read must see the writes sent before it.
     */
    @Test
    void pipelinedAsyncCalls() {
        Differential.run("pipelinedAsyncCalls", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("counter"), "start", CreateMode.PERSISTENT);
            int n = 80;
            List<Object[]> done = Collections.synchronizedList(new ArrayList<>());
            for (int i = 0; i < n; i++) {
                final int k = i;
                switch (i % 5) {
                    case 0:
                        c.zk.create(s.p("q-"), null, Session.OPEN, CreateMode.PERSISTENT_SEQUENTIAL,
                                (rc, path, ctx, name) -> done.add(new Object[] {k, "create", rc, name}), null);
                        break;
                    case 1:
                        c.zk.setData(s.p("counter"), Session.bytes("v" + i), -1,
                                (rc, path, ctx, st) -> done.add(new Object[] {k, "setData", rc, st}), null);
                        break;
                    case 2:
                        c.zk.getData(s.p("counter"), false,
                                (rc, path, ctx, data, st) -> done.add(new Object[] {k, "getData", rc, data, st}), null);
                        break;
                    case 3:
                        // Fails from the second round on: version 1 is long gone.
                        c.zk.setData(s.p("counter"), Session.bytes("stale"), 1,
                                (rc, path, ctx, st) -> done.add(new Object[] {k, "setData v=1", rc, st}), null);
                        break;
                    default:
                        c.zk.getChildren(s.root(), false,
                                (rc, path, ctx, kids, st) -> done.add(new Object[] {k, "getChildren2", rc, kids, st}), null);
                        break;
                }
            }
            Scenario.waitUntil(20_000, () -> done.size() >= n);
            List<Object[]> snapshot;
            synchronized (done) {
                snapshot = new ArrayList<>(done);
            }
            boolean inOrder = true;
            for (int i = 0; i < snapshot.size(); i++) {
                Object[] r = snapshot.get(i);
                inOrder &= (int) r[0] == i;
                StringBuilder line = new StringBuilder("c1 async #" + r[0] + " " + r[1] + " -> "
                        + KeeperException.Code.get((int) r[2]));
                for (int j = 3; j < r.length; j++) {
                    Object v = r[j];
                    line.append(' ').append(v instanceof Stat ? s.t.stat((Stat) v)
                            : v instanceof byte[] ? Transcript.data((byte[]) v)
                            : v instanceof List ? Session.sorted(castList(v)) : String.valueOf(v));
                }
                s.t.add(line.toString());
            }
            s.check(snapshot.size() == n, "all " + n + " callbacks arrived (" + snapshot.size() + ")");
            s.check(inOrder, "callbacks arrive in request order");
        });
    }

    @SuppressWarnings("unchecked")
    private static List<String> castList(Object o) {
        return (List<String>) o;
    }
}
