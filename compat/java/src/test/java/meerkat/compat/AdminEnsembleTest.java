package meerkat.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import meerkat.compat.EnsembleFailoverTest.Ensemble;
import meerkat.compat.EnsembleFailoverTest.Flavor;
import org.junit.jupiter.api.Test;

/**
 * The AdminServer of a 3-member ensemble, ZooKeeper 3.9.3's beside meerkat's: the commands whose
 * answers only an ensemble member gives ({@code leader}, {@code zabstate}, {@code voting_view},
 * {@code observers}) have the same field names on the leader and on a follower, and
 * {@code leader} names the same member everywhere (ZooKeeper's {@code LeaderCommand}:
 * {@code is_leader}, {@code leader_id}, {@code leader_ip}). AdminServerTest covers a standalone
 * pair, where {@code leader} is an error on both.
 */
class AdminEnsembleTest {
    private static final List<String> COMMANDS = List.of("leader", "zabstate", "voting_view", "observers");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long AGREE_WITHIN_MS = 30_000;

    @Test
    void ensembleCommandsHaveZooKeepersFields() throws Exception {
        List<String> zookeeper = transcript(Flavor.ZOOKEEPER);
        if (Servers.zookeeperOnly()) {
            return;
        }
        List<String> meerkat = transcript(Flavor.MEERKAT);
        assertEquals(String.join("\n", zookeeper), String.join("\n", meerkat),
                "ZooKeeper's ensemble AdminServer answers (expected) against meerkat's (actual)");
    }

    /** What one flavor's members answer, the leader's lines first, then a follower's. */
    private static List<String> transcript(Flavor flavor) throws Exception {
        try (Ensemble ensemble = Ensemble.startWithAdmin(flavor)) {
            int leader = agreedLeader(ensemble);
            int follower = leader == 1 ? 2 : 1;
            List<String> lines = new ArrayList<>();
            StringBuilder raw = new StringBuilder();
            for (int sid : new int[] {leader, follower}) {
                String role = sid == leader ? "leader" : "follower";
                int port = ensemble.adminPorts.get(sid - 1);
                for (String command : COMMANDS) {
                    String body = get(port, "/commands/" + command);
                    raw.append(role).append(' ').append(command).append(' ').append(body).append('\n');
                    JsonNode json = JSON.readTree(body);
                    List<String> fields = new ArrayList<>();
                    AdminServerTest.shape(role + " " + command, json, fields);
                    lines.addAll(fields);
                    lines.add(role + " " + command + " error=" + json.path("error").asText());
                }
                JsonNode answer = JSON.readTree(get(port, "/commands/leader"));
                lines.add(role + " is_leader=" + answer.path("is_leader").asBoolean());
                lines.add(role + " leader_id names the leader: " + (answer.path("leader_id").asInt() == leader));
                lines.add(role + " leader_ip=" + answer.path("leader_ip").asText());
            }
            // The answers as served, for reading a failure.
            Path out = Files.createDirectories(Paths.get("target", "transcripts"));
            Files.writeString(out.resolve("adminEnsemble." + flavor.name().toLowerCase() + ".json.txt"), raw);
            return lines;
        }
    }

    /** The leader's id once every member's {@code leader} names the same one (bounded wait). */
    private static int agreedLeader(Ensemble ensemble) throws Exception {
        long deadline = System.currentTimeMillis() + AGREE_WITHIN_MS;
        while (true) {
            List<Integer> named = new ArrayList<>();
            for (int port : ensemble.adminPorts) {
                try {
                    named.add(JSON.readTree(get(port, "/commands/leader")).path("leader_id").asInt(-1));
                } catch (IOException e) {
                    named.add(-1);
                }
            }
            int first = named.get(0);
            if (first > 0 && named.stream().allMatch(n -> n == first)) {
                return first;
            }
            assertTrue(System.currentTimeMillis() < deadline, "members do not agree on a leader: " + named);
            ServerProcess.sleep(200);
        }
    }

    private static String get(int port, String path) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + path).openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(10_000);
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            c.disconnect();
        }
    }
}
