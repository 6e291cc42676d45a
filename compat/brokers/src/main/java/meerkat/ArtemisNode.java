package meerkat;

import java.nio.file.Path;
import org.apache.activemq.artemis.core.server.ActiveMQServer;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;

/**
 * One ActiveMQ Artemis broker of a replicated live/backup pair, embedded, on the broker.xml
 * that `meerkat bench` wrote. Prints `started` once running; a backup then prints
 * `backup in sync` once it holds a replica of the live broker's journal, so the job starts on
 * a replicated pair.
 *
 * <pre>ArtemisNode BROKER_XML</pre>
 */
public final class ArtemisNode {
    /** How long a backup may take to catch up with the live broker. */
    private static final long SYNC_MILLIS_MAX = 120_000;

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ArtemisNode BROKER_XML");
            System.exit(2);
        }
        EmbeddedActiveMQ embedded = new EmbeddedActiveMQ();
        embedded.setConfigResourcePath(Path.of(args[0]).toUri().toString());
        embedded.start();
        System.out.println("started");
        ActiveMQServer server = embedded.getActiveMQServer();
        if (server.getHAPolicy().isBackup()) {
            long deadline = System.currentTimeMillis() + SYNC_MILLIS_MAX;
            while (!server.isReplicaSync()) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("backup not in sync after " + SYNC_MILLIS_MAX + " ms");
                    System.exit(1);
                }
                Thread.sleep(50);
            }
            System.out.println("backup in sync");
        }
        // Runs until killed.
        Thread.currentThread().join();
    }
}
