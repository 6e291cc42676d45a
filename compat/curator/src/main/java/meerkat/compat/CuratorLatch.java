package meerkat.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.RetryOneTime;

/**
 * A candidate in Apache Curator's LeaderLatch election on a path, driven from stdin:
 * {@code status} (prints {@code status leader=true|false}), {@code exit} (closes the latch,
 * giving leadership up). Prints {@code started} once in the election and {@code leader} when
 * it wins.
 */
public final class CuratorLatch {
    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(20000)
                .connectionTimeoutMs(15000)
                .retryPolicy(new RetryOneTime(500))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            say("error not connected");
            System.exit(1);
        }
        LeaderLatch latch = new LeaderLatch(client, args[1], args[2]);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                say("leader");
            }

            @Override
            public void notLeader() {
                say("not leader");
            }
        });
        latch.start();
        say("started");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            switch (line.trim()) {
                case "status":
                    say("status leader=" + latch.hasLeadership());
                    break;
                case "exit":
                    latch.close();
                    client.close();
                    System.exit(0);
                    break;
                default:
                    say("error unknown command " + line);
            }
        }
        latch.close();
        client.close();
        System.exit(0);
    }
}
