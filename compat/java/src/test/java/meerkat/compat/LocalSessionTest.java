package meerkat.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/**
 * Local sessions (`localSessionsEnabled=true`), the same scenario against 3-server ZooKeeper
 * 3.9.3 and meerkat ensembles: a session made on server 1 writes persistent znodes; without
 * `localSessionsUpgradingEnabled` its ephemeral fails with EphemeralOnLocalSession and the
 * session cannot be taken to server 2 (expired there), nor back once closed; with upgrading
 * the ephemeral is created (the session became global) and the session moves to server 2 with
 * its ephemeral. The two transcripts must be equal.
 */
class LocalSessionTest {
    private static final int SESSION_TIMEOUT_MS = 4000;

    @Test
    void localSessionsWithAndWithoutUpgrading() throws Exception {
        List<String> zookeeper = run(EnsembleFailoverTest.Flavor.ZOOKEEPER);
        if (Servers.zookeeperOnly()) {
            return;
        }
        List<String> meerkat = run(EnsembleFailoverTest.Flavor.MEERKAT);
        assertEquals(zookeeper, meerkat,
                "transcripts differ (- zookeeper, + meerkat):\n" + Diff.unified(zookeeper, meerkat));
    }

    private static List<String> run(EnsembleFailoverTest.Flavor flavor) throws Exception {
        List<String> t = new ArrayList<>();
        byte[] data = "d".getBytes(StandardCharsets.UTF_8);
        try (EnsembleFailoverTest.Ensemble ensemble =
                EnsembleFailoverTest.Ensemble.start(flavor, "localSessionsEnabled=true\n")) {
            String one = "127.0.0.1:" + ensemble.clientPorts.get(0);
            String two = "127.0.0.1:" + ensemble.clientPorts.get(1);
            BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
            ZooKeeper local = connect(one, 0, null, events);
            long session = local.getSessionId();
            byte[] password = local.getSessionPasswd();
            t.add("without upgrading: session of server " + (session >>> 56));
            t.add("create /ls-p -> " + outcome(() -> local.create("/ls-p", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
            t.add("create ephemeral /ls-e -> " + outcome(() -> local.create("/ls-e", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)));
            t.add("multi with an ephemeral -> " + outcome(() -> local.multi(List.of(
                    org.apache.zookeeper.Op.create("/ls-m", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)))));
            t.add("create sequential /ls-s -> " + outcome(() -> local.create("/ls-s", data, ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    CreateMode.PERSISTENT_SEQUENTIAL)));
            t.add("exists /ls-e -> " + (local.exists("/ls-e", false) != null));
            t.add("the session on server 2: " + reattach(two, session, password));
            t.add("the first client still works: getData /ls-p -> "
                    + new String(local.getData("/ls-p", false, null), StandardCharsets.UTF_8));
            local.close();
            t.add("closed, then again on server 1: " + reattach(one, session, password));
        }
        try (EnsembleFailoverTest.Ensemble ensemble = EnsembleFailoverTest.Ensemble.start(flavor,
                "localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=true\n")) {
            String one = "127.0.0.1:" + ensemble.clientPorts.get(0);
            String two = "127.0.0.1:" + ensemble.clientPorts.get(1);
            BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
            ZooKeeper local = connect(one, 0, null, events);
            long session = local.getSessionId();
            byte[] password = local.getSessionPasswd();
            t.add("with upgrading: session of server " + (session >>> 56));
            t.add("create ephemeral /ls-e -> " + outcome(() -> local.create("/ls-e", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)));
            Stat stat = local.exists("/ls-e", false);
            t.add("its owner is the session: " + (stat != null && stat.getEphemeralOwner() == session));
            t.add("create ephemeral /ls-e2 -> " + outcome(() -> local.create("/ls-e2", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)));
            BlockingQueue<WatchedEvent> movedEvents = new LinkedBlockingQueue<>();
            ZooKeeper moved = connect(two, session, password, movedEvents);
            try {
                t.add("the session on server 2: " + moved.getState());
                Stat there = moved.exists("/ls-e", false);
                t.add("its ephemeral seen there, same owner: " + (there != null && there.getEphemeralOwner() == session));
            } finally {
                moved.close();
            }
            ZooKeeper check = connect(two, 0, null, new LinkedBlockingQueue<>());
            try {
                t.add("after its close the ephemerals are gone: " + (check.exists("/ls-e", false) == null
                        && check.exists("/ls-e2", false) == null));
            } finally {
                check.close();
            }
            local.close();
        }
        Path dir = Files.createDirectories(Paths.get("target", "transcripts"));
        Files.write(dir.resolve("localSessions." + flavor.name().toLowerCase() + ".txt"), t, StandardCharsets.UTF_8);
        return t;
    }

    private static ZooKeeper connect(String host, long session, byte[] password, BlockingQueue<WatchedEvent> events)
            throws Exception {
        Watcher watcher = e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                events.add(e);
            }
        };
        ZooKeeper zk = session == 0
                ? new ZooKeeper(host, SESSION_TIMEOUT_MS, watcher)
                : new ZooKeeper(host, SESSION_TIMEOUT_MS, watcher, session, password);
        long deadline = System.currentTimeMillis() + 30_000;
        while (!zk.getState().isConnected()) {
            if (System.currentTimeMillis() > deadline) {
                zk.close();
                fail("no connection to " + host + " within 30 s");
            }
            ServerProcess.sleep(50);
        }
        return zk;
    }

    /** Connects with an existing session; the first state event says what became of it. */
    private static String reattach(String host, long session, byte[] password) throws Exception {
        BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(host, SESSION_TIMEOUT_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                events.add(e);
            }
        }, session, password);
        try {
            WatchedEvent e = events.poll(10, TimeUnit.SECONDS);
            return e == null ? "(no event)" : e.getState().toString();
        } finally {
            zk.close();
        }
    }

    private interface Call {
        Object call() throws Exception;
    }

    private static String outcome(Call call) {
        try {
            call.call();
            return "ok";
        } catch (KeeperException e) {
            return "ERR " + e.code();
        } catch (Exception e) {
            return "client " + e.getClass().getSimpleName();
        }
    }
}
