package meerkat.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.zip.CRC32;
import org.apache.zookeeper.data.Stat;

/**
 * Everything a scenario observed on one server, as lines of text, normalised so
 * that two correct servers produce the same lines:
 * <ul>
 * <li>zxids become Z1, Z2, ... in order of first appearance (0 stays 0, -1 is "-");
 * the last line states their real order, e.g. "Z1 < Z3 < Z2";</li>
 * <li>session ids become S1, S2, ... (also in ephemeralOwner);</li>
 * <li>times are dropped from the lines but checked (ctime <= mtime, near now).</li>
 * </ul>
 * Checks of known ZooKeeper behaviour are kept apart from the lines: they must
 * hold on every server, so a bug shared by both servers still fails.
 */
final class Transcript {
    private final List<String> lines = new ArrayList<>();
    private final Map<Long, String> zxids = new LinkedHashMap<>();
    private final Map<Long, String> sessions = new LinkedHashMap<>();
    private final List<String> failedChecks = new ArrayList<>();

    void add(String line) {
        lines.add(line);
    }

    int size() {
        return lines.size();
    }

    /** Takes back the lines written since a mark (to reorder them). */
    List<String> removeFrom(int mark) {
        List<String> tail = new ArrayList<>(lines.subList(mark, lines.size()));
        lines.subList(mark, lines.size()).clear();
        return tail;
    }

    String zxid(long z) {
        if (z == 0) {
            return "0";
        }
        if (z == -1) {
            return "-";
        }
        return zxids.computeIfAbsent(z, k -> "Z" + (zxids.size() + 1));
    }

    String session(long id) {
        if (id == 0) {
            return "0";
        }
        return sessions.computeIfAbsent(id, k -> "S" + (sessions.size() + 1));
    }

    /** A Stat without times; checks the times on the side. */
    String stat(Stat st) {
        if (st == null) {
            return "null";
        }
        check(st.getCtime() <= st.getMtime(), "ctime <= mtime in " + st.toString().trim());
        if (st.getCzxid() != 0) {
            long now = System.currentTimeMillis();
            check(Math.abs(now - st.getCtime()) < 10 * 60_000L,
                    "ctime is wall-clock milliseconds near now (got " + st.getCtime() + ")");
        }
        return "Stat{cz=" + zxid(st.getCzxid())
                + " mz=" + zxid(st.getMzxid())
                + " pz=" + zxid(st.getPzxid())
                + " v=" + st.getVersion()
                + " cv=" + st.getCversion()
                + " av=" + st.getAversion()
                + " owner=" + session(st.getEphemeralOwner())
                + " len=" + st.getDataLength()
                + " nc=" + st.getNumChildren() + "}";
    }

    /** Short printable data as text, anything else as its length and checksum. */
    static String data(byte[] d) {
        if (d == null) {
            return "null";
        }
        boolean printable = d.length <= 64;
        for (int i = 0; printable && i < d.length; i++) {
            printable = d[i] >= 0x20 && d[i] < 0x7f;
        }
        if (printable) {
            return "'" + new String(d, StandardCharsets.US_ASCII) + "'";
        }
        CRC32 crc = new CRC32();
        crc.update(d);
        return "<" + d.length + " bytes crc=" + Long.toHexString(crc.getValue()) + ">";
    }

    void check(boolean ok, String what) {
        if (!ok) {
            failedChecks.add(what);
            lines.add("!! check failed: " + what);
        }
    }

    List<String> failedChecks() {
        return failedChecks;
    }

    /** The lines plus the real order of the zxid labels. */
    List<String> finish() {
        List<String> out = new ArrayList<>(lines);
        if (!zxids.isEmpty()) {
            String order = zxids.entrySet().stream()
                    .sorted(Map.Entry.comparingByKey(Comparator.naturalOrder()))
                    .map(Map.Entry::getValue)
                    .collect(Collectors.joining(" < "));
            out.add("zxid order: " + order);
        }
        return out;
    }
}
