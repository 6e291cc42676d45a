package meerkat.compat;

import java.util.List;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/** Session life: timeout negotiation, close, real expiry, re-attach with right and wrong passwords. */
class SessionTest extends CompatTest {

    /** Requested timeouts are clamped to [2, 20] x tickTime = [400, 4000] ms. */
    @Test
    void timeoutNegotiation() {
        Differential.run("timeoutNegotiation", s -> {
            Session lo = s.connect("low", 100);
            Session mid = s.connect("mid", 1234);
            Session hi = s.connect("high", 100_000);
            s.check(lo.zk.getSessionTimeout() == 400, "100 ms is raised to minSessionTimeout 400");
            s.check(mid.zk.getSessionTimeout() == 1234, "1234 ms is kept");
            s.check(hi.zk.getSessionTimeout() == 4000, "100000 ms is lowered to maxSessionTimeout 4000");
            s.check(lo.zk.getSessionId() != mid.zk.getSessionId(), "distinct session ids");
            // Close at once: a 400 ms session may miss a ping on a busy machine.
            lo.closeRecorded();
            mid.closeRecorded();
            hi.closeRecorded();
        });
    }

    /** Closing a session deletes its ephemerals at once and fires other sessions' watches. */
    @Test
    void closeRemovesEphemerals() {
        Differential.run("closeRemovesEphemerals", s -> {
            Session owner = s.connect("owner");
            Session other = s.connect("other");
            owner.create(s.root(), "", CreateMode.PERSISTENT);
            owner.create(s.p("p"), "", CreateMode.PERSISTENT);
            owner.create(s.p("e"), "", CreateMode.EPHEMERAL);
            owner.create(s.p("p/e1"), "", CreateMode.EPHEMERAL);
            owner.create(s.p("p/e2-"), "", CreateMode.EPHEMERAL_SEQUENTIAL);
            other.getData(s.p("e"), other.watcher("data-e"));
            other.exists(s.p("e"), other.watcher("exists-e"));
            other.getChildren(s.p("p"), other.watcher("children-p"));
            other.getChildren(s.root(), other.watcher("children-root"));
            owner.closeRecorded();
            // One closeSession transaction: all events carry its zxid. The order of
            // the deletes is not defined (ZooKeeper walks a hash set), so sort.
            List<String> ev = other.eventsUnordered(4, 5000);
            other.exists(s.p("e"), false);
            other.getChildren2(s.p("p"), null);
            other.getChildren2(s.root(), null);
            owner.exists(s.root(), false);
            s.check(ev.size() == 4 && ev.stream().noneMatch(l -> l.contains("UNEXPECTED")), "4 watch events on close");
        });
    }

    /**
     * Real expiry: the owner talks through a proxy that is frozen, so the server
     * stops hearing its pings. Another session sees the ephemerals go; after the
     * thaw the owner's client learns it has expired.
     */
    @Test
    void expiry() {
        Differential.run("expiry", s -> {
            Session other = s.connect("other");
            other.create(s.root(), "", CreateMode.PERSISTENT);
            TcpProxy proxy = s.proxy();
            Session owner = s.connect("owner", proxy.connectString(), 1000);
            long sid = owner.zk.getSessionId();
            byte[] pw = owner.zk.getSessionPasswd();
            owner.create(s.p("eph"), "", CreateMode.EPHEMERAL);
            owner.getData(s.root(), owner.watcher("owner-data"));
            other.exists(s.p("eph"), other.watcher("gone"));
            other.getChildren(s.root(), other.watcher("kids"));

            proxy.freeze();
            s.note("proxy frozen");
            long frozenAt = System.currentTimeMillis();
            List<String> ev = other.events(2, 10_000);
            long tookMs = System.currentTimeMillis() - frozenAt;
            other.exists(s.p("eph"), false);
            other.getChildren2(s.root(), null);

            proxy.thaw();
            s.note("proxy thawed");
            // Disconnected (while frozen), then Expired, each to the default and the data watcher.
            owner.events(4, 15_000);
            owner.exists(s.root(), false);
            s.check(owner.lastError == Code.SESSIONEXPIRED, "calls on an expired session give SessionExpired");

            // The expired id cannot be resumed, even with the right password.
            Session again = s.attach("again", sid, pw, 1000);
            again.events(1, 10_000);

            s.check(ev.size() == 2 && tookMs >= 500 && tookMs < 8000,
                    "the ephemeral goes about one session timeout after the pings stop (took " + tookMs + " ms)");
        });
    }

    /** Re-attaching to a live session: right password resumes it (ephemerals kept), wrong one is refused. */
    @Test
    void reattach() {
        Differential.run("reattach", s -> {
            Session other = s.connect("other");
            other.create(s.root(), "", CreateMode.PERSISTENT);
            TcpProxy proxy = s.proxy();
            Session first = s.connect("first", proxy.connectString(), Scenario.SESSION_MS);
            long sid = first.zk.getSessionId();
            byte[] pw = first.zk.getSessionPasswd();
            first.create(s.p("eph"), "", CreateMode.EPHEMERAL);

            byte[] wrong = pw.clone();
            wrong[0] ^= 0x5a;
            Session bad = s.attach("bad", sid, wrong, Scenario.SESSION_MS);
            bad.events(1);
            bad.exists(s.root(), false);
            first.exists(s.p("eph"), false);

            // Cut the first client off (the session lives on) and resume it directly.
            proxy.close();
            Session second = s.attach("second", sid, pw, Scenario.SESSION_MS);
            second.events(1);
            s.check(second.zk.getSessionId() == sid, "resumed session keeps its id");
            second.getEphemerals(null);
            Stat st = second.exists(s.p("eph"), false);
            s.check(st != null && st.getEphemeralOwner() == sid, "the ephemeral survived the move");
            second.create(s.p("eph2"), "", CreateMode.EPHEMERAL);
            second.closeRecorded();
            first.close();
            other.getChildren2(s.root(), null);

            // An id the server never issued.
            Session unknown = s.attach("unknown", 0x7777_0000_0000_0001L, new byte[16], Scenario.SESSION_MS);
            unknown.events(1);
        });
    }

    /**
     * After a dropped connection the client re-registers its watches (setWatches2
     * with the last zxid it saw); changes made while it was away fire at once.
     */
    @Test
    void watchesSurviveReconnect() {
        Differential.run("watchesSurviveReconnect", s -> {
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("data"), "0", CreateMode.PERSISTENT);
            m.create(s.p("kids"), "", CreateMode.PERSISTENT);
            m.create(s.p("same"), "", CreateMode.PERSISTENT);
            m.create(s.p("gone"), "", CreateMode.PERSISTENT);
            TcpProxy proxy = s.proxy();
            Session w = s.connect("watcher", proxy.connectString(), Scenario.SESSION_MS);
            long sid = w.zk.getSessionId();
            w.getData(s.p("data"), w.watcher("data"));
            w.exists(s.p("later"), w.watcher("exists"));
            w.getChildren(s.p("kids"), w.watcher("kids"));
            w.getData(s.p("same"), w.watcher("same"));
            w.getData(s.p("gone"), w.watcher("gone"));
            w.addWatch(s.p("pers"), w.watcher("pers"), AddWatchMode.PERSISTENT);
            w.addWatch(s.p("rec"), w.watcher("rec"), AddWatchMode.PERSISTENT_RECURSIVE);

            proxy.freeze();
            proxy.dropConnections();
            s.note("connection dropped, reconnects refused");
            // State changes reach every watcher of the session: 7 + the default one.
            w.events(8, 5000);
            m.setData(s.p("data"), "1", -1);
            m.create(s.p("later"), "", CreateMode.PERSISTENT);
            m.create(s.p("kids/k"), "", CreateMode.PERSISTENT);
            m.delete(s.p("gone"), -1);
            m.create(s.p("pers"), "", CreateMode.PERSISTENT);
            m.create(s.p("rec"), "", CreateMode.PERSISTENT);
            proxy.thaw();
            s.note("reconnects allowed");
            // SyncConnected to all 8, then the one-shot watches whose nodes changed (not
            // "same"), fired by the server while it re-registers them. Persistent watches
            // are re-registered silently: no event for what they missed.
            w.events(12, 10_000);
            s.check(w.zk.getSessionId() == sid, "same session after the reconnect");

            // The persistent watches were re-registered too.
            m.setData(s.p("pers"), "p", -1);
            m.create(s.p("rec/x"), "", CreateMode.PERSISTENT);
            m.setData(s.p("same"), "s", -1);
            w.events(3);
        });
    }

    /**
     * Without persistent watches the client re-registers with the older
     * setWatches (opcode 101) instead of setWatches2.
     */
    @Test
    void oneShotWatchesSurviveReconnect() {
        Differential.run("oneShotWatchesSurviveReconnect", s -> {
            Session m = s.connect("mutator");
            m.create(s.root(), "", CreateMode.PERSISTENT);
            m.create(s.p("data"), "0", CreateMode.PERSISTENT);
            m.create(s.p("kids"), "", CreateMode.PERSISTENT);
            TcpProxy proxy = s.proxy();
            Session w = s.connect("watcher", proxy.connectString(), Scenario.SESSION_MS);
            w.getData(s.p("data"), w.watcher("data"));
            w.exists(s.p("later"), w.watcher("exists"));
            w.getChildren(s.p("kids"), w.watcher("kids"));
            proxy.freeze();
            proxy.dropConnections();
            w.events(4, 5000);
            m.setData(s.p("data"), "1", -1);
            m.create(s.p("kids/k"), "", CreateMode.PERSISTENT);
            proxy.thaw();
            // SyncConnected x4, data and kids fire; the exists watch stays armed.
            w.events(6, 10_000);
            m.create(s.p("later"), "", CreateMode.PERSISTENT);
            w.events(1);
        });
    }
}
