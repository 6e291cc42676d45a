package meerkat.compat;

import java.util.Map;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The servers under test. One shared pair (ZooKeeper + meerkat, all four-letter
 * words enabled) serves the whole run; it is started by the first test class and
 * stopped when JUnit closes its root context (and by a shutdown hook as a backstop).
 *
 * <p>System properties:
 * <ul>
 * <li>{@code meerkat.bin}: path of the meerkat binary. Required unless
 * {@code compat.only=zookeeper}: without it every test fails, it never skips.</li>
 * <li>{@code compat.only=zookeeper}: run the scenarios against ZooKeeper alone
 * (to develop the suite).</li>
 * </ul>
 */
final class Servers implements BeforeAllCallback {
    private static Pair shared;

    static boolean zookeeperOnly() {
        return "zookeeper".equals(System.getProperty("compat.only", "").trim());
    }

    @Override
    public void beforeAll(ExtensionContext ctx) {
        ctx.getRoot().getStore(ExtensionContext.Namespace.GLOBAL)
                .getOrComputeIfAbsent("compat.servers", k -> shared(), Pair.class);
    }

    static synchronized Pair shared() {
        if (shared == null) {
            shared = Pair.start("shared", Map.of());
        }
        return shared;
    }

    /** A ZooKeeper server and, unless in ZooKeeper-only mode, a meerkat server with the same zoo.cfg. */
    static final class Pair implements ExtensionContext.Store.CloseableResource, AutoCloseable {
        final String tag;
        final Map<String, String> overrides;
        final ServerProcess zookeeper;
        private ServerProcess meerkat;
        private String meerkatProblem;
        private int failedStarts;
        private final Thread hook = new Thread(this::close, "compat-server-stopper");

        private Pair(String tag, Map<String, String> overrides, ServerProcess zookeeper) {
            this.tag = tag;
            this.overrides = overrides;
            this.zookeeper = zookeeper;
            Runtime.getRuntime().addShutdownHook(hook);
        }

        /** Starts both servers with the suite's zoo.cfg changed by overrides (null value = key left out). */
        static Pair start(String tag, Map<String, String> overrides) {
            ServerProcess zk;
            try {
                zk = ServerProcess.startZooKeeper("zookeeper-" + tag, overrides);
            } catch (Exception e) {
                throw new IllegalStateException("could not start Apache ZooKeeper: " + e.getMessage(), e);
            }
            Pair p = new Pair(tag, overrides, zk);
            if (!zookeeperOnly()) {
                p.startMeerkat();
            }
            return p;
        }

        private void startMeerkat() {
            String bin = System.getProperty("meerkat.bin", "").trim();
            if (bin.isEmpty()) {
                meerkatProblem = "system property meerkat.bin is not set: run with -Dmeerkat.bin=<repo>/target/debug/meerkat"
                        + " (or -Dcompat.only=zookeeper to exercise the suite against ZooKeeper alone)";
                return;
            }
            try {
                meerkat = ServerProcess.startMeerkat("meerkat-" + tag, bin, overrides);
                meerkatProblem = null;
                failedStarts = 0;
            } catch (Exception e) {
                meerkat = null;
                failedStarts++;
                meerkatProblem = "could not start meerkat: " + e.getMessage();
            }
        }

        /**
         * The meerkat server, restarted (with a fresh data dir) if it died in an
         * earlier scenario, so one crash does not hide every later difference.
         * Throws AssertionError with the reason when meerkat cannot be had.
         */
        synchronized ServerProcess meerkat() {
            if (meerkat != null && !meerkat.isAlive()) {
                System.err.println("[compat] meerkat " + meerkat.exitDescription() + "; restarting it");
                startMeerkat();
            }
            if (meerkat == null && meerkatProblem != null && !meerkatProblem.startsWith("system property")
                    && failedStarts < 3) {
                startMeerkat(); // try again (a few times in all): it may have been a port race
            }
            if (meerkat == null) {
                throw new AssertionError(meerkatProblem);
            }
            return meerkat;
        }

        @Override
        public synchronized void close() {
            if (meerkat != null) {
                meerkat.close();
            }
            zookeeper.close();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // already shutting down: this is the hook running
            }
        }
    }
}
