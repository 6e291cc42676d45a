package meerkat.compat;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Free loopback ports for the servers the suite starts, taken below the kernel's
 * ephemeral range. A port from bind(0) comes from that range, the one every outgoing
 * connection's local port is drawn from too: after it is released and before the
 * server binds it, an ensemble member dialling its peers may be given it, and the
 * server then fails with "Address already in use" (seen in CI). The Rust tests use
 * the same rule (crates/ports).
 */
final class FreePorts {
    private static final int PORT_MIN = 10_000;
    private static final int EPHEMERAL_START_DEFAULT = 32_768;
    /** Shared by every caller in this JVM; starts at a random point of the range. */
    private static final AtomicInteger CURSOR = new AtomicInteger(ThreadLocalRandom.current().nextInt(1 << 20));

    private FreePorts() {}

    /** A loopback port that is free now and below the ephemeral range. */
    static int next() throws IOException {
        int top = ephemeralStart();
        int span = top - PORT_MIN;
        if (span < 1_000) {
            throw new IOException("the ephemeral range starts at " + top + ": too few ports below it");
        }
        // Each port is tried at most once per call: a bounded search.
        for (int i = 0; i < span; i++) {
            int port = PORT_MIN + Math.floorMod(CURSOR.getAndIncrement(), span);
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress("127.0.0.1", port));
                return port;
            } catch (IOException busy) {
                // Taken: try the next one.
            }
        }
        throw new IOException("no free loopback port between " + PORT_MIN + " and " + top);
    }

    /** The first port of net.ipv4.ip_local_port_range, or Linux's default when unreadable. */
    private static int ephemeralStart() {
        try {
            // Read line by line: a /proc file reports size 0, which whole-file reads trust.
            String line;
            try (BufferedReader r = Files.newBufferedReader(Paths.get("/proc/sys/net/ipv4/ip_local_port_range"))) {
                line = r.readLine();
            }
            String[] range = line.trim().split("\\s+");
            return Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException e) {
            return EPHEMERAL_START_DEFAULT;
        }
    }
}
