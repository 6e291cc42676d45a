package meerkat.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A rolling restart under load: each member in turn (the leader last) is stopped with SIGTERM,
 * started again and waited for, while Apache ZooKeeper's Java client, one per member and pinned
 * to it, writes in a loop. On meerkat the clients of the members not being restarted at that
 * moment must not notice: no Disconnected event and no failed operation while another member
 * restarts (docs/ensemble.md, "Hold, don't close"). The same run against ZooKeeper 3.9.3 is the
 * reference, printed beside it. Write gaps are printed, not asserted (speed is the bench's).
 */
class RollingRestartTest {
    private static final String HOLD = "failoverHoldMs=2000\n";

    @Test
    void clientsOfTheOtherMembersDoNotNoticeARollingRestart() throws Exception {
        Outcome reference = run(EnsembleFailoverTest.Flavor.ZOOKEEPER);
        System.out.println("rolling restart, zookeeper: " + reference);
        if (Servers.zookeeperOnly()) {
            return;
        }
        Outcome meerkat = run(EnsembleFailoverTest.Flavor.MEERKAT);
        System.out.println("rolling restart, meerkat: " + meerkat);
        assertEquals(0, meerkat.disconnects, "Disconnected events on clients of members not restarting: " + meerkat);
        assertEquals(0, meerkat.failures, "failed operations on clients of members not restarting: " + meerkat);
        assertEquals(0, meerkat.sessionsLost, "sessions lost: " + meerkat);
        assertTrue(meerkat.restarts == 3, "every member restarted once: " + meerkat);
    }

    /** What the clients of the members that were not restarting saw, over every restart. */
    static final class Outcome {
        int restarts;
        int disconnects;
        int failures;
        int sessionsLost;
        long longestGapMs;

        @Override
        public String toString() {
            return "restarts=" + restarts + " disconnects=" + disconnects + " failedOps=" + failures
                    + " sessionsLost=" + sessionsLost + " longestWriteGapMs=" + longestGapMs;
        }
    }

    private static Outcome run(EnsembleFailoverTest.Flavor flavor) throws Exception {
        Outcome outcome = new Outcome();
        try (EnsembleFailoverTest.Ensemble ensemble = EnsembleFailoverTest.Ensemble.start(flavor, HOLD)) {
            int members = ensemble.clientPorts.size();
            List<Integer> order = new ArrayList<>();
            int leader = -1;
            for (int i = 0; i < members; i++) {
                if (FourLetterWords.send(ensemble.clientPorts.get(i), "srvr").contains("Mode: leader")) {
                    leader = i;
                } else {
                    order.add(i);
                }
            }
            assertTrue(leader >= 0, flavor + ": a leader");
            order.add(leader);
            List<LeaderFailoverTest.Writer> writers = new ArrayList<>();
            List<Long> sessions = new ArrayList<>();
            try {
                for (int i = 0; i < members; i++) {
                    LeaderFailoverTest.Writer w = new LeaderFailoverTest.Writer(ensemble.clientPorts.get(i),
                            "/rolling-" + flavor.name().toLowerCase() + "-" + i);
                    writers.add(w);
                    sessions.add(w.zk.getSessionId());
                    w.thread.start();
                }
                ServerProcess.sleep(1000);
                for (int restarting : order) {
                    long from = System.nanoTime();
                    ensemble.stop(restarting);
                    ensemble.restart(restarting);
                    ensemble.awaitServing(restarting);
                    long serving = System.nanoTime();
                    // Its own client reconnects to it (after a back-off of up to a second); the
                    // next step starts only once it writes again, so that its reconnection is
                    // never counted as a gap of the next step's other members.
                    LeaderFailoverTest.Writer own = writers.get(restarting);
                    long waitUntil = serving + TimeUnit.SECONDS.toNanos(10);
                    while (!hasSuccessAfter(own.successTimes, serving) && System.nanoTime() < waitUntil) {
                        ServerProcess.sleep(10);
                    }
                    ServerProcess.sleep(300);
                    long to = System.nanoTime();
                    outcome.restarts++;
                    long stepGapMs = 0;
                    for (int i = 0; i < members; i++) {
                        if (i == restarting) {
                            continue;
                        }
                        LeaderFailoverTest.Writer w = writers.get(i);
                        outcome.disconnects += countBetween(w.disconnectTimes, from, to);
                        outcome.failures += countBetween(w.failureTimes, from, to);
                        stepGapMs = Math.max(stepGapMs, longestGapMs(w.successTimes, from, to));
                    }
                    outcome.longestGapMs = Math.max(outcome.longestGapMs, stepGapMs);
                    System.out.println("rolling restart, " + flavor.name().toLowerCase() + ": member " + restarting
                            + (restarting == leader ? " (leader)" : "") + " longest write gap of the others "
                            + stepGapMs + " ms");
                }
            } finally {
                for (LeaderFailoverTest.Writer w : writers) {
                    w.stop.set(true);
                }
                for (LeaderFailoverTest.Writer w : writers) {
                    w.thread.join(10_000);
                }
            }
            for (int i = 0; i < writers.size(); i++) {
                LeaderFailoverTest.Writer w = writers.get(i);
                if (w.zk.getSessionId() != sessions.get(i) || !w.zk.getState().isAlive()) {
                    outcome.sessionsLost++;
                }
                w.zk.close();
            }
        }
        return outcome;
    }

    private static boolean hasSuccessAfter(List<Long> times, long from) {
        synchronized (times) {
            return times.stream().anyMatch(t -> t > from);
        }
    }

    private static int countBetween(List<Long> times, long from, long to) {
        synchronized (times) {
            return (int) times.stream().filter(t -> t >= from && t <= to).count();
        }
    }

    /** The longest time without a successful write inside [from, to]. */
    private static long longestGapMs(List<Long> successes, long from, long to) {
        long previous = from;
        long longest = 0;
        synchronized (successes) {
            for (long t : successes) {
                if (t < from) {
                    continue;
                }
                if (t > to) {
                    break;
                }
                longest = Math.max(longest, t - previous);
                previous = t;
            }
        }
        return TimeUnit.NANOSECONDS.toMillis(Math.max(longest, to - previous));
    }
}
