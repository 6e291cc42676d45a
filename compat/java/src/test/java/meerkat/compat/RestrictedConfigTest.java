package meerkat.compat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A second server pair with zoo.cfg defaults where the shared pair opens things
 * up: the default four-letter-word whitelist (srvr only) and maxClientCnxns=3.
 */
class RestrictedConfigTest {
    private static Servers.Pair pair;

    @BeforeAll
    static void start() {
        Map<String, String> overrides = new HashMap<>();
        overrides.put("4lw.commands.whitelist", null);
        overrides.put("maxClientCnxns", "3");
        pair = Servers.Pair.start("restricted", overrides);
    }

    @AfterAll
    static void stop() {
        if (pair != null) {
            pair.close();
        }
    }

    /** With the default whitelist only srvr answers; the rest get a fixed sentence. */
    @Test
    void defaultWhitelist() {
        Differential.run(pair, "defaultWhitelist", s -> {
            for (String cmd : List.of("ruok", "stat", "mntr", "conf", "envi", "cons", "dump", "wchs", "wchc",
                    "wchp", "isro", "crst", "srst", "dirs")) {
                String reply = FourLetterWords.send(s.server.port, cmd);
                s.t.add(cmd + " -> " + reply.replace("\n", "\\n"));
                s.check(reply.equals(cmd + " is not executed because it is not in the whitelist.\n"),
                        cmd + " is refused with the whitelist sentence (and a newline)");
            }
            String srvr = FourLetterWords.send(s.server.port, "srvr");
            FourLetterWordTest.prefixes(s, "srvr", srvr);
            s.check(srvr.startsWith("Zookeeper version: "), "srvr is whitelisted by default");
            // Clients still work.
            Session c = s.connect("c1");
            c.exists("/", false);
        });
    }

    /** maxClientCnxns counts connections per client address; one over the limit waits for a free slot. */
    @Test
    void connectionLimit() {
        Differential.run(pair, "connectionLimit", s -> {
            Session c1 = s.connect("c1");
            s.connect("c2");
            s.connect("c3");
            Session c4 = s.open("c4");
            boolean early = c4.awaitConnected(3000);
            c1.closeRecorded();
            boolean later = c4.awaitConnected(10_000);
            s.check(!early && later, "the 4th connection gets in only after one of 3 closes");
        });
    }
}
