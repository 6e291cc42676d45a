package meerkat.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
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
 * Read-only mode, the same scenario against a 3-server ZooKeeper 3.9.3 ensemble and a meerkat
 * one, both with `-Dreadonlymode.enabled=true` (ZooKeeper's command line; meerkat's
 * SERVER_JVMFLAGS) and `localSessionsEnabled=true` (ZooKeeper's read-only server takes new
 * sessions only then, as its own ReadOnlyModeTest sets). Two members are SIGKILLed; the one
 * left alone must serve ZooKeeper's Java client with canBeReadOnly=true: ConnectedReadOnly,
 * reads, NotReadOnly on writes, `isro` = `ro`, `srvr` in read-only mode, a client without
 * canBeReadOnly refused. With the two restarted it serves read-write (`isro` = `rw`) and the
 * client, disconnected, comes back read-write with a new session and writes. The two
 * transcripts must be equal; a few facts are checked on each.
 */
class ReadOnlyTest {
    private static final int SESSION_TIMEOUT_MS = 4000;
    private static final String CONFIG = "localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=true\n";
    private static final String JVM_FLAGS = "-Dreadonlymode.enabled=true";
    /** The member left alone: server.1. */
    private static final int SURVIVOR = 0;

    @Test
    void aMemberCutOffServesReadOnlyClientsThenReadWriteAgain() throws Exception {
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
        String name = flavor.name().toLowerCase();
        try (EnsembleFailoverTest.Ensemble ensemble = EnsembleFailoverTest.Ensemble.start(flavor, CONFIG, JVM_FLAGS)) {
            int port = ensemble.clientPorts.get(SURVIVOR);
            t.add("isro while serving: " + FourLetterWords.send(port, "isro"));
            byte[] v1 = "v1".getBytes(StandardCharsets.UTF_8);
            ZooKeeper setup = connect(ensemble.connectString(), false, new LinkedBlockingQueue<>());
            try {
                setup.create("/ro-data", v1, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                // An ephemeral on a local session: upgraded to a global session first.
                setup.create("/ro-eph", v1, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
                t.add("setup: created /ro-data and the ephemeral /ro-eph");
            } finally {
                setup.close();
            }

            for (int i = 0; i < ensemble.clientPorts.size(); i++) {
                if (i != SURVIVOR) {
                    ensemble.kill(i);
                }
            }
            Set<String> before = new TreeSet<>();
            long start = System.nanoTime();
            String answer = awaitIsro(port, "ro", before);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            System.out.println(flavor + ": read-only " + tookMs + " ms after the kills; isro before: " + before);
            t.add("isro after the kills, at last: " + answer);
            before.removeAll(Set.of("null", "rw", ""));
            assertTrue(before.isEmpty(), flavor + ": isro said only null or rw before ro: " + before);
            String srvr = FourLetterWords.send(port, "srvr");
            t.add("srvr read-only line: " + srvr.contains("READ-ONLY mode; serving only read-only clients"));
            t.add("srvr " + line(srvr, "Mode:"));

            BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
            ZooKeeper ro = connect("127.0.0.1:" + port, true, events);
            try {
                t.add("read-only client: " + stateEvents(events, 1));
                t.add("state " + ro.getState());
                long roSession = ro.getSessionId();
                t.add("session of server " + (roSession >>> 56));
                t.add("getData /ro-data -> " + new String(ro.getData("/ro-data", false, null), StandardCharsets.UTF_8));
                Stat stat = ro.exists("/ro-eph", false);
                t.add("exists /ro-eph -> " + (stat != null));
                t.add("getChildren / -> " + new TreeSet<>(ro.getChildren("/", false)));
                t.add("setData /ro-data -> " + outcome(() -> ro.setData("/ro-data", "v2".getBytes(StandardCharsets.UTF_8), -1)));
                t.add("create /ro-new -> " + outcome(() -> ro.create("/ro-new", v1, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT)));
                t.add("create ephemeral /ro-e -> " + outcome(() -> ro.create("/ro-e", v1, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL)));
                t.add("delete /ro-data -> " + outcome(() -> {
                    ro.delete("/ro-data", -1);
                    return "ok";
                }));
                t.add("multi -> " + outcome(() -> ro.multi(List.of(
                        org.apache.zookeeper.Op.setData("/ro-data", v1, -1)))));
                t.add("getData /ro-data after the writes -> "
                        + new String(ro.getData("/ro-data", false, null), StandardCharsets.UTF_8));

                BlockingQueue<WatchedEvent> strictEvents = new LinkedBlockingQueue<>();
                ZooKeeper strict = new ZooKeeper("127.0.0.1:" + port, SESSION_TIMEOUT_MS, strictEvents::add, false);
                try {
                    WatchedEvent e = strictEvents.poll(3, TimeUnit.SECONDS);
                    t.add("a client without canBeReadOnly: " + (e == null ? "no session" : "event " + e.getState()));
                } finally {
                    strict.close();
                }

                for (int i = 0; i < ensemble.clientPorts.size(); i++) {
                    if (i != SURVIVOR) {
                        ensemble.restart(i);
                    }
                }
                for (int i = 0; i < ensemble.clientPorts.size(); i++) {
                    ensemble.awaitServing(i);
                }
                t.add("isro with the quorum back, at last: " + awaitIsro(port, "rw", new TreeSet<>()));
                t.add("read-only client: " + stateEvents(events, 2));
                t.add("state " + ro.getState());
                t.add("same session as read-only: " + (ro.getSessionId() == roSession));
                t.add("setData /ro-data -> version " + ro.setData("/ro-data", "v3".getBytes(StandardCharsets.UTF_8), -1).getVersion());
                t.add("exists /ro-eph -> " + (ro.exists("/ro-eph", false) != null));
            } finally {
                ro.close();
            }
        }
        Path dir = Files.createDirectories(Paths.get("target", "transcripts"));
        Files.write(dir.resolve("readOnly." + name + ".txt"), t, StandardCharsets.UTF_8);
        return t;
    }

    private static ZooKeeper connect(String hosts, boolean canBeReadOnly, BlockingQueue<WatchedEvent> events)
            throws Exception {
        ZooKeeper zk = new ZooKeeper(hosts, SESSION_TIMEOUT_MS, e -> {
            if (e.getType() == Watcher.Event.EventType.None) {
                events.add(e);
            }
        }, canBeReadOnly);
        long deadline = System.currentTimeMillis() + 30_000;
        while (!zk.getState().isConnected()) {
            if (System.currentTimeMillis() > deadline) {
                zk.close();
                fail("no connection to " + hosts + " within 30 s");
            }
            ServerProcess.sleep(50);
        }
        return zk;
    }

    /** The next `n` session state events, as their names, waiting up to 30 s for each. */
    private static String stateEvents(BlockingQueue<WatchedEvent> events, int n) throws InterruptedException {
        List<String> states = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            WatchedEvent e = events.poll(30, TimeUnit.SECONDS);
            states.add(e == null ? "(none)" : e.getState().toString());
        }
        return String.join(", ", states);
    }

    /** Polls `isro` until it answers `word` (30 s at most); the other answers go to `seen`. */
    private static String awaitIsro(int port, String word, Set<String> seen) throws IOException {
        long deadline = System.currentTimeMillis() + 30_000;
        String answer = "";
        while (System.currentTimeMillis() < deadline) {
            answer = FourLetterWords.sendQuietly(port, "isro").trim();
            if (answer.equals(word)) {
                return answer;
            }
            seen.add(answer);
            ServerProcess.sleep(50);
        }
        return answer;
    }

    private static String line(String text, String prefix) {
        return text.lines().filter(l -> l.startsWith(prefix)).findFirst().orElse("(no " + prefix + ")");
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
