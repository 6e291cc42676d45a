package meerkat.compat;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/**
 * Containers vanish once their last child goes; TTL nodes vanish after their TTL
 * without children. Both servers sweep every 500 ms (znode.container.checkIntervalMs),
 * so every wait here is a few seconds at most.
 */
class ContainerTtlTest extends CompatTest {
    private static final long SWEEP_WAIT_MS = 10_000;
    /** Long enough for several sweeps. */
    private static final long SEVERAL_SWEEPS_MS = 4 * ServerProcess.CONTAINER_CHECK_MS;

    @Test
    void containers() {
        Differential.run("containers", s -> {
            Session c = s.connect("c1");
            Session w = s.connect("watcher");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("box"), "", CreateMode.CONTAINER);
            c.create(s.p("never-used"), "", CreateMode.CONTAINER);
            c.create(s.p("kept"), "", CreateMode.CONTAINER);
            c.create(s.p("kept/kid"), "", CreateMode.PERSISTENT);
            c.create(s.p("box/a"), "", CreateMode.PERSISTENT);
            c.create(s.p("box/b"), "", CreateMode.EPHEMERAL);
            c.delete(s.p("box/a"), -1);
            ServerProcess.sleep(SEVERAL_SWEEPS_MS);
            Stat still = c.exists(s.p("box"), false);

            w.exists(s.p("box"), w.watcher("box-gone"));
            w.getChildren(s.root(), w.watcher("root-kids"));
            c.delete(s.p("box/b"), -1);
            long t0 = System.currentTimeMillis();
            w.events(2, SWEEP_WAIT_MS);
            long took = System.currentTimeMillis() - t0;
            c.exists(s.p("box"), false);

            // A container that never had a child, and one that still has one, stay.
            ServerProcess.sleep(SEVERAL_SWEEPS_MS);
            c.exists(s.p("never-used"), false);
            c.exists(s.p("kept"), false);
            c.getChildren2(s.root(), null);

            s.check(still != null, "a container with a child left is kept");
            s.check(took < SWEEP_WAIT_MS, "an emptied container is deleted within a few sweeps (" + took + " ms)");
        });
    }

    @Test
    void ttlNodes() {
        Differential.run("ttlNodes", s -> {
            Session c = s.connect("c1");
            Session w = s.connect("watcher");
            c.create(s.root(), "", CreateMode.PERSISTENT);

            // A childless TTL node goes after its TTL.
            w.exists(s.p("short"), w.watcher("short"));
            c.create2(s.p("short"), "", CreateMode.PERSISTENT_WITH_TTL, 300);
            w.events(1);
            long t0 = System.currentTimeMillis();
            w.exists(s.p("short"), w.watcher("short-gone"));
            w.events(1, SWEEP_WAIT_MS);
            long took = System.currentTimeMillis() - t0;
            c.exists(s.p("short"), false);

            // Sequential TTL nodes too.
            String seq = c.create2(s.p("seq-"), "", CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, 300) == null
                    ? null : s.p("seq-0000000001");
            if (seq != null) {
                w.exists(seq, w.watcher("seq-gone"));
                w.events(1, SWEEP_WAIT_MS);
            }

            // A TTL node with a child stays past its TTL; once the child goes, it goes too.
            c.create2(s.p("parent"), "", CreateMode.PERSISTENT_WITH_TTL, 300);
            c.create(s.p("parent/kid"), "", CreateMode.PERSISTENT);
            ServerProcess.sleep(SEVERAL_SWEEPS_MS);
            Stat kept = c.exists(s.p("parent"), false);
            w.exists(s.p("parent"), w.watcher("parent-gone"));
            c.delete(s.p("parent/kid"), -1);
            w.events(1, SWEEP_WAIT_MS);

            // A long TTL does not go within the test.
            c.create2(s.p("long"), "", CreateMode.PERSISTENT_WITH_TTL, 600_000);
            ServerProcess.sleep(SEVERAL_SWEEPS_MS);
            c.exists(s.p("long"), false);

            // TTL bounds: 0 and negative are refused by the client; the server's upper bound.
            c.create2(s.p("zero"), "", CreateMode.PERSISTENT_WITH_TTL, 0);
            c.create2(s.p("huge"), "", CreateMode.PERSISTENT_WITH_TTL, 0xFF_FFFF_FFFFL + 1);
            c.create2(s.p("notttl"), "", CreateMode.PERSISTENT, 1000);
            c.getChildren2(s.root(), null);

            s.check(took >= 250 && took < SWEEP_WAIT_MS, "TTL node goes after its TTL and within a few sweeps (" + took + " ms)");
            s.check(kept != null, "a TTL node with a child is kept");
        });
    }
}
