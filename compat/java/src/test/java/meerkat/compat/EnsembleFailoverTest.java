package meerkat.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;

/**
 * Apache ZooKeeper's own Java client against a 3-server ensemble: the server it is
 * connected to is killed (SIGKILL), and the client must carry on through another
 * server with the same session, its ephemeral node and its watch. The same scenario
 * runs against a ZooKeeper 3.9.3 ensemble (the reference) and a meerkat ensemble.
 */
class EnsembleFailoverTest {
    private static final int SERVERS = 3;
    private static final int TICK_MS = 200;
    private static final int SESSION_TIMEOUT_MS = 4000;

    @Test
    void zookeeperClientKeepsSessionEphemeralAndWatchAcrossServerKill() throws Exception {
        failover(Flavor.ZOOKEEPER);
        if (!Servers.zookeeperOnly()) {
            failover(Flavor.MEERKAT);
        }
    }

    enum Flavor { ZOOKEEPER, MEERKAT }

    private static void failover(Flavor flavor) throws Exception {
        try (Ensemble ensemble = Ensemble.start(flavor)) {
            BlockingQueue<WatchedEvent> events = new LinkedBlockingQueue<>();
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(ensemble.connectString(), SESSION_TIMEOUT_MS, e -> {
                if (e.getType() == Watcher.Event.EventType.None) {
                    if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                        connected.countDown();
                    }
                } else {
                    events.add(e);
                }
            });
            try {
                assertTrue(connected.await(30, TimeUnit.SECONDS), flavor + ": connected");
                long session = zk.getSessionId();
                zk.create("/failover-eph", "mine".getBytes(StandardCharsets.UTF_8),
                        ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
                zk.create("/failover-data", "v1".getBytes(StandardCharsets.UTF_8),
                        ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                assertNotNull(zk.exists("/failover-data", true), flavor + ": watched node exists");

                int victim = ensemble.indexOfPort(remotePort(zk));
                ensemble.kill(victim);

                // The client reconnects elsewhere within the session timeout; a write
                // through the new server proves it serves this session.
                byte[] v2 = "v2".getBytes(StandardCharsets.UTF_8);
                Stat set = retry(() -> zk.setData("/failover-data", v2, -1), 30_000);
                assertEquals(1, set.getVersion(), flavor + ": the write went through once");
                assertEquals(session, zk.getSessionId(), flavor + ": same session");
                assertTrue(ensemble.indexOfPort(remotePort(zk)) != victim, flavor + ": on another server");

                WatchedEvent fired = events.poll(10, TimeUnit.SECONDS);
                assertNotNull(fired, flavor + ": the watch set before the kill fired");
                assertEquals(Watcher.Event.EventType.NodeDataChanged, fired.getType(), flavor + ": event type");
                assertEquals("/failover-data", fired.getPath(), flavor + ": event path");

                Stat eph = zk.exists("/failover-eph", false);
                assertNotNull(eph, flavor + ": the ephemeral survived the server kill");
                assertEquals(session, eph.getEphemeralOwner(), flavor + ": still owned by the session");
            } finally {
                zk.close();
            }
        }
    }

    private interface Call<T> {
        T call() throws Exception;
    }

    /** Retries through ConnectionLoss while the client fails over; bounded in time. */
    private static <T> T retry(Call<T> call, long limitMs) throws Exception {
        long deadline = System.currentTimeMillis() + limitMs;
        while (true) {
            try {
                return call.call();
            } catch (org.apache.zookeeper.KeeperException.ConnectionLossException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /** The client port of the server the client talks to, from ClientCnxn's description. */
    private static int remotePort(ZooKeeper zk) {
        Matcher m = Pattern.compile("remoteserver:[^:]*:(\\d+)").matcher(zk.toString());
        assertTrue(m.find(), "the client says which server it is connected to: " + zk);
        return Integer.parseInt(m.group(1));
    }

    /** Three server processes on loopback, each with its own data dir, myid and zoo.cfg. */
    static final class Ensemble implements AutoCloseable {
        final List<Integer> clientPorts = new ArrayList<>();
        final List<Process> processes = new ArrayList<>();
        final List<Path> logs = new ArrayList<>();
        final List<List<String>> commands = new ArrayList<>();
        final List<Path> dirs = new ArrayList<>();
        /** Each member's AdminServer port, when started by {@link #startWithAdmin}. */
        final List<Integer> adminPorts = new ArrayList<>();
        private boolean admin;
        /** JVM flags: on ZooKeeper's command line, in meerkat's SERVER_JVMFLAGS (as zkServer.sh). */
        private String jvmFlags = "";

        static Ensemble start(Flavor flavor) throws IOException {
            return start(flavor, "");
        }

        /** With each member's AdminServer on (loopback, a port of its own). */
        static Ensemble startWithAdmin(Flavor flavor) throws IOException {
            Ensemble e = new Ensemble();
            e.admin = true;
            return e.begin(flavor, "");
        }

        /** With `extraConfig` (zoo.cfg lines) added to every member's file. */
        static Ensemble start(Flavor flavor, String extraConfig) throws IOException {
            return new Ensemble().begin(flavor, extraConfig);
        }

        /**
         * With `extraConfig` and the JVM flags `jvmFlags` (space-separated `-Dk=v`): ZooKeeper
         * gets them on its command line, meerkat as SERVER_JVMFLAGS, as zkServer.sh passes them.
         */
        static Ensemble start(Flavor flavor, String extraConfig, String jvmFlags) throws IOException {
            Ensemble e = new Ensemble();
            e.jvmFlags = jvmFlags;
            return e.begin(flavor, extraConfig);
        }

        private Ensemble begin(Flavor flavor, String extraConfig) throws IOException {
            try {
                launch(flavor, extraConfig);
                awaitServing();
            } catch (IOException | RuntimeException ex) {
                close();
                throw ex;
            }
            return this;
        }

        private void launch(Flavor flavor, String extraConfig) throws IOException {
            StringBuilder lines = new StringBuilder();
            for (int i = 1; i <= SERVERS; i++) {
                int client = FreePorts.next();
                clientPorts.add(client);
                lines.append("server.").append(i).append("=127.0.0.1:").append(FreePorts.next())
                        .append(':').append(FreePorts.next()).append(";127.0.0.1:").append(client).append('\n');
            }
            Path base = Files.createDirectories(Paths.get("target", "compat-servers"));
            Path dir = Files.createTempDirectory(base, "ensemble-" + flavor.name().toLowerCase() + "-").toAbsolutePath();
            for (int i = 1; i <= SERVERS; i++) {
                Path data = Files.createDirectories(dir.resolve("server-" + i));
                Files.writeString(data.resolve("myid"), i + "\n");
                String adminLines = "admin.enableServer=false\n";
                if (admin) {
                    int adminPort = FreePorts.next();
                    adminPorts.add(adminPort);
                    adminLines = "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort="
                            + adminPort + "\n";
                }
                String cfg = "tickTime=" + TICK_MS + "\ninitLimit=10\nsyncLimit=5\n"
                        + "dataDir=" + data + "\nclientPort=" + clientPorts.get(i - 1) + "\n"
                        + "clientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\n"
                        + adminLines + extraConfig + lines;
                Path cfgFile = data.resolve("zoo.cfg");
                Files.writeString(cfgFile, cfg);
                List<String> cmd = new ArrayList<>();
                if (flavor == Flavor.ZOOKEEPER) {
                    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
                    cmd.add("-Xmx256m");
                    cmd.add("-Dzookeeper.admin.enableServer=false");
                    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
                    for (String flag : jvmFlags.trim().split("\\s+")) {
                        if (!flag.isEmpty()) {
                            cmd.add(flag);
                        }
                    }
                    cmd.add("-cp");
                    cmd.add(System.getProperty("java.class.path"));
                    cmd.add("org.apache.zookeeper.server.quorum.QuorumPeerMain");
                } else {
                    String bin = System.getProperty("meerkat.bin", "").trim();
                    if (bin.isEmpty()) {
                        throw new IOException("system property meerkat.bin is not set");
                    }
                    cmd.add(Paths.get(bin).toAbsolutePath().toString());
                    cmd.add("server");
                }
                cmd.add(cfgFile.toString());
                Path log = data.resolve("server.log");
                logs.add(log);
                commands.add(cmd);
                dirs.add(data);
                processes.add(builder(cmd).directory(data.toFile()).redirectErrorStream(true)
                        .redirectOutput(log.toFile()).start());
            }
        }

        /** A process builder for `cmd`, with SERVER_JVMFLAGS set when there are JVM flags. */
        private ProcessBuilder builder(List<String> cmd) {
            ProcessBuilder builder = new ProcessBuilder(cmd);
            if (!jvmFlags.isBlank()) {
                builder.environment().put("SERVER_JVMFLAGS", jvmFlags);
            }
            return builder;
        }

        private void awaitServing() throws IOException {
            for (int i = 0; i < SERVERS; i++) {
                awaitServing(i);
            }
        }

        /** SIGTERM, as an init system stops a server for a planned restart. */
        void stop(int i) throws InterruptedException {
            processes.get(i).destroy();
            processes.get(i).waitFor(30, TimeUnit.SECONDS);
        }

        /** Starts member `i` again with its data dir, zoo.cfg and log (appended). */
        void restart(int i) throws IOException {
            processes.set(i, builder(commands.get(i)).directory(dirs.get(i).toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logs.get(i).toFile())).start());
        }

        void awaitServing(int i) throws IOException {
            long deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                if (!processes.get(i).isAlive()) {
                    throw new IOException("server " + (i + 1) + " exited; log:\n" + tail(i));
                }
                String srvr = FourLetterWords.sendQuietly(clientPorts.get(i), "srvr");
                if (srvr.contains("Mode: leader") || srvr.contains("Mode: follower")) {
                    return;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IOException("server " + (i + 1) + " did not serve within 60 s; log:\n" + tail(i));
                }
                ServerProcess.sleep(100);
            }
        }

        String connectString() {
            StringBuilder sb = new StringBuilder();
            for (int port : clientPorts) {
                sb.append(sb.length() == 0 ? "" : ",").append("127.0.0.1:").append(port);
            }
            return sb.toString();
        }

        int indexOfPort(int port) {
            int i = clientPorts.indexOf(port);
            assertTrue(i >= 0, "port " + port + " belongs to the ensemble");
            return i;
        }

        /** SIGKILL: no goodbye to clients or peers. */
        void kill(int i) throws InterruptedException {
            processes.get(i).destroyForcibly();
            processes.get(i).waitFor(10, TimeUnit.SECONDS);
        }

        private String tail(int i) {
            try {
                List<String> lines = Files.readAllLines(logs.get(i), StandardCharsets.UTF_8);
                return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
            } catch (IOException e) {
                return "(log unreadable: " + e + ")";
            }
        }

        @Override
        public void close() {
            for (Process p : processes) {
                p.destroyForcibly();
            }
            for (Process p : processes) {
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
