package meerkat.compat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;

/**
 * What a scenario body gets: sessions to one server, a transcript, proxies, and
 * bounded waiting. Everything it opens is closed when the scenario ends.
 */
final class Scenario {
    /** Default requested session timeout: the servers' maximum (20 x tickTime). */
    static final int SESSION_MS = 20 * ServerProcess.TICK_MS;

    final String name;
    final ServerProcess server;
    final Transcript t = new Transcript();
    private final List<AutoCloseable> resources = new ArrayList<>();

    Scenario(String name, ServerProcess server) {
        this.name = name;
        this.server = server;
    }

    /** The scenario's own top-level znode; every scenario works below a fresh one. */
    String root() {
        return "/" + name;
    }

    String p(String rel) {
        return root() + "/" + rel;
    }

    Session connect(String label) throws IOException {
        return connect(label, server.connectString(), SESSION_MS);
    }

    Session connect(String label, int timeoutMs) throws IOException {
        return connect(label, server.connectString(), timeoutMs);
    }

    /**
     * Opens a session and waits (bounded) for SyncConnected on its default
     * watcher; records the session label and negotiated timeout.
     */
    Session connect(String label, String connectString, int timeoutMs) throws IOException {
        return connect(label, connectString, timeoutMs, false);
    }

    /** As {@link #connect(String)} with a ZooKeeperAdmin client (reconfig). */
    Session connectAdmin(String label) throws IOException {
        return connect(label, server.connectString(), SESSION_MS, true);
    }

    private Session connect(String label, String connectString, int timeoutMs, boolean admin) throws IOException {
        LinkedBlockingQueue<String[]> q = new LinkedBlockingQueue<>();
        Watcher def = Session.recorder(label + ".default", q);
        ZooKeeper zk = admin ? new ZooKeeperAdmin(connectString, timeoutMs, def) : new ZooKeeper(connectString, timeoutMs, def);
        Session s = new Session(label, zk, t, q);
        resources.add(s);
        String[] first = poll(q, 10_000);
        if (first == null || !"SyncConnected".equals(first[2])) {
            throw new IllegalStateException(label + ": no SyncConnected within 10 s"
                    + (first == null ? "" : ", got " + String.join(" ", first)) + " (server " + server.exitDescription() + ")");
        }
        t.add(label + " connected session=" + t.session(zk.getSessionId()) + " timeout=" + zk.getSessionTimeout());
        return s;
    }

    /**
     * Opens a session with a client configuration of its own (TLS, the Netty socket) to any
     * address, without insisting that it connects; see {@link Session#awaitConnected}.
     */
    Session open(String label, String connectString, org.apache.zookeeper.client.ZKClientConfig config)
            throws IOException {
        LinkedBlockingQueue<String[]> q = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(connectString, SESSION_MS, Session.recorder(label + ".default", q), config);
        Session s = new Session(label, zk, t, q);
        resources.add(s);
        return s;
    }

    /** Opens a session without insisting that it connects; see {@link Session#awaitConnected}. */
    Session open(String label) throws IOException {
        LinkedBlockingQueue<String[]> q = new LinkedBlockingQueue<>();
        ZooKeeper zk = new ZooKeeper(server.connectString(), SESSION_MS, Session.recorder(label + ".default", q));
        Session s = new Session(label, zk, t, q);
        resources.add(s);
        return s;
    }

    /**
     * Re-attaches to an existing session id with the given password. Does not
     * wait: the caller reads the default watcher's events (SyncConnected or Expired).
     */
    Session attach(String label, long sessionId, byte[] passwd, int timeoutMs) throws IOException {
        LinkedBlockingQueue<String[]> q = new LinkedBlockingQueue<>();
        Watcher def = Session.recorder(label + ".default", q);
        ZooKeeper zk = new ZooKeeper(server.connectString(), timeoutMs, def, sessionId, passwd);
        Session s = new Session(label, zk, t, q);
        resources.add(s);
        t.add(label + " attach to session " + t.session(sessionId));
        return s;
    }

    TcpProxy proxy() throws IOException {
        TcpProxy p = new TcpProxy(server.port);
        resources.add(p);
        return p;
    }

    void note(String line) {
        t.add("# " + line);
    }

    void check(boolean ok, String what) {
        t.check(ok, what);
    }

    /** Polls cond every 50 ms until it holds or max ms pass; returns whether it held. */
    static boolean waitUntil(long maxMs, BooleanSupplier cond) {
        long deadline = System.currentTimeMillis() + maxMs;
        while (System.currentTimeMillis() < deadline) {
            if (cond.getAsBoolean()) {
                return true;
            }
            ServerProcess.sleep(50);
        }
        return cond.getAsBoolean();
    }

    private static String[] poll(LinkedBlockingQueue<String[]> q, long ms) {
        try {
            return q.poll(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Records events nobody asked for, on every session still open: they must match too. */
    void recordLeftoverEvents() {
        for (AutoCloseable r : resources) {
            if (r instanceof Session && !((Session) r).isClosed()) {
                ((Session) r).noEvents();
            }
        }
    }

    void closeAll() {
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception ignored) {
                // best effort
            }
        }
        resources.clear();
    }
}
