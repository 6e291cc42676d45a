package meerkat.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.admin.ZooKeeperAdmin;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Stat;

/**
 * One ZooKeeper client session whose every call is written to the transcript as
 * "label op args -> result". Errors are recorded as "ERR CodeName"; arguments the
 * Java client itself rejects as "client IllegalArgumentException".
 *
 * <p>Watch events of all this session's watchers go to one queue in arrival order
 * and are written only when the scenario asks for them ({@link #events}).
 */
final class Session implements AutoCloseable {
    static final List<ACL> OPEN = ZooDefs.Ids.OPEN_ACL_UNSAFE;
    private static final long EVENT_WAIT_MS = 5000;
    private static final long QUIET_MS = 150;

    final String label;
    final ZooKeeper zk;
    private final Transcript t;
    private final LinkedBlockingQueue<String[]> queue;
    /** The error code of the last call, or null after success or a client-side error. */
    KeeperException.Code lastError;
    private boolean closed;

    Session(String label, ZooKeeper zk, Transcript t, LinkedBlockingQueue<String[]> queue) {
        this.label = label;
        this.zk = zk;
        this.t = t;
        this.queue = queue;
    }

    /** A watcher that reports into this session's event queue under the given name. */
    static Watcher recorder(String name, LinkedBlockingQueue<String[]> queue) {
        return new Watcher() {
            @Override
            public void process(WatchedEvent e) {
                queue.add(new String[] {name, e.getType().name(), e.getState().name(),
                        String.valueOf(e.getPath()), String.valueOf(e.getZxid())});
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }

    Watcher watcher(String name) {
        return recorder(name, queue);
    }

    static byte[] bytes(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------- calls

    @FunctionalInterface
    interface Call<T> {
        T run() throws KeeperException, InterruptedException;
    }

    /** Runs one call and records its outcome; returns null on error. */
    <T> T call(String desc, Call<T> call, java.util.function.Function<T, String> fmt) {
        try {
            T v = call.run();
            lastError = null;
            t.add(label + " " + desc + " -> " + fmt.apply(v));
            return v;
        } catch (KeeperException e) {
            lastError = e.code();
            t.add(label + " " + desc + " -> " + error(e));
            return null;
        } catch (IllegalArgumentException e) {
            lastError = null;
            t.add(label + " " + desc + " -> client IllegalArgumentException");
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private String error(KeeperException e) {
        String s = "ERR " + e.code();
        if (e.getResults() != null) {
            s += " results=" + results(e.getResults());
        }
        return s;
    }

    String create(String path, String data, CreateMode mode) {
        return create(path, data, OPEN, mode);
    }

    String create(String path, String data, List<ACL> acl, CreateMode mode) {
        return call("create " + path + " " + mode + " " + Transcript.data(bytes(data)) + " acl=" + acl(acl),
                () -> zk.create(path, bytes(data), acl, mode), p -> p);
    }

    /** create with a Stat out-parameter: the client sends create2 (or createContainer / createTTL). */
    Stat create2(String path, String data, CreateMode mode, long ttl) {
        Stat st = new Stat();
        String desc = "create2 " + path + " " + mode + (ttl >= 0 ? " ttl=" + ttl : "") + " " + Transcript.data(bytes(data));
        String p = call(desc, () -> ttl >= 0
                        ? zk.create(path, bytes(data), OPEN, mode, st, ttl)
                        : zk.create(path, bytes(data), OPEN, mode, st),
                r -> r + " " + t.stat(st));
        return p == null ? null : st;
    }

    String createRaw(String path, byte[] data, CreateMode mode) {
        return call("create " + path + " " + mode + " " + Transcript.data(data),
                () -> zk.create(path, data, OPEN, mode), p -> p);
    }

    boolean delete(String path, int version) {
        return call("delete " + path + " v=" + version, () -> {
            zk.delete(path, version);
            return "ok";
        }, r -> r) != null;
    }

    Stat exists(String path, Watcher w) {
        return call("exists " + path + watch(w), () -> zk.exists(path, w), t::stat);
    }

    Stat exists(String path, boolean watch) {
        return call("exists " + path + (watch ? " watch=default" : ""), () -> zk.exists(path, watch), t::stat);
    }

    byte[] getData(String path, Watcher w) {
        Stat st = new Stat();
        return call("getData " + path + watch(w), () -> zk.getData(path, w, st),
                d -> Transcript.data(d) + " " + t.stat(st));
    }

    byte[] getData(String path) {
        return getData(path, null);
    }

    Stat setData(String path, String data, int version) {
        return setDataRaw(path, bytes(data), version);
    }

    Stat setDataRaw(String path, byte[] data, int version) {
        return call("setData " + path + " " + Transcript.data(data) + " v=" + version,
                () -> zk.setData(path, data, version), t::stat);
    }

    List<String> getChildren(String path, Watcher w) {
        return call("getChildren " + path + watch(w), () -> zk.getChildren(path, w), Session::sorted);
    }

    List<String> getChildren2(String path, Watcher w) {
        Stat st = new Stat();
        return call("getChildren2 " + path + watch(w), () -> zk.getChildren(path, w, st),
                c -> sorted(c) + " " + t.stat(st));
    }

    List<ACL> getACL(String path) {
        Stat st = new Stat();
        return call("getACL " + path, () -> zk.getACL(path, st), a -> acl(a) + " " + t.stat(st));
    }

    /**
     * getACL with the entries sorted: for lists made by the "auth" scheme, which
     * ZooKeeper expands in the hash order of the session's identities (a
     * ConcurrentHashMap key set), an order no client may rely on.
     */
    List<ACL> getACLSorted(String path) {
        Stat st = new Stat();
        return call("getACL(sorted) " + path, () -> zk.getACL(path, st), a -> {
            List<String> l = new ArrayList<>();
            a.forEach(x -> l.add(acl(List.of(x))));
            l.sort(null);
            return l + " " + t.stat(st);
        });
    }

    Stat setACL(String path, List<ACL> acl, int aversion) {
        return call("setACL " + path + " " + acl(acl) + " av=" + aversion, () -> zk.setACL(path, acl, aversion), t::stat);
    }

    boolean sync(String path) {
        return call("sync " + path, () -> {
            zk.sync(path);
            return "ok";
        }, r -> r) != null;
    }

    /** getConfig reads /zookeeper/config (the client adds no chroot). */
    byte[] getConfig(Watcher w) {
        Stat st = new Stat();
        return call("getConfig" + watch(w), () -> zk.getConfig(w, st), d -> Transcript.data(d) + " " + t.stat(st));
    }

    /** reconfig through ZooKeeperAdmin (the session must come from Scenario.connectAdmin). */
    byte[] reconfigure(String joining, String leaving, String members) {
        Stat st = new Stat();
        return call("reconfig joining=" + joining + " leaving=" + leaving + " members=" + members,
                () -> ((ZooKeeperAdmin) zk).reconfigure(joining, leaving, members, -1, st),
                d -> Transcript.data(d) + " " + t.stat(st));
    }

    List<OpResult> multi(String desc, List<Op> ops) {
        return call("multi " + desc, () -> zk.multi(ops), this::results);
    }

    List<String> getEphemerals(String prefix) {
        return call("getEphemerals" + (prefix == null ? "" : " " + prefix),
                () -> prefix == null ? zk.getEphemerals() : zk.getEphemerals(prefix), Session::sorted);
    }

    Integer getAllChildrenNumber(String path) {
        return call("getAllChildrenNumber " + path, () -> zk.getAllChildrenNumber(path), String::valueOf);
    }

    boolean addWatch(String path, Watcher w, AddWatchMode mode) {
        return call("addWatch " + path + " " + mode + watch(w), () -> {
            zk.addWatch(path, w, mode);
            return "ok";
        }, r -> r) != null;
    }

    boolean removeWatches(String path, Watcher w, Watcher.WatcherType type) {
        return call("removeWatches " + path + watch(w) + " type=" + type, () -> {
            zk.removeWatches(path, w, type, false);
            return "ok";
        }, r -> r) != null;
    }

    boolean removeAllWatches(String path, Watcher.WatcherType type) {
        return call("removeAllWatches " + path + " type=" + type, () -> {
            zk.removeAllWatches(path, type, false);
            return "ok";
        }, r -> r) != null;
    }

    void addAuth(String scheme, String auth) {
        zk.addAuthInfo(scheme, bytes(auth));
        t.add(label + " addAuthInfo " + scheme + " " + auth);
    }

    /** Sorted: ZooKeeper lists a session's identities in hash-set order. */
    List<ClientInfo> whoAmI() {
        return call("whoAmI", () -> zk.whoAmI(),
                l -> l.stream().map(c -> c.getAuthScheme() + ":" + c.getUser()).sorted().collect(Collectors.toList()).toString());
    }

    // ---------------------------------------------------------------- events

    /**
     * Waits (bounded) for exactly n events, writes them, then checks that no
     * more arrive shortly after. Events that reach several watchers at once are
     * delivered by the client in a random watcher order, so runs of the same
     * event are sorted by watcher name.
     */
    List<String> events(int n) {
        return events(n, EVENT_WAIT_MS);
    }

    List<String> events(int n, long waitMs) {
        List<String[]> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + waitMs;
        try {
            while (got.size() < n) {
                long left = deadline - System.currentTimeMillis();
                String[] e = left > 0 ? queue.poll(left, TimeUnit.MILLISECONDS) : null;
                if (e == null) {
                    break;
                }
                got.add(e);
            }
            if (got.size() < n) {
                t.add(label + " events: only " + got.size() + " of " + n + " within " + waitMs + " ms");
            }
            String[] extra;
            while ((extra = queue.poll(QUIET_MS, TimeUnit.MILLISECONDS)) != null) {
                got.add(extra);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        List<String> out = new ArrayList<>();
        int i = 0;
        while (i < got.size()) {
            int j = i + 1;
            while (j < got.size() && sameEvent(got.get(i), got.get(j))) {
                j++;
            }
            List<String[]> run = new ArrayList<>(got.subList(i, j));
            run.sort(Comparator.comparing(e -> e[0]));
            for (String[] e : run) {
                out.add(formatEvent(e, out.size() >= n));
            }
            i = j;
        }
        out.forEach(t::add);
        return out;
    }

    /**
     * As {@link #events(int)} but sorted: for events whose relative order the
     * server does not define (e.g. ephemerals of one session are deleted in hash order).
     */
    List<String> eventsUnordered(int n, long waitMs) {
        // Let events() write as usual, then take its lines back and write them sorted.
        int mark = t.size();
        events(n, waitMs);
        List<String> lines = t.removeFrom(mark);
        lines.sort(null);
        lines.forEach(t::add);
        return lines;
    }

    /**
     * Waits (bounded) for this session's default watcher to report SyncConnected,
     * skipping nothing else; records the outcome.
     */
    boolean awaitConnected(long waitMs) {
        long deadline = System.currentTimeMillis() + waitMs;
        try {
            while (true) {
                long left = deadline - System.currentTimeMillis();
                String[] e = left > 0 ? queue.poll(left, TimeUnit.MILLISECONDS) : null;
                if (e == null) {
                    t.add(label + " not connected within " + waitMs + " ms");
                    return false;
                }
                if ("None".equals(e[1]) && "SyncConnected".equals(e[2])) {
                    t.add(label + " connected session=" + t.session(zk.getSessionId()) + " timeout=" + zk.getSessionTimeout());
                    return true;
                }
                t.add(formatEvent(e, false));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Shorthand: no events expected. */
    void noEvents() {
        events(0);
    }

    private static boolean sameEvent(String[] a, String[] b) {
        for (int k = 1; k < a.length; k++) {
            if (!a[k].equals(b[k])) {
                return false;
            }
        }
        return true;
    }

    private String formatEvent(String[] e, boolean unexpected) {
        return label + (unexpected ? " UNEXPECTED event " : " event ") + e[0] + " " + e[1] + " " + e[2] + " " + e[3]
                + " zxid=" + t.zxid(Long.parseLong(e[4]));
    }

    // ---------------------------------------------------------------- formatting

    private static String watch(Watcher w) {
        return w == null ? "" : " watch=" + w;
    }

    static String sorted(List<String> l) {
        List<String> c = new ArrayList<>(l);
        c.sort(null);
        return c.toString();
    }

    static String acl(List<ACL> acl) {
        return acl.stream().map(a -> a.getPerms() + ":" + a.getId().getScheme() + ":" + a.getId().getId())
                .collect(Collectors.toList()).toString();
    }

    String results(List<OpResult> rs) {
        List<String> out = new ArrayList<>();
        for (OpResult r : rs) {
            if (r instanceof OpResult.CreateResult) {
                OpResult.CreateResult c = (OpResult.CreateResult) r;
                out.add("Create " + c.getPath() + (c.getStat() == null ? "" : " " + t.stat(c.getStat())));
            } else if (r instanceof OpResult.DeleteResult) {
                out.add("Delete");
            } else if (r instanceof OpResult.SetDataResult) {
                out.add("SetData " + t.stat(((OpResult.SetDataResult) r).getStat()));
            } else if (r instanceof OpResult.CheckResult) {
                out.add("Check");
            } else if (r instanceof OpResult.GetDataResult) {
                OpResult.GetDataResult g = (OpResult.GetDataResult) r;
                out.add("GetData " + Transcript.data(g.getData()) + " " + t.stat(g.getStat()));
            } else if (r instanceof OpResult.GetChildrenResult) {
                out.add("GetChildren " + sorted(((OpResult.GetChildrenResult) r).getChildren()));
            } else if (r instanceof OpResult.ErrorResult) {
                int err = ((OpResult.ErrorResult) r).getErr();
                out.add("Error " + err + " " + KeeperException.Code.get(err));
            } else {
                out.add(r.getClass().getSimpleName());
            }
        }
        return out.toString();
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        closed = true;
        try {
            zk.close(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes the session and writes that down (closing removes its ephemerals). */
    void closeRecorded() {
        close();
        t.add(label + " closed");
    }
}
