package meerkat.capture;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A recording TCP proxy bound to 127.0.0.1 on a free port. Every accepted
 * connection is relayed to the upstream ZooKeeper port; both directions are
 * split into ZooKeeper frames (4-byte big-endian length + payload) and every
 * complete frame is recorded, in the order the proxy saw it, before it is
 * forwarded.
 */
public final class FrameProxy implements AutoCloseable {

    /** One recorded frame. */
    public static final class Frame {
        public final long seq;
        public final boolean fromClient;
        public final byte[] payload;

        Frame(long seq, boolean fromClient, byte[] payload) {
            this.seq = seq;
            this.fromClient = fromClient;
            this.payload = payload;
        }
    }

    /** One proxied TCP connection and everything recorded on it. */
    public static final class Conn {
        public final int index;
        public final String label;
        final List<Frame> frames = new ArrayList<>();
        final List<String> notes = new ArrayList<>();
        volatile Socket client;
        volatile Socket upstream;

        Conn(int index, String label) {
            this.index = index;
            this.label = label;
        }

        public synchronized List<Frame> frames() {
            return new ArrayList<>(frames);
        }

        public synchronized List<String> notes() {
            return new ArrayList<>(notes);
        }

        synchronized void add(Frame f) {
            frames.add(f);
        }

        synchronized void note(String s) {
            notes.add(s);
        }

        void closeSockets() {
            closeQuietly(client);
            closeQuietly(upstream);
        }
    }

    private static final int MAX_FRAME = 16 * 1024 * 1024;

    private final int upstreamPort;
    private final ServerSocket listener;
    private static final AtomicLong seq = new AtomicLong();
    private final List<Conn> conns = new ArrayList<>();
    private final Thread acceptThread;
    private volatile String label = "conn";
    private volatile boolean gateOpen = true;
    private volatile boolean closed;

    public FrameProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
        this.listener = new ServerSocket();
        this.listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        this.acceptThread = new Thread(this::acceptLoop, "proxy-accept");
        this.acceptThread.setDaemon(true);
        this.acceptThread.start();
    }

    public int port() {
        return listener.getLocalPort();
    }

    /** Label given to connections accepted from now on. */
    public void setLabel(String label) {
        this.label = label;
    }

    /**
     * While the gate is shut, newly accepted client sockets are held (not
     * connected upstream, nothing read) until it opens again.
     */
    public synchronized void setGate(boolean open) {
        gateOpen = open;
        notifyAll();
    }

    private synchronized boolean awaitGate(long maxMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMillis);
        while (!gateOpen && !closed) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return !closed;
    }

    /** Abruptly closes every live proxied connection (both sides). */
    public void dropAll() {
        List<Conn> snapshot;
        synchronized (conns) {
            snapshot = new ArrayList<>(conns);
        }
        for (Conn c : snapshot) {
            Socket s = c.client;
            if (s != null && !s.isClosed()) {
                c.note("connection dropped by the capture proxy");
            }
            c.closeSockets();
        }
    }

    public List<Conn> connections() {
        synchronized (conns) {
            return new ArrayList<>(conns);
        }
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = listener.accept();
            } catch (IOException e) {
                return;
            }
            Thread t = new Thread(() -> serve(s), "proxy-conn");
            t.setDaemon(true);
            t.start();
        }
    }

    private void serve(Socket clientSock) {
        try {
            if (!awaitGate(30_000)) {
                closeQuietly(clientSock);
                return;
            }
            Socket up = new Socket();
            up.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort), 5_000);
            clientSock.setTcpNoDelay(true);
            up.setTcpNoDelay(true);
            Conn conn;
            synchronized (conns) {
                conn = new Conn(conns.size() + 1, label);
                conn.client = clientSock;
                conn.upstream = up;
                conns.add(conn);
            }
            Thread c2s = new Thread(() -> pump(conn, true), "proxy-c2s-" + conn.index);
            Thread s2c = new Thread(() -> pump(conn, false), "proxy-s2c-" + conn.index);
            c2s.setDaemon(true);
            s2c.setDaemon(true);
            c2s.start();
            s2c.start();
        } catch (IOException | InterruptedException e) {
            closeQuietly(clientSock);
        }
    }

    /** Copies one direction, recording each complete frame before forwarding the bytes. */
    private void pump(Conn conn, boolean fromClient) {
        Socket src = fromClient ? conn.client : conn.upstream;
        Socket dst = fromClient ? conn.upstream : conn.client;
        Splitter splitter = new Splitter(conn, fromClient);
        byte[] buf = new byte[64 * 1024];
        try {
            InputStream in = src.getInputStream();
            OutputStream out = dst.getOutputStream();
            while (true) {
                int n = in.read(buf);
                if (n < 0) {
                    break;
                }
                splitter.feed(buf, n);
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (SocketException e) {
            // closed by the other pump or by dropAll()
        } catch (IOException e) {
            conn.note((fromClient ? "client->server" : "server->client") + " I/O error: " + e);
        } finally {
            splitter.finish();
            conn.closeSockets();
        }
    }

    /** Incremental splitter for one direction. */
    private final class Splitter {
        private final Conn conn;
        private final boolean fromClient;
        private final byte[] lenBuf = new byte[4];
        private int lenHave;
        private byte[] body;
        private int bodyHave;

        Splitter(Conn conn, boolean fromClient) {
            this.conn = conn;
            this.fromClient = fromClient;
        }

        void feed(byte[] b, int n) {
            int i = 0;
            while (i < n) {
                if (body == null) {
                    lenBuf[lenHave++] = b[i++];
                    if (lenHave == 4) {
                        int len = ((lenBuf[0] & 0xff) << 24) | ((lenBuf[1] & 0xff) << 16)
                                | ((lenBuf[2] & 0xff) << 8) | (lenBuf[3] & 0xff);
                        lenHave = 0;
                        if (len < 0 || len > MAX_FRAME) {
                            conn.note(dir() + " implausible frame length " + len + "; stopped splitting");
                            body = null;
                            return;
                        }
                        body = new byte[len];
                        bodyHave = 0;
                        if (len == 0) {
                            emit();
                        }
                    }
                } else {
                    int take = Math.min(n - i, body.length - bodyHave);
                    System.arraycopy(b, i, body, bodyHave, take);
                    bodyHave += take;
                    i += take;
                    if (bodyHave == body.length) {
                        emit();
                    }
                }
            }
        }

        private void emit() {
            conn.add(new Frame(seq.incrementAndGet(), fromClient, body));
            body = null;
            bodyHave = 0;
        }

        void finish() {
            if (lenHave != 0 || body != null) {
                conn.note(dir() + " ended inside a partial frame ("
                        + (body == null ? lenHave + " length bytes" : bodyHave + "/" + body.length + " payload bytes")
                        + ")");
            }
        }

        private String dir() {
            return fromClient ? "client->server" : "server->client";
        }
    }

    @Override
    public void close() {
        closed = true;
        synchronized (this) {
            notifyAll();
        }
        closeQuietly(listener);
        dropAll();
    }

    static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // best effort
        }
    }
}
