package meerkat.compat;

import java.util.Arrays;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.junit.jupiter.api.Test;

/**
 * Data near and over jute.maxbuffer (0xfffff = 1,048,575 bytes per packet). A
 * packet over the limit makes the server drop that connection: the client sees
 * ConnectionLoss, reconnects to the same session, and other sessions carry on.
 */
class LargeDataTest extends CompatTest {
    static final int MAX_BUFFER = 0xfffff;

    private static byte[] filled(int n, int seed) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) seed);
        for (int i = 0; i < n; i += 4096) {
            b[i] = (byte) (i >>> 12); // not all one byte, so a checksum means something
        }
        return b;
    }

    @Test
    void largeData() {
        Differential.run("largeData", s -> {
            Session c = s.connect("c1");
            Session bystander = s.connect("bystander");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            long sid = c.zk.getSessionId();

            // Near the limit: the request and the getData reply both fit in one packet.
            int near = MAX_BUFFER - 1024;
            c.createRaw(s.p("near"), filled(near, 7), CreateMode.PERSISTENT);
            byte[] back = c.getData(s.p("near"));
            c.setDataRaw(s.p("near"), filled(near - 1, 9), 0);
            bystander.getData(s.p("near"));

            // Over the limit: the server closes the connection.
            c.createRaw(s.p("over"), filled(MAX_BUFFER + 1, 3), CreateMode.PERSISTENT);
            Code overCode = c.lastError;
            // The client reconnects on its own: Disconnected, then SyncConnected (same session).
            c.events(2, 10_000);
            c.exists(s.p("over"), false);
            c.setDataRaw(s.p("near"), filled(MAX_BUFFER + 100, 4), -1);
            c.events(2, 10_000);
            c.getData(s.p("near"));
            bystander.exists(s.p("near"), false);
            bystander.getChildren2(s.root(), null);

            s.check(back != null && back.length == near, "near-limit data reads back whole");
            s.check(c.zk.getSessionId() == sid, "the client got its session back after the dropped connection");
            s.check(overCode == Code.CONNECTIONLOSS, "over-limit create gives ConnectionLoss, got " + overCode);
        });
    }
}
