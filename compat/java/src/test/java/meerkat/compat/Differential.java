package meerkat.compat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs one scenario against ZooKeeper, then against meerkat, and fails unless
 * both transcripts are identical and every behaviour check held on both.
 * Transcripts are also written to target/transcripts/ for reading.
 */
final class Differential {
    /** Upper bound for one scenario on one server. */
    private static final long SCENARIO_TIMEOUT_S = 90;

    @FunctionalInterface
    interface Body {
        void run(Scenario s) throws Exception;
    }

    private Differential() {
    }

    static void run(String name, Body body) {
        run(Servers.shared(), name, body);
    }

    static void run(Servers.Pair pair, String name, Body body) {
        List<String> problems = new ArrayList<>();

        Outcome zk = execute(name, pair.zookeeper, body);
        save(name, "zookeeper", zk.lines);
        if (zk.abort != null) {
            throw new AssertionError("scenario " + name + " aborted on Apache ZooKeeper (a bug in the suite):\n"
                    + String.join("\n", zk.lines) + "\n" + zk.abort);
        }
        if (!zk.failedChecks.isEmpty()) {
            throw new AssertionError("scenario " + name + ": Apache ZooKeeper fails the suite's own checks"
                    + " (a bug in the suite): " + zk.failedChecks + "\n" + String.join("\n", zk.lines));
        }
        if (Servers.zookeeperOnly()) {
            return;
        }

        ServerProcess mk = pair.meerkat();
        Outcome m = execute(name, mk, body);
        save(name, "meerkat", m.lines);
        if (!m.failedChecks.isEmpty()) {
            problems.add("meerkat fails checks of known ZooKeeper behaviour:\n  " + String.join("\n  ", m.failedChecks));
        }
        if (!zk.lines.equals(m.lines)) {
            problems.add("transcripts differ (- zookeeper, + meerkat):\n" + Diff.unified(zk.lines, m.lines));
        }
        if (m.abort != null) {
            problems.add("scenario aborted on meerkat: " + m.abort);
        }
        if (!mk.isAlive()) {
            problems.add("meerkat " + mk.exitDescription() + " during this scenario; log tail:\n" + mk.logTail());
        }
        if (!problems.isEmpty()) {
            throw new AssertionError("scenario " + name + " on meerkat:\n" + String.join("\n\n", problems));
        }
    }

    static final class Outcome {
        List<String> lines;
        List<String> failedChecks;
        String abort;
    }

    /** Runs the body in its own thread so a hung server cannot hang the suite. */
    private static Outcome execute(String name, ServerProcess server, Body body) {
        Scenario s = new Scenario(name, server);
        Outcome o = new Outcome();
        ExecutorService ex = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "scenario-" + name + "-" + server.name);
            t.setDaemon(true);
            return t;
        });
        try {
            Future<?> f = ex.submit(() -> {
                body.run(s);
                s.recordLeftoverEvents();
                return null;
            });
            try {
                f.get(SCENARIO_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                f.cancel(true);
                o.abort = "timed out after " + SCENARIO_TIMEOUT_S + " s";
            } catch (ExecutionException e) {
                o.abort = stackTrace(e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                o.abort = "interrupted";
            }
        } finally {
            ex.shutdownNow();
            s.closeAll();
        }
        if (o.abort != null) {
            s.t.add("ABORTED: " + o.abort.lines().findFirst().orElse(""));
        }
        o.lines = s.t.finish();
        o.failedChecks = s.t.failedChecks();
        return o;
    }

    private static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }

    private static void save(String name, String server, List<String> lines) {
        try {
            Path dir = Files.createDirectories(Paths.get("target", "transcripts"));
            Files.write(dir.resolve(name + "." + server + ".txt"), lines);
        } catch (IOException e) {
            System.err.println("[compat] could not save transcript: " + e);
        }
    }
}
