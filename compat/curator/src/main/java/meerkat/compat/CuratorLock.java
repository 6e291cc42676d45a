package meerkat.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

/**
 * Holds Apache Curator's InterProcessMutex on a path, driven line by line from stdin:
 * {@code acquire} (in a background thread; prints {@code acquired} when held), {@code status}
 * (prints {@code status held=true|false}), {@code release} (prints {@code released}),
 * {@code exit}. Prints {@code ready} once connected.
 */
public final class CuratorLock {
    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(20000)
                .connectionTimeoutMs(15000)
                .retryPolicy(new RetryOneTime(500))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
            say("error not connected");
            System.exit(1);
        }
        InterProcessMutex mutex = new InterProcessMutex(client, path);
        // The mutex is re-entrant per thread, so one thread does every lock operation.
        java.util.concurrent.ExecutorService lockThread = java.util.concurrent.Executors.newSingleThreadExecutor();
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            switch (line.trim()) {
                case "acquire":
                    lockThread.submit(() -> {
                        try {
                            mutex.acquire();
                            say("acquired");
                        } catch (Exception e) {
                            say("error " + e);
                        }
                    });
                    break;
                case "status":
                    say("status held=" + mutex.isAcquiredInThisProcess());
                    break;
                case "release":
                    lockThread.submit(() -> {
                        try {
                            mutex.release();
                            say("released");
                        } catch (Exception e) {
                            say("error " + e);
                        }
                    }).get();
                    break;
                case "exit":
                    lockThread.shutdownNow();
                    client.close();
                    System.exit(0);
                    break;
                default:
                    say("error unknown command " + line);
            }
        }
        client.close();
        System.exit(0);
    }
}
