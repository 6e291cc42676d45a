package meerkat.capture;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns recorded connections into vector files:
 * <pre>
 * # comment
 * C &lt;op&gt; &lt;hex&gt;
 * S &lt;op&gt; &lt;hex&gt;
 * </pre>
 * where op is {@code connect}, {@code event}, or the decimal opcode of the
 * request (for replies: of the request with the same xid).
 */
final class VectorWriter {

    static final String ZK_VERSION = "3.9.3";

    private static final Map<Integer, String> OPS = new HashMap<>();
    private static final Map<Integer, String> ERRS = new HashMap<>();

    static {
        String[][] ops = {
            {"0", "notification"}, {"1", "create"}, {"2", "delete"}, {"3", "exists"}, {"4", "getData"},
            {"5", "setData"}, {"6", "getACL"}, {"7", "setACL"}, {"8", "getChildren"}, {"9", "sync"},
            {"11", "ping"}, {"12", "getChildren2"}, {"13", "check"}, {"14", "multi"}, {"15", "create2"},
            {"16", "reconfig"}, {"17", "checkWatches"}, {"18", "removeWatches"}, {"19", "createContainer"},
            {"20", "deleteContainer"}, {"21", "createTTL"}, {"22", "multiRead"}, {"100", "auth"},
            {"101", "setWatches"}, {"102", "sasl"}, {"103", "getEphemerals"}, {"104", "getAllChildrenNumber"},
            {"105", "setWatches2"}, {"106", "addWatch"}, {"107", "whoAmI"}, {"-10", "createSession"},
            {"-11", "closeSession"}, {"-1", "error"},
        };
        for (String[] o : ops) {
            OPS.put(Integer.parseInt(o[0]), o[1]);
        }
        String[][] errs = {
            {"0", "OK"}, {"-1", "SystemError"}, {"-2", "RuntimeInconsistency"}, {"-3", "DataInconsistency"},
            {"-4", "ConnectionLoss"}, {"-5", "MarshallingError"}, {"-6", "Unimplemented"},
            {"-7", "OperationTimeout"}, {"-8", "BadArguments"}, {"-12", "UnknownSession"},
            {"-13", "NewConfigNoQuorum"}, {"-14", "ReconfigInProgress"}, {"-100", "APIError"},
            {"-101", "NoNode"}, {"-102", "NoAuth"}, {"-103", "BadVersion"}, {"-108", "NoChildrenForEphemerals"},
            {"-110", "NodeExists"}, {"-111", "NotEmpty"}, {"-112", "SessionExpired"},
            {"-113", "InvalidCallback"}, {"-114", "InvalidACL"}, {"-115", "AuthFailed"},
            {"-118", "SessionMoved"}, {"-119", "NotReadOnly"}, {"-120", "EphemeralOnLocalSession"},
            {"-121", "NoWatcher"}, {"-122", "RequestTimeout"}, {"-123", "ReconfigDisabled"},
            {"-124", "SessionClosedRequireSaslAuth"}, {"-125", "QuotaExceeded"}, {"-127", "ThrottledOp"},
        };
        for (String[] e : errs) {
            ERRS.put(Integer.parseInt(e[0]), e[1]);
        }
    }

    private VectorWriter() {
    }

    /** Writes one file per connection that carried at least one frame; returns the file count. */
    static int write(Path dir, List<FrameProxy.Conn> conns) throws IOException {
        Files.createDirectories(dir);
        List<FrameProxy.Conn> sorted = new ArrayList<>();
        for (FrameProxy.Conn c : conns) {
            if (!c.frames().isEmpty()) {
                sorted.add(c);
            }
        }
        sorted.sort(Comparator.comparingLong(c -> c.frames().stream().mapToLong(f -> f.seq).min().orElse(0)));
        Map<String, Integer> used = new LinkedHashMap<>();
        int n = 0;
        for (FrameProxy.Conn c : sorted) {
            int k = used.merge(c.label, 1, Integer::sum);
            String name = k == 1 ? c.label : c.label + "-" + k;
            Files.writeString(dir.resolve(name + ".txt"), render(name, c), StandardCharsets.UTF_8);
            n++;
        }
        return n;
    }

    static String render(String name, FrameProxy.Conn c) {
        List<FrameProxy.Frame> frames = c.frames();
        frames.sort(Comparator.comparingLong(f -> f.seq));
        StringBuilder sb = new StringBuilder();
        sb.append("# ").append(name).append('\n');
        sb.append("# One TCP connection between the Apache ZooKeeper ").append(ZK_VERSION)
          .append(" Java client and an Apache ZooKeeper ").append(ZK_VERSION).append(" server,\n");
        sb.append("# recorded by compat/capture (see README.md). Payloads exclude the 4-byte length prefix.\n");
        sb.append("# Lines are in the order the recording proxy saw complete frames.\n");

        Map<Integer, Integer> opByXid = new HashMap<>();
        boolean clientConnectSeen = false;
        boolean serverConnectSeen = false;
        for (FrameProxy.Frame f : frames) {
            ByteBuffer bb = ByteBuffer.wrap(f.payload);
            String op;
            String comment;
            if (f.fromClient) {
                if (!clientConnectSeen) {
                    clientConnectSeen = true;
                    op = "connect";
                    comment = describeConnectRequest(bb);
                } else {
                    int xid = bb.getInt();
                    int type = bb.getInt();
                    opByXid.put(xid, type);
                    op = Integer.toString(type);
                    comment = "request xid=" + xid + " " + OPS.getOrDefault(type, "?") + describeRequestBody(type, bb);
                }
            } else {
                if (!serverConnectSeen) {
                    serverConnectSeen = true;
                    op = "connect";
                    comment = describeConnectResponse(bb);
                } else {
                    int xid = bb.getInt();
                    long zxid = bb.getLong();
                    int err = bb.getInt();
                    String hdr = "xid=" + xid + " zxid=0x" + Long.toHexString(zxid) + " err=" + err
                            + " (" + ERRS.getOrDefault(err, "?") + ")";
                    if (xid == -1) {
                        op = "event";
                        comment = "watch event " + hdr + describeEvent(bb);
                    } else {
                        Integer type = opByXid.get(xid);
                        if (type == null) {
                            op = "unknown";
                            comment = "reply to an unseen request " + hdr;
                        } else {
                            op = Integer.toString(type);
                            comment = "reply " + hdr + " to " + OPS.getOrDefault(type, "?");
                        }
                    }
                }
            }
            sb.append("# ").append(comment).append('\n');
            sb.append(f.fromClient ? 'C' : 'S').append(' ').append(op).append(' ').append(hex(f.payload)).append('\n');
        }
        for (String note : c.notes()) {
            sb.append("# note: ").append(note).append('\n');
        }
        return sb.toString();
    }

    private static String describeConnectRequest(ByteBuffer bb) {
        try {
            int proto = bb.getInt();
            long lastZxid = bb.getLong();
            int timeout = bb.getInt();
            long sid = bb.getLong();
            int pwLen = bb.getInt();
            bb.position(bb.position() + Math.max(pwLen, 0));
            String ro = bb.hasRemaining() ? " readOnly=" + (bb.get() != 0) : " (no readOnly byte)";
            return "ConnectRequest protocolVersion=" + proto + " lastZxidSeen=0x" + Long.toHexString(lastZxid)
                    + " timeOut=" + timeout + " sessionId=0x" + Long.toHexString(sid) + " passwdLen=" + pwLen + ro;
        } catch (RuntimeException e) {
            return "ConnectRequest (undecodable: " + e + ")";
        }
    }

    private static String describeConnectResponse(ByteBuffer bb) {
        try {
            int proto = bb.getInt();
            int timeout = bb.getInt();
            long sid = bb.getLong();
            int pwLen = bb.getInt();
            bb.position(bb.position() + Math.max(pwLen, 0));
            String ro = bb.hasRemaining() ? " readOnly=" + (bb.get() != 0) : " (no readOnly byte)";
            String expired = (timeout == 0 && sid == 0) ? " -- session expired/invalid" : "";
            return "ConnectResponse protocolVersion=" + proto + " timeOut=" + timeout + " sessionId=0x"
                    + Long.toHexString(sid) + " passwdLen=" + pwLen + ro + expired;
        } catch (RuntimeException e) {
            return "ConnectResponse (undecodable: " + e + ")";
        }
    }

    private static String describeRequestBody(int type, ByteBuffer bb) {
        try {
            switch (type) {
                case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 12:
                case 15: case 17: case 18: case 19: case 21: case 103: case 104: case 106:
                    return " path=" + ustring(bb);
                case 100: {
                    int authType = bb.getInt();
                    return " type=" + authType + " scheme=" + ustring(bb);
                }
                case 101: case 105:
                    return " relativeZxid=0x" + Long.toHexString(bb.getLong());
                default:
                    return "";
            }
        } catch (RuntimeException e) {
            return "";
        }
    }

    private static String describeEvent(ByteBuffer bb) {
        try {
            int type = bb.getInt();
            int state = bb.getInt();
            return " type=" + type + " state=" + state + " path=" + ustring(bb);
        } catch (RuntimeException e) {
            return "";
        }
    }

    private static String ustring(ByteBuffer bb) {
        int len = bb.getInt();
        if (len < 0) {
            return "(null)";
        }
        byte[] s = new byte[len];
        bb.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }
}
