package meerkat.compat;

import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.junit.jupiter.api.Test;

/** multi (atomic writes) and multiRead (independent reads). */
class MultiTest extends CompatTest {

    private static byte[] b(String s) {
        return Session.bytes(s);
    }

    @Test
    void multiSuccess() {
        Differential.run("multiSuccess", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            List<OpResult> r = c.multi("[create a, create a/b, create seq-, create2-style ttl, container, setData a, check a v1]",
                    List.of(
                            Op.create(s.p("a"), b("1"), Session.OPEN, CreateMode.PERSISTENT),
                            Op.create(s.p("a/b"), b("2"), Session.OPEN, CreateMode.EPHEMERAL),
                            Op.create(s.p("seq-"), b(""), Session.OPEN, CreateMode.PERSISTENT_SEQUENTIAL),
                            Op.create(s.p("seq-"), b(""), Session.OPEN, CreateMode.PERSISTENT_SEQUENTIAL),
                            Op.create(s.p("ttl"), b(""), Session.OPEN, CreateMode.PERSISTENT_WITH_TTL, 60_000),
                            Op.create(s.p("box"), b(""), Session.OPEN, CreateMode.CONTAINER),
                            Op.setData(s.p("a"), b("one"), 0),
                            Op.check(s.p("a"), 1)));
            c.getData(s.p("a"));
            c.getData(s.p("a/b"));
            c.getChildren2(s.root(), null);
            // Delete and re-create inside one transaction.
            c.multi("[delete a/b, delete a, create a]", List.of(
                    Op.delete(s.p("a/b"), -1),
                    Op.delete(s.p("a"), 1),
                    Op.create(s.p("a"), b("again"), Session.OPEN, CreateMode.PERSISTENT)));
            c.getData(s.p("a"));
            c.multi("[]", List.of());
            s.check(r != null && r.size() == 8, "8 results for 8 ops");
            s.check(r != null && ((OpResult.CreateResult) r.get(2)).getPath().equals(s.p("seq-0000000001"))
                    && ((OpResult.CreateResult) r.get(3)).getPath().equals(s.p("seq-0000000002")),
                    "sequential creates in one multi see the earlier ops of the same multi (a is create 0)");
        });
    }

    /** A failing op: earlier results 0, the op's code, later ones RuntimeInconsistency; nothing applied. */
    @Test
    void multiFailure() {
        Differential.run("multiFailure", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("a"), "", CreateMode.PERSISTENT);
            c.multi("[create x, setData a v=99, create y]", List.of(
                    Op.create(s.p("x"), b(""), Session.OPEN, CreateMode.PERSISTENT),
                    Op.setData(s.p("a"), b("no"), 99),
                    Op.create(s.p("y"), b(""), Session.OPEN, CreateMode.PERSISTENT)));
            s.check(c.lastError == Code.BADVERSION, "multi throws the failing op's code");
            c.exists(s.p("x"), false);
            c.multi("[check missing, create z]", List.of(
                    Op.check(s.p("missing"), 0),
                    Op.create(s.p("z"), b(""), Session.OPEN, CreateMode.PERSISTENT)));
            c.multi("[create q, create q]", List.of(
                    Op.create(s.p("q"), b(""), Session.OPEN, CreateMode.PERSISTENT),
                    Op.create(s.p("q"), b(""), Session.OPEN, CreateMode.PERSISTENT)));
            c.multi("[create e eph, create e/kid]", List.of(
                    Op.create(s.p("e"), b(""), Session.OPEN, CreateMode.EPHEMERAL),
                    Op.create(s.p("e/kid"), b(""), Session.OPEN, CreateMode.PERSISTENT)));
            c.multi("[delete a, delete a]", List.of(Op.delete(s.p("a"), -1), Op.delete(s.p("a"), -1)));
            c.multi("[create k, check a v0, delete root]", List.of(
                    Op.create(s.p("k"), b(""), Session.OPEN, CreateMode.PERSISTENT),
                    Op.check(s.p("a"), 0),
                    Op.delete(s.root(), -1)));
            c.getChildren2(s.root(), null);
            // Failed transactions leave the parent's create count alone.
            c.create(s.p("s-"), "", CreateMode.PERSISTENT_SEQUENTIAL);
        });
    }

    /** multiRead: each op answers on its own, errors included; the call itself succeeds. */
    @Test
    void multiRead() {
        Differential.run("multiRead", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "r", CreateMode.PERSISTENT);
            c.create(s.p("a"), "A", CreateMode.PERSISTENT);
            c.create(s.p("b"), "B", CreateMode.PERSISTENT);
            c.setData(s.p("b"), "B2", -1);
            List<OpResult> r = c.multi("[getData a, getChildren root, getData missing, getChildren missing, getData b]",
                    List.of(Op.getData(s.p("a")), Op.getChildren(s.root()), Op.getData(s.p("missing")),
                            Op.getChildren(s.p("missing")), Op.getData(s.p("b"))));
            s.check(r != null && r.size() == 5 && r.get(2) instanceof OpResult.ErrorResult
                    && ((OpResult.ErrorResult) r.get(2)).getErr() == Code.NONODE.intValue(),
                    "multiRead reports NoNode per op without failing the rest");
        });
    }
}
