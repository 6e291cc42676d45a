package meerkat.compat;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ZooKeeper's Prometheus endpoint ({@code metricsProvider.className=...PrometheusMetricsProvider}),
 * meerkat's beside ZooKeeper 3.9.3's with the same keys: the metric names dashboards read, with
 * ZooKeeper's types, and every metric family meerkat exports that ZooKeeper has too is of the
 * same type there.
 */
class MetricsTest {
    /** What ZooKeeper Grafana dashboards plot; each must exist on both with the same type. */
    private static final List<String> DASHBOARD = List.of("znode_count", "watch_count", "ephemerals_count",
            "approximate_data_size", "num_alive_connections", "outstanding_requests", "packets_received",
            "packets_sent", "avg_latency", "max_latency", "min_latency", "global_sessions", "local_sessions",
            "uptime", "open_file_descriptor_count", "max_file_descriptor_count", "fsynctime", "snapshottime",
            "startup_txns_loaded", "startup_snap_load_time", "connection_drop_probability");

    private static Servers.Pair pair;

    @BeforeAll
    static void start() {
        Map<String, String> m = new HashMap<>();
        m.put("metricsProvider.className", "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider");
        m.put("metricsProvider.httpHost", "127.0.0.1");
        m.put("metricsProvider.httpPort", ServerProcess.OWN_PORT);
        m.put("metricsProvider.exportJvmInfo", "false");
        pair = Servers.Pair.start("metrics", m);
    }

    @AfterAll
    static void stop() {
        if (pair != null) {
            pair.close();
        }
    }

    static String get(ServerProcess server, String path) throws IOException {
        int port = Integer.parseInt(server.settings.get("metricsProvider.httpPort"));
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + path).openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(10_000);
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            c.disconnect();
        }
    }

    /** Metric family name to type, from the "# TYPE" lines. */
    static Map<String, String> types(String exposition) {
        Map<String, String> types = new TreeMap<>();
        for (String line : exposition.split("\n")) {
            String[] f = line.split(" ");
            if (f.length == 4 && f[0].equals("#") && f[1].equals("TYPE")) {
                types.put(f[2], f[3]);
            }
        }
        return types;
    }

    /** The value of an unlabelled sample. */
    static double value(String exposition, String name) {
        for (String line : exposition.split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        throw new IllegalStateException(name + " not in the exposition");
    }

    /**
     * ZooKeeper's quota gauge sets (QuotaMetricsUtils): limits and usage summed by the top
     * namespace, with the label {@code key}; quotas set with zkCli's own code.
     */
    @Test
    void quotaGauges() {
        Differential.run(pair, "quotaGauges", s -> {
            Session c = s.connect("c");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "abc", CreateMode.PERSISTENT);
            c.create(s.p("b"), "", CreateMode.PERSISTENT);
            org.apache.zookeeper.StatsTrack hard = new org.apache.zookeeper.StatsTrack();
            hard.setCountHardLimit(5);
            org.apache.zookeeper.StatsTrack soft = new org.apache.zookeeper.StatsTrack();
            soft.setCount(-1);
            soft.setBytes(100L);
            org.apache.zookeeper.cli.SetQuotaCommand.createQuota(c.zk, s.p("a"), hard);
            org.apache.zookeeper.cli.SetQuotaCommand.createQuota(c.zk, s.p("b"), soft);
            c.create(s.p("a/x"), "12345", CreateMode.PERSISTENT);
            String own = get(s.server, "/metrics");
            // Sorted: the order of metric families is the registry's hash order in ZooKeeper.
            List<String> samples = new java.util.ArrayList<>();
            for (String line : own.split("\n")) {
                if (line.startsWith("quota_") && line.contains("key=\"" + s.name + "\"")) {
                    samples.add(line);
                }
            }
            samples.sort(null);
            samples.forEach(s.t::add);
            Map<String, String> mine = types(own);
            for (String name : List.of("quota_count_limit_per_namespace", "quota_bytes_limit_per_namespace",
                    "quota_count_usage_per_namespace", "quota_bytes_usage_per_namespace",
                    "quota_exceeded_error_per_namespace")) {
                s.t.add(name + " TYPE " + mine.get(name));
            }
            org.apache.zookeeper.cli.DelQuotaCommand.delQuota(c.zk, s.p("a"), null);
            org.apache.zookeeper.cli.DelQuotaCommand.delQuota(c.zk, s.p("b"), null);
        });
    }

    @Test
    void prometheusEndpoint() {
        Differential.run(pair, "prometheusEndpoint", s -> {
            Session c = s.connect("c");
            double before = value(get(s.server, "/metrics"), "znode_count");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "", CreateMode.PERSISTENT);
            c.create(s.p("b"), "", CreateMode.EPHEMERAL);
            String own = get(s.server, "/metrics");
            s.t.add("znode_count grew by " + (value(own, "znode_count") - before));
            s.t.add("ephemerals_count " + value(own, "ephemerals_count"));
            Map<String, String> mine = types(own);
            for (String name : DASHBOARD) {
                s.t.add(name + " TYPE " + mine.get(name));
            }
            s.check(own.contains("fsynctime{quantile=\"0.5\",}"), "summaries carry ZooKeeper's quantile label");
            Map<String, String> reference = types(get(pair.zookeeper, "/metrics"));
            for (Map.Entry<String, String> e : mine.entrySet()) {
                String theirs = reference.get(e.getKey());
                s.check(theirs == null || theirs.equals(e.getValue()),
                        e.getKey() + " is a " + e.getValue() + " as in ZooKeeper (" + theirs + ")");
            }
        });
    }
}
