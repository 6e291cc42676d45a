package meerkat.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The AdminServer ({@code admin.enableServer=true}) of meerkat beside ZooKeeper 3.9.3's Jetty one,
 * with the same keys: for each command (and alias) the JSON has the same field names, nested
 * objects included, and the same shapes of data (ephemerals, watches, connections).
 */
class AdminServerTest {
    /** Commands whose fields are compared; the rest are listed in docs/operators.md. */
    private static final List<String> COMMANDS = List.of("ruok", "server_stats", "srvr", "stats", "stat",
            "connections", "cons", "configuration", "conf", "config", "dump", "watch_summary", "wchs", "watches",
            "wchc", "watches_by_path", "wchp", "is_read_only", "isro", "dirs", "hash", "get_trace_mask",
            "connection_stat_reset", "stat_reset", "observers", "zabstate", "voting_view", "leader",
            "initial_configuration", "last_snapshot", "lsnp", "no_such_command");

    private static Servers.Pair pair;
    private static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void start() {
        Map<String, String> m = new HashMap<>();
        m.put("admin.enableServer", "true");
        m.put("admin.serverAddress", "127.0.0.1");
        m.put("admin.serverPort", ServerProcess.OWN_PORT);
        pair = Servers.Pair.start("admin", m);
    }

    @AfterAll
    static void stop() {
        if (pair != null) {
            pair.close();
        }
    }

    static String get(ServerProcess server, String path) throws IOException {
        int port = Integer.parseInt(server.settings.get("admin.serverPort"));
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + path).openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(10_000);
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        } finally {
            c.disconnect();
        }
    }

    /** Field names, recursively: objects of named fields; maps keyed by data (ids, paths) and arrays by their first element. */
    static void shape(String prefix, JsonNode node, List<String> out) {
        if (node.isObject()) {
            Iterator<String> names = node.fieldNames();
            TreeSet<String> sorted = new TreeSet<>();
            names.forEachRemaining(sorted::add);
            boolean keyedByData = !sorted.isEmpty() && sorted.stream().allMatch(k -> k.matches("[-0-9]+|/.*"));
            if (keyedByData) {
                // Keys are data (session ids, paths, expiry times). ZooKeeper keeps emptied
                // expiry buckets until it purges them, so the count is not compared; the
                // shape of the fullest entry is.
                out.add(prefix + " {entries}");
                JsonNode fullest = null;
                for (Iterator<JsonNode> it = node.elements(); it.hasNext();) {
                    JsonNode e = it.next();
                    if (fullest == null || e.size() > fullest.size()) {
                        fullest = e;
                    }
                }
                shape(prefix + "[*]", fullest, out);
                return;
            }
            for (String name : sorted) {
                out.add(prefix + "." + name);
                shape(prefix + "." + name, node.get(name), out);
            }
        } else if (node.isArray()) {
            out.add(prefix + " [" + node.size() + "]");
            if (node.size() > 0) {
                shape(prefix + "[0]", node.get(0), out);
            }
        }
    }

    @Test
    void commandsHaveZooKeepersFields() {
        Differential.run(pair, "adminCommands", s -> {
            Session f = s.connect("fixture");
            f.create(s.root(), "", CreateMode.PERSISTENT);
            f.create(s.p("eph"), "", CreateMode.EPHEMERAL);
            f.getData(s.p("eph"), f.watcher("w1"));
            String index = get(s.server, "/commands");
            for (String name : List.of("ruok", "server_stats", "stats", "connections", "dump", "watches", "monitor")) {
                s.check(index.contains("<a href=\"/commands/" + name + "\">" + name + "</a>"),
                        "/commands links to " + name);
            }
            for (String name : COMMANDS) {
                JsonNode json = JSON.readTree(get(s.server, "/commands/" + name));
                List<String> fields = new ArrayList<>();
                shape(name, json, fields);
                fields.forEach(s.t::add);
                s.t.add(name + " command=" + json.path("command").asText() + " error=" + json.path("error").asText());
            }
            JsonNode monitor = JSON.readTree(get(s.server, "/commands/monitor"));
            for (String key : List.of("version", "server_state", "znode_count", "watch_count", "num_alive_connections",
                    "outstanding_requests", "ephemerals_count", "approximate_data_size")) {
                s.check(monitor.has(key), "monitor has " + key);
            }
            // last_snapshot: a zxid in Long.toHexString form and its file's time in seconds,
            // or ffffffffffffffff and -1 before the first snapshot.
            JsonNode snap = JSON.readTree(get(s.server, "/commands/last_snapshot"));
            String snapZxid = snap.path("zxid").asText();
            long snapSeconds = snap.path("timestamp").asLong();
            long nowSeconds = System.currentTimeMillis() / 1000;
            s.check(snapZxid.matches("[0-9a-f]{1,16}"), "last_snapshot zxid is hex: " + snapZxid);
            s.check(snapZxid.equals("ffffffffffffffff") ? snapSeconds == -1
                    : snapSeconds > nowSeconds - 3600 && snapSeconds <= nowSeconds + 1,
                    "last_snapshot timestamp is -1 or a recent time in seconds: " + snapSeconds);
            JsonNode env = JSON.readTree(get(s.server, "/commands/environment"));
            s.check(env.has("zookeeper.version") && env.has("host.name"), "environment has zookeeper.version and host.name");
        });
    }
}
