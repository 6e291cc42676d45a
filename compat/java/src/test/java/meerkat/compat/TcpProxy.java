package meerkat.compat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP proxy in front of one server, used to cut a client off from
 * the server without the client closing its session.
 *
 * <ul>
 * <li>{@link #freeze()}: bytes already in flight are held, nothing is forwarded
 * in either direction, new connections are refused (accepted and closed at once).
 * The server stops hearing pings; the client stops hearing replies.</li>
 * <li>{@link #thaw()}: forwarding resumes and new connections go through.</li>
 * <li>{@link #dropConnections()}: closes the current connections.</li>
 * </ul>
 */
final class TcpProxy implements AutoCloseable {
    private static final long MAX_FREEZE_MS = 60_000;

    private final ServerSocket listener;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean frozen;
    private volatile boolean closed;

    TcpProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket();
        listener.bind(new InetSocketAddress("127.0.0.1", 0));
        Thread t = new Thread(this::acceptLoop, "proxy-accept-" + listener.getLocalPort());
        t.setDaemon(true);
        t.start();
    }

    String connectString() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    void freeze() {
        frozen = true;
    }

    void thaw() {
        frozen = false;
    }

    /** Closes every connection now; the client notices at once and reconnects (if not frozen). */
    void dropConnections() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return; // listener closed
            }
            if (frozen) {
                closeQuietly(client);
                continue;
            }
            try {
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress("127.0.0.1", targetPort), 5000);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, "up");
                pump(upstream, client, "down");
            } catch (IOException e) {
                closeQuietly(client);
            }
        }
    }

    private void pump(Socket from, Socket to, String dir) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (!closed) {
                    int n = in.read(buf);
                    if (n < 0) {
                        break;
                    }
                    // Bytes read while frozen are held until thaw (or until the bound).
                    long heldSince = System.currentTimeMillis();
                    while (frozen && !closed && System.currentTimeMillis() - heldSince < MAX_FREEZE_MS) {
                        ServerProcess.sleep(10);
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException | IllegalStateException e) {
                // peer closed; fall through
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "proxy-" + dir + "-" + listener.getLocalPort());
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }

    @Override
    public void close() {
        closed = true;
        frozen = false;
        try {
            listener.close();
        } catch (IOException ignored) {
            // nothing to do
        }
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
