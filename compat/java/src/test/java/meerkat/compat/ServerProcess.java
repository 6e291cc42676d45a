package meerkat.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One server under test, running as a child process: either Apache ZooKeeper
 * (ZooKeeperServerMain in a fresh JVM) or the meerkat binary. Both get the same
 * zoo.cfg keys; only ports and directories differ.
 */
final class ServerProcess implements AutoCloseable {
    /** Container/TTL sweep period for both servers, small so those tests are quick. */
    static final int CONTAINER_CHECK_MS = 500;
    static final int TICK_MS = 200;
    static final String SUPER_PASSWORD = "super-secret";

    /** An override value that asks for a free port of the server's own (secureClientPort). */
    static final String OWN_PORT = "<own port>";

    /**
     * An override key that is no zoo.cfg key: the value is the SERVER_JVMFLAGS of both servers,
     * split into JVM arguments for ZooKeeper (as zkServer.sh passes them) and handed to meerkat
     * as that environment variable (which it reads for -Djava.security.auth.login.config).
     */
    static final String SERVER_JVMFLAGS = "SERVER_JVMFLAGS";

    final String name;
    final int port;
    /** The server's secureClientPort, or 0 without one. */
    int securePort;
    /** The zoo.cfg overrides as this server got them ({@link #OWN_PORT} values resolved). */
    Map<String, String> settings = Map.of();
    final Path workDir;
    final Path log;
    private final Process process;

    private ServerProcess(String name, int port, Path workDir, Path log, Process process) {
        this.name = name;
        this.port = port;
        this.workDir = workDir;
        this.log = log;
        this.process = process;
    }

    String connectString() {
        return "127.0.0.1:" + port;
    }

    String secureConnectString() {
        return "127.0.0.1:" + securePort;
    }

    boolean isAlive() {
        return process.isAlive();
    }

    String exitDescription() {
        return process.isAlive() ? "running" : "exited with code " + process.exitValue();
    }

    /** Starts Apache ZooKeeper 3.9.3 from this JVM's class path. */
    static ServerProcess startZooKeeper(String name, Map<String, String> overrides) throws IOException {
        int port = FreePorts.next();
        Map<String, String> own = ownPorts(overrides);
        Path dir = newWorkDir(name);
        Path cfg = writeZooCfg(dir, port, own);
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx512m");
        String jvmFlags = overrides.get(SERVER_JVMFLAGS);
        if (jvmFlags != null && !jvmFlags.isBlank()) {
            cmd.addAll(List.of(jvmFlags.trim().split("\\s+")));
        }
        // ContainerManager reads these as plain system properties, not from zoo.cfg.
        cmd.add("-Dznode.container.checkIntervalMs=" + CONTAINER_CHECK_MS);
        cmd.add("-Dznode.container.maxPerMinute=10000");
        cmd.add("-Dzookeeper.admin.enableServer=false");
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("org.apache.zookeeper.server.ZooKeeperServerMain");
        cmd.add(cfg.toString());
        return launch(name, port, own, dir, cmd, null);
    }

    /** Starts meerkat as `meerkat server zoo.cfg`. */
    static ServerProcess startMeerkat(String name, String binary, Map<String, String> overrides) throws IOException {
        Path bin = Paths.get(binary);
        String jvmFlags = overrides.get(SERVER_JVMFLAGS);
        if (!Files.isExecutable(bin)) {
            throw new IOException("meerkat binary " + bin.toAbsolutePath() + " does not exist or is not executable"
                    + " (build it with `cargo build -p meerkat`)");
        }
        int port = FreePorts.next();
        Map<String, String> own = ownPorts(overrides);
        Path dir = newWorkDir(name);
        Path cfg = writeZooCfg(dir, port, own);
        List<String> cmd = List.of(bin.toAbsolutePath().toString(), "server", cfg.toString());
        return launch(name, port, own, dir, cmd, jvmFlags);
    }

    /** The overrides with every {@link #OWN_PORT} value replaced by a free port. */
    private static Map<String, String> ownPorts(Map<String, String> overrides) throws IOException {
        Map<String, String> own = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : overrides.entrySet()) {
            own.put(e.getKey(), OWN_PORT.equals(e.getValue()) ? String.valueOf(FreePorts.next()) : e.getValue());
        }
        return own;
    }

    private static ServerProcess launch(String name, int port, Map<String, String> cfg, Path dir, List<String> cmd,
            String serverJvmFlags) throws IOException {
        Path log = dir.resolve("server.log");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        pb.environment().remove(SERVER_JVMFLAGS);
        if (serverJvmFlags != null) {
            pb.environment().put(SERVER_JVMFLAGS, serverJvmFlags);
        }
        Process p = pb.start();
        ServerProcess sp = new ServerProcess(name, port, dir, log, p);
        sp.settings = cfg;
        String secure = cfg.get("secureClientPort");
        sp.securePort = secure == null ? 0 : Integer.parseInt(secure);
        try {
            sp.awaitReady();
        } catch (IOException | RuntimeException e) {
            sp.close();
            throw e;
        }
        return sp;
    }

    /**
     * The zoo.cfg keys both servers read, changed by the overrides. Unknown keys become `zookeeper.KEY`
     * system properties in ZooKeeper, which is how the whitelist, superDigest,
     * admin.enableServer and extendedTypesEnabled reach it.
     */
    static Map<String, String> zooCfg(Path dataDir, int port, Map<String, String> overrides) {
        Map<String, String> cfg = new LinkedHashMap<>();
        cfg.put("tickTime", String.valueOf(TICK_MS));
        cfg.put("clientPort", String.valueOf(port));
        cfg.put("clientPortAddress", "127.0.0.1");
        cfg.put("dataDir", dataDir.toString());
        cfg.put("maxClientCnxns", "200");
        cfg.put("minSessionTimeout", String.valueOf(2 * TICK_MS));
        cfg.put("maxSessionTimeout", String.valueOf(20 * TICK_MS));
        cfg.put("extendedTypesEnabled", "true");
        cfg.put("4lw.commands.whitelist", "*");
        cfg.put("admin.enableServer", "false");
        cfg.put("DigestAuthenticationProvider.superDigest", superDigest());
        cfg.put("znode.container.checkIntervalMs", String.valueOf(CONTAINER_CHECK_MS));
        cfg.put("znode.container.maxPerMinute", "10000");
        // A null value removes the key (the server's default applies).
        overrides.forEach((k, v) -> {
            if (SERVER_JVMFLAGS.equals(k)) {
                return;
            }
            if (v == null) {
                cfg.remove(k);
            } else {
                cfg.put(k, v);
            }
        });
        return cfg;
    }

    static String superDigest() {
        try {
            return org.apache.zookeeper.server.auth.DigestAuthenticationProvider
                    .generateDigest("super:" + SUPER_PASSWORD);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static Path writeZooCfg(Path dir, int port, Map<String, String> overrides) throws IOException {
        Path data = Files.createDirectories(dir.resolve("data"));
        StringBuilder sb = new StringBuilder();
        zooCfg(data.toAbsolutePath(), port, overrides)
                .forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
        Path cfg = dir.resolve("zoo.cfg");
        Files.writeString(cfg, sb.toString());
        return cfg.toAbsolutePath();
    }

    /** Work directories live under target/ so logs stay around for inspection. */
    private static Path newWorkDir(String name) throws IOException {
        Path base = Files.createDirectories(Paths.get("target", "compat-servers"));
        return Files.createTempDirectory(base, name + "-").toAbsolutePath();
    }

    /**
     * Ready when `ruok` answers `imok` (or, with the default whitelist, when
     * `srvr` answers with the server's version rather than "not currently serving").
     * A server that accepts connections but does not answer four-letter words is
     * taken as ready after a grace period, so the rest of the suite can still run.
     */
    private void awaitReady() throws IOException {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(30);
        long firstAccepted = -1;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException(name + " " + exitDescription() + " before it was ready; log tail:\n" + logTail());
            }
            if (canConnect()) {
                if (firstAccepted < 0) {
                    firstAccepted = System.nanoTime();
                }
                String reply = FourLetterWords.sendQuietly(port, "ruok");
                if (reply.equals("imok")) {
                    return;
                }
                // ruok not whitelisted: srvr (always whitelisted) says whether it serves yet.
                if (reply.contains("not in the whitelist")) {
                    String srvr = FourLetterWords.sendQuietly(port, "srvr");
                    if (srvr.startsWith("Zookeeper version:")) {
                        return;
                    }
                }
                if (System.nanoTime() - firstAccepted > TimeUnit.SECONDS.toNanos(5)) {
                    System.err.println("[compat] " + name + " accepts connections but does not answer ruok; going on");
                    return;
                }
            }
            sleep(100);
        }
        throw new IOException(name + " did not become ready within 30 s; log tail:\n" + logTail());
    }

    private boolean canConnect() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    String logTail() {
        try {
            if (!Files.exists(log)) {
                return "(no log)";
            }
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Graceful stop first, then a forced one; both bounded. */
    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
