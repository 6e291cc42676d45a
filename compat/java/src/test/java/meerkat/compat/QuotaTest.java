package meerkat.compat;

import java.util.List;
import java.util.Map;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.Quotas;
import org.apache.zookeeper.StatsTrack;
import org.apache.zookeeper.cli.DelQuotaCommand;
import org.apache.zookeeper.cli.ListQuotaCommand;
import org.apache.zookeeper.cli.MalformedPathException;
import org.apache.zookeeper.cli.SetQuotaCommand;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Quotas, set and read with zkCli's own code ({@code SetQuotaCommand.createQuota},
 * {@code ListQuotaCommand.listQuota}, {@code DelQuotaCommand.delQuota}): the stats node the
 * server keeps under {@code /zookeeper/quota} after creates, deletes, setData, multi and
 * session close, its Stat, and with enforcement on (two pairs of their own: zoo.cfg's
 * {@code enforceQuota=true}, and {@code -Dzookeeper.enforceQuota=true} in SERVER_JVMFLAGS) the
 * QuotaExceeded answers for writes past a hard limit.
 */
class QuotaTest extends CompatTest {
    private static Servers.Pair enforcing;
    private static Servers.Pair enforcingByFlag;

    @BeforeAll
    static void start() {
        enforcing = Servers.Pair.start("quota", Map.of("enforceQuota", "true"));
        enforcingByFlag = Servers.Pair.start("quota-flag",
                Map.of(ServerProcess.SERVER_JVMFLAGS, "-Dzookeeper.enforceQuota=true"));
    }

    @AfterAll
    static void stop() {
        for (Servers.Pair p : new Servers.Pair[] {enforcing, enforcingByFlag}) {
            if (p != null) {
                p.close();
            }
        }
    }

    /** What zkCli's setquota builds: every limit -1 but the one given. */
    private static StatsTrack limit(char option, long value) {
        StatsTrack q = new StatsTrack();
        q.setCount(-1);
        q.setBytes(-1L);
        q.setCountHardLimit(-1);
        q.setByteHardLimit(-1L);
        switch (option) {
            case 'n': q.setCount(value); break;
            case 'b': q.setBytes(value); break;
            case 'N': q.setCountHardLimit(value); break;
            default: q.setByteHardLimit(value); break;
        }
        return q;
    }

    /** The flag delquota passes for -n/-b/-N/-B. */
    private static StatsTrack flag(char option) {
        StatsTrack q = new StatsTrack();
        switch (option) {
            case 'n': q.setCount(1); break;
            case 'b': q.setBytes(1); break;
            case 'N': q.setCountHardLimit(1); break;
            default: q.setByteHardLimit(1); break;
        }
        return q;
    }

    private interface QuotaCall {
        Object call() throws Exception;
    }

    private static void record(Scenario s, String what, QuotaCall call) {
        String result;
        try {
            Object r = call.call();
            result = String.valueOf(r);
        } catch (KeeperException e) {
            result = "ERR " + e.code();
        } catch (IllegalArgumentException | MalformedPathException e) {
            result = "refused: " + e.getMessage();
        } catch (Exception e) {
            result = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        s.t.add(what + " -> " + result);
    }

    private static void setQuota(Scenario s, Session c, String path, char option, long value) {
        record(s, "setquota -" + option + " " + value + " " + path,
                () -> SetQuotaCommand.createQuota(c.zk, path, limit(option, value)));
    }

    private static void listQuota(Scenario s, Session c, String path) {
        record(s, "listquota " + path, () -> ListQuotaCommand.listQuota(c.zk, path));
    }

    private static void delQuota(Scenario s, Session c, String path, Character option) {
        record(s, "delquota " + (option == null ? "" : "-" + option + " ") + path,
                () -> DelQuotaCommand.delQuota(c.zk, path, option == null ? null : flag(option)));
    }

    /** The stats node's data and Stat. */
    private static String stats(Scenario s, Session c, String path) {
        byte[] d = c.getData(Quotas.statPath(path));
        return d == null ? null : new String(d, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void statsFollowEveryChange() {
        Differential.run("quotaStats", s -> {
            Session c = s.connect("c");
            String a = s.p("a");
            c.create(s.root(), "r", CreateMode.PERSISTENT);
            c.create(a, "12345", CreateMode.PERSISTENT);
            c.create(a + "/b", null, CreateMode.PERSISTENT);
            c.create(s.p("ab"), "outside", CreateMode.PERSISTENT);
            setQuota(s, c, a, 'n', 10);
            // The stats node was created as count=0,bytes=0 and the server recounted it.
            s.check("count=2,bytes=5".equals(stats(s, c, a)), "stats recounted when the stats node is created");
            c.getData(Quotas.limitPath(a));
            c.getData(Quotas.quotaPath(s.root()));
            c.getChildren2(Quotas.quotaPath(a), null);
            listQuota(s, c, a);
            c.create(a + "/c", "xyz", CreateMode.PERSISTENT);
            stats(s, c, a);
            c.setData(a, "1", -1);
            stats(s, c, a);
            c.setData(a + "/b", "", -1);
            stats(s, c, a);
            c.delete(a + "/b", -1);
            stats(s, c, a);
            c.create(a + "/seq-", "s", CreateMode.PERSISTENT_SEQUENTIAL);
            c.create(a + "/box", "", CreateMode.CONTAINER);
            c.create2(a + "/ttl", "tt", CreateMode.PERSISTENT_WITH_TTL, 60_000);
            stats(s, c, a);
            // Outside the quota: a sibling whose name starts alike, the parent.
            c.setData(s.p("ab"), "longer and longer", -1);
            c.create(s.p("ab/x"), "x", CreateMode.PERSISTENT);
            c.setData(s.root(), "rr", -1);
            stats(s, c, a);
            c.multi("[create a/m, setData a/c, delete a/m]", List.of(
                    Op.create(a + "/m", Session.bytes("mm"), Session.OPEN, CreateMode.PERSISTENT),
                    Op.setData(a + "/c", Session.bytes("abcdefgh"), -1),
                    Op.delete(a + "/m", -1)));
            stats(s, c, a);
            c.multi("[create a/n, delete a/missing] fails", List.of(
                    Op.create(a + "/n", Session.bytes("nn"), Session.OPEN, CreateMode.PERSISTENT),
                    Op.delete(a + "/missing", -1)));
            stats(s, c, a);
            // A session's ephemerals leave the count when it closes.
            Session e = s.connect("e");
            e.create(a + "/eph", "ephemeral", CreateMode.EPHEMERAL);
            stats(s, c, a);
            e.close();
            stats(s, c, a);
            // Without enforceQuota a hard limit is only recorded.
            setQuota(s, c, a, 'N', 2);
            c.create(a + "/over", "", CreateMode.PERSISTENT);
            s.check(c.lastError == null, "no enforcement without enforceQuota");
            listQuota(s, c, a);
            // zkCli's checks: no quota inside or above another, none on a missing node.
            setQuota(s, c, a + "/c", 'n', 1);
            setQuota(s, c, s.root(), 'n', 1);
            setQuota(s, c, s.p("missing"), 'n', 1);
            setQuota(s, c, "/zookeeper/quota/x", 'n', 1);
            delQuota(s, c, a, 'N');
            c.getData(Quotas.limitPath(a));
            delQuota(s, c, s.p("ab"), null);
            delQuota(s, c, a, null);
            c.exists(Quotas.quotaPath(s.root()), false);
            listQuota(s, c, a);
            // After the quota is gone nothing more is counted (and nothing fails).
            c.create(a + "/after", "after", CreateMode.PERSISTENT);
            // A new quota recounts from the tree.
            setQuota(s, c, a, 'b', 100);
            s.check(stats(s, c, a) != null, "a new quota has a stats node");
            listQuota(s, c, a);
            delQuota(s, c, a, null);
        });
    }

    @Test
    void hardLimitsAreEnforced() {
        Differential.run(enforcing, "quotaEnforced", QuotaTest::enforced);
    }

    @Test
    void hardLimitsAreEnforcedWithTheJvmFlag() {
        Differential.run(enforcingByFlag, "quotaEnforcedByFlag", QuotaTest::enforced);
    }

    private static void enforced(Scenario s) throws Exception {
        Session c = s.connect("c");
        String a = s.p("a");
        String b = s.p("b");
        c.create(s.root(), "", CreateMode.PERSISTENT);
        c.create(a, "", CreateMode.PERSISTENT);
        c.create(b, "", CreateMode.PERSISTENT);
        setQuota(s, c, a, 'N', 3);
        c.create(a + "/1", "", CreateMode.PERSISTENT);
        c.create(a + "/2", "", CreateMode.PERSISTENT);
        c.create(a + "/3", "", CreateMode.PERSISTENT);
        s.check(c.lastError == Code.QUOTAEXCEEDED, "a create past countHardLimit gives QuotaExceeded");
        c.create(a + "/2/deeper", "", CreateMode.EPHEMERAL);
        s.check(c.lastError == Code.QUOTAEXCEEDED, "also deeper below the quota");
        stats(s, c, a);
        // Bytes: setData is checked on the change of length.
        setQuota(s, c, a, 'B', 10);
        listQuota(s, c, a);
        c.setData(a, "0123456789", -1);
        c.setData(a + "/1", "x", -1);
        s.check(c.lastError == Code.QUOTAEXCEEDED, "a setData past byteHardLimit gives QuotaExceeded");
        c.setData(a, "012345678", -1);
        c.setData(a + "/1", "x", -1);
        s.check(c.lastError == null, "room freed by a shorter value");
        c.setData(a + "/1", "x", 7);
        stats(s, c, a);
        // Inside a multi the op past the limit fails, and with it the whole multi.
        c.multi("[setData b, create a/3]", List.of(
                Op.setData(b, Session.bytes("bb"), -1),
                Op.create(a + "/3", Session.bytes(""), Session.OPEN, CreateMode.PERSISTENT)));
        c.getData(b);
        stats(s, c, a);
        // Soft limits only warn.
        setQuota(s, c, b, 'n', 1);
        setQuota(s, c, b, 'b', 1);
        c.create(b + "/x", "soft", CreateMode.PERSISTENT);
        s.check(c.lastError == null, "soft limits are not enforced");
        stats(s, c, b);
        // Deleting frees the room; removing a hard limit lifts it.
        c.delete(a + "/2", -1);
        c.create(a + "/3", "", CreateMode.PERSISTENT);
        s.check(c.lastError == null, "a delete makes room");
        c.create(a + "/4", "", CreateMode.PERSISTENT);
        delQuota(s, c, a, 'N');
        c.create(a + "/4", "", CreateMode.PERSISTENT);
        s.check(c.lastError == null, "delquota -N lifts the count limit");
        stats(s, c, a);
        delQuota(s, c, a, null);
        delQuota(s, c, b, null);
        c.setData(a + "/1", "no longer limited", -1);
        s.check(c.lastError == null, "no quota, no limit");
    }
}
