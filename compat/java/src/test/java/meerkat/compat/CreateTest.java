package meerkat.compat;

import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/** create in every mode, create2's Stat, sequential naming, and create's error codes. */
class CreateTest extends CompatTest {

    @Test
    void createModes() {
        Differential.run("createModes", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "root", CreateMode.PERSISTENT);
            c.create(s.p("persistent"), "p", CreateMode.PERSISTENT);
            c.create(s.p("ephemeral"), "e", CreateMode.EPHEMERAL);
            String seq = c.create(s.p("seq-"), "s", CreateMode.PERSISTENT_SEQUENTIAL);
            String eseq = c.create(s.p("eseq-"), "es", CreateMode.EPHEMERAL_SEQUENTIAL);
            c.create(s.p("container"), "c", CreateMode.CONTAINER);
            c.create2(s.p("ttl"), "t", CreateMode.PERSISTENT_WITH_TTL, 60_000);
            Stat tseq = c.create2(s.p("ttlseq-"), "ts", CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, 60_000);
            c.create2(s.p("p2"), "x", CreateMode.PERSISTENT, -1);
            Stat e2 = c.create2(s.p("e2"), "y", CreateMode.EPHEMERAL, -1);
            c.create2(s.p("c2"), "z", CreateMode.CONTAINER, -1);
            c.create(s.p("nulldata"), null, CreateMode.PERSISTENT);
            c.create(s.p("empty"), "", CreateMode.PERSISTENT);

            // Stats of what was made: owner, versions, data length.
            for (String n : List.of("persistent", "ephemeral", "container", "ttl", "nulldata", "empty")) {
                c.getData(s.p(n));
            }
            List<String> kids = c.getChildren2(s.root(), null);

            // Known ZooKeeper behaviour: 10-digit suffix from the parent's cversion.
            s.check(seq != null && seq.equals(s.p("seq-") + String.format("%010d", 2)),
                    "sequential name is parent cversion as %010d (expected seq-0000000002, got " + seq + ")");
            s.check(eseq != null && eseq.matches(".*/eseq-\\d{10}"), "ephemeral sequential suffix is 10 digits: " + eseq);
            s.check(tseq != null && tseq.getEphemeralOwner() == 0, "TTL node has no session as owner");
            s.check(e2 != null && e2.getEphemeralOwner() == c.zk.getSessionId(), "ephemeralOwner is the session id");
            s.check(kids != null && kids.size() == 12, "12 children under the root");
        });
    }

    @Test
    void createErrors() {
        Differential.run("createErrors", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "", CreateMode.PERSISTENT);
            s.check(c.lastError == Code.NODEEXISTS, "create of an existing node gives NodeExists");
            c.create(s.p("missing/child"), "", CreateMode.PERSISTENT);
            s.check(c.lastError == Code.NONODE, "create under a missing parent gives NoNode");
            c.create(s.p("eph"), "", CreateMode.EPHEMERAL);
            c.create(s.p("eph/child"), "", CreateMode.PERSISTENT);
            s.check(c.lastError == Code.NOCHILDRENFOREPHEMERALS, "child of an ephemeral gives NoChildrenForEphemerals");
            c.create(s.p("eph/seq-"), "", CreateMode.EPHEMERAL_SEQUENTIAL);
            c.create(s.p("container"), "", CreateMode.CONTAINER);
            c.create(s.p("container"), "", CreateMode.CONTAINER);
            // Paths the Java client refuses before sending anything.
            c.create("no-slash", "", CreateMode.PERSISTENT);
            c.create(s.p("trailing/"), "", CreateMode.PERSISTENT);
            c.create(s.p("a//b"), "", CreateMode.PERSISTENT);
            c.create(s.p("dot/."), "", CreateMode.PERSISTENT);
            // Root and system nodes.
            c.create("/", "", CreateMode.PERSISTENT);
            c.create("/zookeeper", "", CreateMode.PERSISTENT);
            s.check(c.lastError == Code.NODEEXISTS, "/zookeeper exists");
            // Deletes that must fail.
            c.create(s.p("a/kid"), "", CreateMode.PERSISTENT);
            c.delete(s.p("a"), -1);
            s.check(c.lastError == Code.NOTEMPTY, "delete of a node with children gives NotEmpty");
            c.delete(s.p("a/kid"), 3);
            s.check(c.lastError == Code.BADVERSION, "delete with a wrong version gives BadVersion");
            c.delete(s.p("nothere"), -1);
            s.check(c.lastError == Code.NONODE, "delete of a missing node gives NoNode");
            c.delete(s.p("a/kid"), 0);
            c.delete(s.p("a"), 0);
            c.getChildren2(s.root(), null);
        });
    }

    /**
     * Sequential suffixes count the creates ever made under the parent. ZooKeeper
     * stores that count and reports cversion = 2 * creates - numChildren (creates
     * plus deletes), so after a delete the suffix is NOT the visible cversion.
     */
    @Test
    void sequentialNumbering() {
        Differential.run("sequentialNumbering", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "", CreateMode.PERSISTENT);
            c.create(s.p("b"), "", CreateMode.PERSISTENT);
            c.delete(s.p("a"), -1);
            Stat before = c.exists(s.root(), false);
            String n1 = c.create(s.p("job-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            String n2 = c.create(s.p("job-"), "", CreateMode.EPHEMERAL_SEQUENTIAL);
            String n3 = c.create(s.p("other-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            c.setData(s.root(), "data does not move cversion", -1);
            String n4 = c.create(s.p("job-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            c.delete(n4, -1);
            c.delete(n2, -1);
            Stat mid = c.exists(s.root(), false);
            String n5 = c.create(s.p("job-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            // A sequential name may be taken by a plain create first; the next one fails.
            c.create(s.p("job-0000000008"), "", CreateMode.PERSISTENT);
            c.create(s.p("job-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            c.create(s.p("job-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            // Sequential directly under a name ending in '/' means an empty prefix.
            c.create(s.p("d"), "", CreateMode.PERSISTENT);
            c.create(s.p("d/"), "", CreateMode.PERSISTENT_SEQUENTIAL);
            c.getChildren2(s.root(), null);

            s.check(before != null && before.getCversion() == 3 && before.getNumChildren() == 1,
                    "visible cversion counts 2 creates + 1 delete");
            s.check(s.p("job-0000000002").equals(n1), "after 2 creates and 1 delete the suffix is 2 (creates), got " + n1);
            s.check(s.p("job-0000000003").equals(n2), "next suffix 3, got " + n2);
            s.check(s.p("other-0000000004").equals(n3), "the counter is per parent, not per prefix: " + n3);
            s.check(s.p("job-0000000005").equals(n4), "setData of the parent does not count: " + n4);
            s.check(mid != null && mid.getCversion() == 2 * 6 - mid.getNumChildren(),
                    "cversion = 2 * creates - numChildren, got " + (mid == null ? null : mid.getCversion()));
            s.check(s.p("job-0000000006").equals(n5), "deletes do not advance the suffix: " + n5);
        });
    }
}
