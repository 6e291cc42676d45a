package meerkat.compat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/** Sends a four-letter word over a raw socket and reads the reply until the server closes. */
final class FourLetterWords {
    private static final int TIMEOUT_MS = 5000;
    private static final int MAX_REPLY = 4 << 20;

    private FourLetterWords() {
    }

    static String send(int port, String cmd) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), TIMEOUT_MS);
            s.setSoTimeout(TIMEOUT_MS);
            s.getOutputStream().write(cmd.getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
            while (System.nanoTime() < deadline && out.size() < MAX_REPLY) {
                int n;
                try {
                    n = in.read(buf);
                } catch (SocketTimeoutException e) {
                    break; // a server that never closes: keep what came
                } catch (IOException e) {
                    break; // reset after the reply: keep what came
                }
                if (n < 0) {
                    break;
                }
                out.write(buf, 0, n);
            }
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    /** As {@link #send} but "" on any I/O error: for readiness probes. */
    static String sendQuietly(int port, String cmd) {
        try {
            return send(port, cmd);
        } catch (IOException e) {
            return "";
        }
    }
}
