package meerkat.capture;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.client.ConnectStringParser;
import org.apache.zookeeper.client.HostProvider;
import org.apache.zookeeper.client.StaticHostProvider;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

/**
 * Starts a real ZooKeeper server in a child JVM, puts a {@link FrameProxy}
 * in front of it, drives the real Java client through the proxy with a
 * scripted workload covering every client opcode, and writes one vector
 * file per proxied connection.
 *
 * <p>Usage: {@code Capture <output-dir>}
 */
public final class Capture {

    static final int SESSION_TIMEOUT_MS = 4000;
    static final long WAIT_MS = 10_000;

    private final Path outDir;
    private Path workDir;
    private Process server;
    private FrameProxy proxy;
    private final List<FrameProxy> sideProxies = new ArrayList<>();
    private int zkPort;
    private String connectString;
    private int stepFailures;

    private Capture(Path outDir) {
        this.outDir = outDir;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: Capture <output-dir>");
            System.exit(2);
        }
        Capture c = new Capture(Paths.get(args[0]));
        int rc;
        try {
            rc = c.run();
        } finally {
            c.shutdown();
        }
        System.exit(rc);
    }

    // ------------------------------------------------------------------ setup

    private int run() throws Exception {
        workDir = Files.createTempDirectory("zk-capture-");
        zkPort = freePort();
        startServer(zkPort);
        proxy = new FrameProxy(zkPort);
        connectString = "127.0.0.1:" + proxy.port();
        log("server on port " + zkPort + ", proxy on port " + proxy.port());

        try {
            workload();
        } catch (Exception | Error e) {
            stepFailures++;
            log("workload aborted: " + e);
            e.printStackTrace(System.out);
            log("server log kept at " + workDir.resolve("server.log"));
            return 1;
        }

        // let the last frames (close replies, closes) settle
        Thread.sleep(500);
        proxy.close();
        Thread.sleep(200);
        List<FrameProxy.Conn> all = new ArrayList<>(proxy.connections());
        for (FrameProxy sp : sideProxies) {
            all.addAll(sp.connections());
        }
        int files = VectorWriter.write(outDir, all);
        log("wrote " + files + " vector files to " + outDir);
        if (stepFailures > 0) {
            log(stepFailures + " workload step(s) did not behave as expected (see above)");
            return 1;
        }
        return 0;
    }

    private void startServer(int port) throws Exception {
        Path dataDir = Files.createDirectories(workDir.resolve("data"));
        Path cfg = workDir.resolve("zoo.cfg");
        Path jaas = workDir.resolve("server-jaas.conf");
        Files.writeString(jaas, String.join("\n",
                "Server {",
                "  org.apache.zookeeper.server.auth.DigestLoginModule required",
                "  user_alice=\"alice-secret\";",
                "};", ""));
        Files.writeString(cfg, String.join("\n",
                "tickTime=200",
                "dataDir=" + dataDir.toAbsolutePath(),
                "clientPort=" + port,
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "extendedTypesEnabled=true",
                "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                ""));
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(Arrays.asList(
                java,
                "-Xmx256m",
                "-Dzookeeper.extendedTypesEnabled=true",
                "-Dzookeeper.admin.enableServer=false",
                "-Djava.security.auth.login.config=" + jaas.toAbsolutePath(),
                "-cp", System.getProperty("java.class.path"),
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                cfg.toAbsolutePath().toString()));
        File serverLog = workDir.resolve("server.log").toFile();
        server = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(serverLog).start();
        final Process child = server;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (child.isAlive()) {
                child.destroyForcibly();
            }
        }, "stop-zk-server"));
        log("started ZooKeeper server pid " + server.pid() + " (log: " + serverLog + ")");
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            if (!server.isAlive()) {
                throw new IllegalStateException("server exited early, see " + serverLog);
            }
            if (serving(port)) {
                break;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("server did not start serving, see " + serverLog);
            }
            Thread.sleep(100);
        }
    }

    /** True once the server answers the "srvr" four-letter word with its statistics. */
    private static boolean serving(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(2000);
            s.getOutputStream().write("srvr".getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            String reply = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return reply.contains("Mode:");
        } catch (IOException e) {
            return false;
        }
    }

    private void shutdown() {
        if (proxy != null) {
            proxy.close();
        }
        for (FrameProxy sp : sideProxies) {
            sp.close();
        }
        if (server != null && server.isAlive()) {
            server.destroy();
            try {
                if (!server.waitFor(10, TimeUnit.SECONDS)) {
                    server.destroyForcibly();
                    server.waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (workDir != null && stepFailures == 0) {
            try (Stream<Path> s = Files.walk(workDir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return s.getLocalPort();
        }
    }

    static void log(String s) {
        System.out.println("[capture] " + s);
        System.out.flush();
    }

    // --------------------------------------------------------------- helpers

    /** Default watcher that queues every event for the workload to await. */
    static final class Events implements Watcher {
        final String name;
        final List<WatchedEvent> pending = new ArrayList<>();

        Events(String name) {
            this.name = name;
        }

        @Override
        public void process(WatchedEvent e) {
            log(name + " event: " + e);
            synchronized (pending) {
                pending.add(e);
                pending.notifyAll();
            }
        }

        /** Waits for (and takes) the oldest not yet taken event that matches; others stay queued. */
        WatchedEvent await(String what, Predicate<WatchedEvent> p) throws InterruptedException {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            synchronized (pending) {
                while (true) {
                    for (Iterator<WatchedEvent> it = pending.iterator(); it.hasNext(); ) {
                        WatchedEvent e = it.next();
                        if (p.test(e)) {
                            it.remove();
                            return e;
                        }
                    }
                    long left = deadline - System.currentTimeMillis();
                    if (left <= 0) {
                        throw new IllegalStateException(name + ": timed out waiting for " + what);
                    }
                    pending.wait(left);
                }
            }
        }

        void awaitState(Watcher.Event.KeeperState st) throws InterruptedException {
            await("state " + st, e -> e.getType() == Event.EventType.None && e.getState() == st);
        }

        void awaitNode(Watcher.Event.EventType t, String path) throws InterruptedException {
            await(t + " " + path, e -> e.getType() == t && path.equals(e.getPath()));
        }
    }

    static ZKClientConfig plainConfig() {
        ZKClientConfig cfg = new ZKClientConfig();
        cfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        return cfg;
    }

    private ZooKeeper connect(String label, Events ev) throws Exception {
        proxy.setLabel(label);
        ZooKeeper zk = new ZooKeeper(connectString, SESSION_TIMEOUT_MS, ev, plainConfig());
        ev.awaitState(Watcher.Event.KeeperState.SyncConnected);
        return zk;
    }

    /** A new client object that resumes an existing session (sessionId + password). */
    private ZooKeeper resume(Events ev, long sessionId, byte[] passwd) throws IOException {
        HostProvider hosts = new StaticHostProvider(new ConnectStringParser(connectString).getServerAddresses());
        return new ZooKeeper(connectString, SESSION_TIMEOUT_MS, ev, sessionId, passwd, false, hosts, plainConfig());
    }

    interface Step {
        void run() throws Exception;
    }

    /** Runs an operation that must succeed. */
    private void ok(String what, Step s) throws Exception {
        s.run();
        log("ok: " + what);
    }

    /** Runs an operation that must fail with the given error code. */
    private void fails(String what, KeeperException.Code code, Step s) throws Exception {
        try {
            s.run();
            log("UNEXPECTED SUCCESS: " + what);
            stepFailures++;
        } catch (KeeperException e) {
            if (e.code() != code) {
                log("UNEXPECTED ERROR for " + what + ": " + e.code() + " (wanted " + code + ")");
                stepFailures++;
            } else {
                log("ok (expected " + code + "): " + what);
            }
        }
    }

    static byte[] b(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static void idle(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    // -------------------------------------------------------------- workload

    private void workload() throws Exception {
        final List<ACL> open = ZooDefs.Ids.OPEN_ACL_UNSAFE;
        Events evA = new Events("A");
        Events evB = new Events("B");

        // ---- session A: new session, auth, whoAmI, creates in every mode
        ZooKeeper a = connect("a1-session-main", evA);
        ok("addAuthInfo digest", () -> a.addAuthInfo("digest", b("alice:alice-secret")));
        ok("whoAmI", () -> log("whoAmI -> " + a.whoAmI()));
        ok("create persistent /mk", () -> a.create("/mk", b("root"), open, CreateMode.PERSISTENT));
        fails("create existing /mk", KeeperException.Code.NODEEXISTS,
                () -> a.create("/mk", b("again"), open, CreateMode.PERSISTENT));
        fails("create under missing parent", KeeperException.Code.NONODE,
                () -> a.create("/mk/missing/child", b("x"), open, CreateMode.PERSISTENT));
        ok("create ephemeral", () -> a.create("/mk/eph", b("ephemeral"), open, CreateMode.EPHEMERAL));
        ok("create persistent sequential",
                () -> log(a.create("/mk/seq-", b("s"), open, CreateMode.PERSISTENT_SEQUENTIAL)));
        ok("create ephemeral sequential",
                () -> log(a.create("/mk/eseq-", b("es"), open, CreateMode.EPHEMERAL_SEQUENTIAL)));
        ok("create null data", () -> a.create("/mk/nulldata", null, open, CreateMode.PERSISTENT));
        ok("create2 (with Stat)", () -> a.create("/mk/c2", b("create2"), open, CreateMode.PERSISTENT, new Stat()));
        ok("create2 ephemeral sequential (with Stat)",
                () -> a.create("/mk/c2eseq-", b("x"), open, CreateMode.EPHEMERAL_SEQUENTIAL, new Stat()));
        ok("create container", () -> a.create("/mk/box", b("container"), open, CreateMode.CONTAINER));
        ok("create container (with Stat)",
                () -> a.create("/mk/box2", null, open, CreateMode.CONTAINER, new Stat()));
        ok("create in container", () -> a.create("/mk/box/item", b("i"), open, CreateMode.PERSISTENT));
        ok("create TTL", () -> a.create("/mk/ttl", b("ttl"), open, CreateMode.PERSISTENT_WITH_TTL,
                new Stat(), 600_000L));
        ok("create sequential TTL", () -> log(a.create("/mk/ttlseq-", b("ttl"), open,
                CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, new Stat(), 600_000L)));
        ok("create with creator ACL", () -> a.create("/mk/secret", b("s3cret"),
                ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT));
        List<ACL> mixed = new ArrayList<>();
        mixed.add(new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE));
        mixed.add(new ACL(ZooDefs.Perms.ALL, new Id("digest",
                DigestAuthenticationProvider.generateDigest("alice:alice-secret"))));
        mixed.add(new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.WRITE, new Id("ip", "127.0.0.1")));
        ok("create with mixed ACL", () -> a.create("/mk/acl", b("acl"), mixed, CreateMode.PERSISTENT));

        // ---- reads, writes, errors, watches
        ok("exists hit + watch", () -> a.exists("/mk", true));
        ok("exists miss + watch", () -> log("exists -> " + a.exists("/mk/later", true)));
        ok("create watched node", () -> a.create("/mk/later", b("later"), open, CreateMode.PERSISTENT));
        evA.awaitNode(Watcher.Event.EventType.NodeCreated, "/mk/later");
        ok("getData + watch", () -> a.getData("/mk", true, new Stat()));
        ok("setData", () -> a.setData("/mk", b("root-v1"), -1));
        evA.awaitNode(Watcher.Event.EventType.NodeDataChanged, "/mk");
        ok("setData with version", () -> a.setData("/mk", b("root-v2"), 1));
        fails("setData bad version", KeeperException.Code.BADVERSION, () -> a.setData("/mk", b("x"), 99));
        fails("setData missing", KeeperException.Code.NONODE, () -> a.setData("/mk/none", b("x"), -1));
        fails("getData missing", KeeperException.Code.NONODE, () -> a.getData("/mk/none", false, null));
        ok("getData without watch", () -> a.getData("/mk/nulldata", false, null));
        ok("getChildren + watch", () -> a.getChildren("/mk", true));
        ok("create child", () -> a.create("/mk/kid", b("k"), open, CreateMode.PERSISTENT));
        evA.awaitNode(Watcher.Event.EventType.NodeChildrenChanged, "/mk");
        fails("getChildren missing", KeeperException.Code.NONODE, () -> a.getChildren("/mk/none", false));
        ok("getChildren2", () -> a.getChildren("/mk", false, new Stat()));
        ok("getChildren2 + watch", () -> a.getChildren("/mk/box", true, new Stat()));
        ok("getACL", () -> a.getACL("/mk/secret", new Stat()));
        ok("getACL mixed", () -> a.getACL("/mk/acl", new Stat()));
        ok("setACL", () -> a.setACL("/mk/c2", Arrays.asList(
                new ACL(ZooDefs.Perms.READ | ZooDefs.Perms.WRITE, ZooDefs.Ids.ANYONE_ID_UNSAFE)), -1));
        fails("setACL without ADMIN permission", KeeperException.Code.NOAUTH,
                () -> a.setACL("/mk/c2", open, -1));
        fails("setACL bad version", KeeperException.Code.BADVERSION,
                () -> a.setACL("/mk/kid", open, 42));
        ok("sync", () -> {
            CountDownLatch done = new CountDownLatch(1);
            int[] rc = {Integer.MIN_VALUE};
            a.sync("/mk", (code, path, ctx) -> {
                rc[0] = code;
                done.countDown();
            }, null);
            if (!done.await(WAIT_MS, TimeUnit.MILLISECONDS) || rc[0] != 0) {
                throw new IllegalStateException("sync failed rc=" + rc[0]);
            }
        });
        ok("exists + watch on node to delete", () -> a.exists("/mk/later", true));
        ok("delete", () -> a.delete("/mk/later", -1));
        evA.awaitNode(Watcher.Event.EventType.NodeDeleted, "/mk/later");
        fails("delete missing", KeeperException.Code.NONODE, () -> a.delete("/mk/later", -1));
        fails("delete bad version", KeeperException.Code.BADVERSION, () -> a.delete("/mk/kid", 7));
        fails("delete non-empty", KeeperException.Code.NOTEMPTY, () -> a.delete("/mk", -1));
        fails("create under ephemeral", KeeperException.Code.NOCHILDRENFOREPHEMERALS,
                () -> a.create("/mk/eph/x", null, open, CreateMode.PERSISTENT));

        // ---- multi (success and failure) and multiRead
        ok("multi success", () -> {
            List<OpResult> r = a.multi(Arrays.asList(
                    Op.create("/mk/m1", b("m1"), open, CreateMode.PERSISTENT),
                    Op.create("/mk/mseq-", b("m"), open, CreateMode.PERSISTENT_SEQUENTIAL),
                    Op.create("/mk/mttl", b("m"), open, CreateMode.PERSISTENT_WITH_TTL, 600_000L),
                    Op.create("/mk/mbox", null, open, CreateMode.CONTAINER),
                    Op.setData("/mk/m1", b("m1-v1"), 0),
                    Op.check("/mk/m1", 1),
                    Op.delete("/mk/m1", 1)));
            log("multi -> " + r.size() + " results");
        });
        fails("multi failure (bad check version)", KeeperException.Code.BADVERSION, () -> a.multi(Arrays.asList(
                Op.create("/mk/m2", b("m2"), open, CreateMode.PERSISTENT),
                Op.check("/mk", 999),
                Op.delete("/mk/kid", -1))));
        fails("multi failure (NoNode)", KeeperException.Code.NONODE, () -> a.multi(Arrays.asList(
                Op.setData("/mk/nope", b("x"), -1))));
        ok("multiRead", () -> {
            List<OpResult> r = a.multi(Arrays.asList(
                    Op.getChildren("/mk"),
                    Op.getData("/mk"),
                    Op.getData("/mk/none"),
                    Op.getChildren("/mk/none")));
            log("multiRead -> " + r);
        });
        ok("getEphemerals(/mk)", () -> log("getEphemerals -> " + a.getEphemerals("/mk")));
        ok("getEphemerals()", () -> log("getEphemerals -> " + a.getEphemerals()));
        ok("getAllChildrenNumber", () -> log("getAllChildrenNumber -> " + a.getAllChildrenNumber("/mk")));
        fails("getAllChildrenNumber missing", KeeperException.Code.NONODE,
                () -> a.getAllChildrenNumber("/mk/none"));

        // ---- checkWatches (17) and removeWatches (18)
        Watcher extra = e -> log("extra watcher: " + e);
        ok("getData with explicit watcher", () -> a.getData("/mk/kid", extra, null));
        ok("removeWatches one watcher (checkWatches)",
                () -> a.removeWatches("/mk/kid", extra, Watcher.WatcherType.Data, false));
        ok("getChildren with explicit watcher", () -> a.getChildren("/mk/box", extra));
        ok("removeAllWatches (removeWatches)",
                () -> a.removeAllWatches("/mk/box", Watcher.WatcherType.Any, false));
        ok("exists with explicit watcher", () -> a.exists("/mk/c2", extra));
        ok("removeAllWatches data", () -> a.removeAllWatches("/mk/c2", Watcher.WatcherType.Data, false));

        // ---- idle past readTimeout/2 so the client pings (readTimeout = 2/3 of 4000 ms)
        log("idling for pings");
        idle(3200);

        // ---- session B (second client, used to change things while A is away)
        ZooKeeper bz = connect("b1-session-other", evB);
        ok("B create ephemeral", () -> bz.create("/mk/b-eph", b("b"), open, CreateMode.EPHEMERAL));
        ok("B getEphemerals", () -> log("B getEphemerals -> " + bz.getEphemerals()));
        fails("B getData on creator-only node", KeeperException.Code.NOAUTH,
                () -> bz.getData("/mk/secret", false, null));

        // ---- reconnect #1: only standard watches -> setWatches (101)
        ok("A watches for reconnect",  () -> {
            a.getData("/mk", true, null);
            a.exists("/mk/appear", true);
            a.getChildren("/mk/box", true);
            a.getData("/mk/kid", true, null);
        });
        reconnectWhile(a, evA, "a2-reconnect-setwatches", () -> {
            bz.setData("/mk", b("changed-while-away"), -1);
            bz.create("/mk/appear", b("new"), open, CreateMode.PERSISTENT);
            bz.create("/mk/box/item2", null, open, CreateMode.PERSISTENT);
        });
        evA.awaitNode(Watcher.Event.EventType.NodeDataChanged, "/mk");
        evA.awaitNode(Watcher.Event.EventType.NodeCreated, "/mk/appear");
        evA.awaitNode(Watcher.Event.EventType.NodeChildrenChanged, "/mk/box");
        ok("whoAmI after reconnect", () -> log("whoAmI -> " + a.whoAmI()));

        // ---- persistent watches (addWatch) and reconnect #2 -> setWatches2 (105)
        ok("addWatch persistent", () -> a.addWatch("/mk/pw", AddWatchMode.PERSISTENT));
        ok("addWatch persistent recursive", () -> a.addWatch("/mk/tree", AddWatchMode.PERSISTENT_RECURSIVE));
        ok("create under persistent watches", () -> {
            a.create("/mk/pw", b("p"), open, CreateMode.PERSISTENT);
            a.create("/mk/tree", b("t"), open, CreateMode.PERSISTENT);
            a.create("/mk/tree/leaf", b("l"), open, CreateMode.PERSISTENT);
        });
        evA.awaitNode(Watcher.Event.EventType.NodeCreated, "/mk/pw");
        evA.awaitNode(Watcher.Event.EventType.NodeCreated, "/mk/tree/leaf");
        ok("A plain watches too", () -> {
            a.exists("/mk/kid", true);
            a.getData("/mk/appear", true, null);
        });
        reconnectWhile(a, evA, "a3-reconnect-setwatches2", () -> {
            bz.setData("/mk/kid", b("kid-v1"), -1);
            bz.delete("/mk/appear", -1);
        });
        evA.awaitNode(Watcher.Event.EventType.NodeDataChanged, "/mk/kid");
        evA.awaitNode(Watcher.Event.EventType.NodeDeleted, "/mk/appear");
        ok("B changes nodes under A's persistent watches", () -> {
            bz.setData("/mk/pw", b("p2"), -1);
            bz.setData("/mk/tree/leaf", b("l2"), -1);
        });
        evA.awaitNode(Watcher.Event.EventType.NodeDataChanged, "/mk/pw");
        evA.awaitNode(Watcher.Event.EventType.NodeDataChanged, "/mk/tree/leaf");
        ok("persistent watch fires again", () -> a.delete("/mk/pw", -1));
        evA.awaitNode(Watcher.Event.EventType.NodeDeleted, "/mk/pw");
        ok("removeAllWatches persistent recursive",
                () -> a.removeAllWatches("/mk/tree", Watcher.WatcherType.PersistentRecursive, false));
        ok("getEphemerals after reconnect", () -> log("getEphemerals -> " + a.getEphemerals("/mk")));

        // ---- close sessions
        long sidA = a.getSessionId();
        byte[] pwA = a.getSessionPasswd();
        ok("A close (closeSession)", a::close);
        ok("B sees A's ephemerals go", () -> log("B getChildren -> " + bz.getChildren("/mk", false)));
        ok("B close (closeSession)", bz::close);

        // ---- explicit reconnect with A's (now closed) sessionId + password -> expired reply
        Events evX = new Events("X");
        proxy.setLabel("c1-reconnect-expired");
        ZooKeeper x = resume(evX, sidA, pwA);
        evX.awaitState(Watcher.Event.KeeperState.Expired);
        x.close();

        // ---- explicit reconnect with a live session's id + password: the first client
        // reaches the server through a side proxy that is then shut for good, so only
        // the second client object (same sessionId + password) can revalidate the session
        FrameProxy side = new FrameProxy(zkPort);
        sideProxies.add(side);
        side.setLabel("d1-session-live");
        Events evL = new Events("L");
        ZooKeeper live = new ZooKeeper("127.0.0.1:" + side.port(), SESSION_TIMEOUT_MS, evL, plainConfig());
        evL.awaitState(Watcher.Event.KeeperState.SyncConnected);
        ok("L exists", () -> live.exists("/mk", false));
        long sidL = live.getSessionId();
        byte[] pwL = live.getSessionPasswd();
        side.close();
        evL.awaitState(Watcher.Event.KeeperState.Disconnected);
        Events evM = new Events("M");
        proxy.setLabel("d2-reconnect-explicit");
        ZooKeeper moved = resume(evM, sidL, pwL);
        evM.awaitState(Watcher.Event.KeeperState.SyncConnected);
        ok("M exists", () -> moved.exists("/mk", false));
        ok("M close (closeSession)", moved::close);
        live.close(1000);

        // ---- admin: reconfig (16) is refused by a standalone server with reconfig disabled
        Events evR = new Events("R");
        proxy.setLabel("e1-reconfig-disabled");
        ZooKeeperAdmin admin = new ZooKeeperAdmin(connectString, SESSION_TIMEOUT_MS, evR, plainConfig());
        evR.awaitState(Watcher.Event.KeeperState.SyncConnected);
        fails("reconfig", KeeperException.Code.RECONFIGDISABLED,
                () -> admin.reconfigure("server.2=127.0.0.1:1:2:participant;127.0.0.1:3", null, null, -1, new Stat()));
        ok("admin close", admin::close);

        // ---- auth failure: unknown scheme -> AuthFailed (-115), server closes
        Events evF = new Events("F");
        ZooKeeper f = connect("f1-auth-failed", evF);
        f.addAuthInfo("nosuchscheme", b("whatever"));
        evF.awaitState(Watcher.Event.KeeperState.AuthFailed);
        f.close();

        // ---- SASL (DIGEST-MD5) login -> sasl (102) packets
        Path clientJaas = workDir.resolve("client-jaas.conf");
        Files.writeString(clientJaas, String.join("\n",
                "Client {",
                "  org.apache.zookeeper.server.auth.DigestLoginModule required",
                "  username=\"alice\"",
                "  password=\"alice-secret\";",
                "};", ""));
        System.setProperty("java.security.auth.login.config", clientJaas.toAbsolutePath().toString());
        ZKClientConfig saslCfg = new ZKClientConfig();
        saslCfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "true");
        Events evS = new Events("S");
        proxy.setLabel("g1-sasl-digest");
        ZooKeeper s = new ZooKeeper(connectString, SESSION_TIMEOUT_MS, evS, saslCfg);
        evS.awaitState(Watcher.Event.KeeperState.SaslAuthenticated);
        ok("whoAmI after SASL", () -> log("whoAmI -> " + s.whoAmI()));
        ok("S close", s::close);
    }

    /**
     * Drops A's connection at the proxy, holds new connections while {@code during}
     * runs on another session, then lets A reconnect (sessionId + password +
     * auth + setWatches) and waits for SyncConnected.
     */
    private void reconnectWhile(ZooKeeper zk, Events ev, String label, Step during) throws Exception {
        proxy.setGate(false);
        proxy.setLabel(label);
        for (FrameProxy.Conn c : proxy.connections()) {
            if (c.label.startsWith("a")) {
                c.note("connection dropped by the capture proxy to force a reconnect");
                c.closeSockets();
            }
        }
        ev.awaitState(Watcher.Event.KeeperState.Disconnected);
        during.run();
        proxy.setGate(true);
        ev.awaitState(Watcher.Event.KeeperState.SyncConnected);
        log("ok: reconnected (" + label + ")");
    }
}
