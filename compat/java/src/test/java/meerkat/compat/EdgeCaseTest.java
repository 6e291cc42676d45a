package meerkat.compat;

import java.util.ArrayList;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;

/** Corners that clients rarely hit but that a faithful server must answer the same way. */
class EdgeCaseTest extends CompatTest {

    @Test
    void aclCorners() {
        Differential.run("aclCorners", s -> {
            Session c = s.connect("c1");
            Session other = s.connect("other");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            // Duplicate entries in one ACL list.
            List<ACL> dup = new ArrayList<>(List.of(new ACL(Perms.ALL, Ids.ANYONE_ID_UNSAFE),
                    new ACL(Perms.ALL, Ids.ANYONE_ID_UNSAFE), new ACL(Perms.READ, Ids.ANYONE_ID_UNSAFE)));
            c.create(s.p("dup"), "", dup, CreateMode.PERSISTENT);
            c.getACL(s.p("dup"));
            // Permission bits 0: nobody may do anything with the node itself.
            c.create(s.p("none"), "x", AclTest.acl(0, "world", "anyone"), CreateMode.PERSISTENT);
            c.getData(s.p("none"));
            c.getACL(s.p("none"));
            c.setACL(s.p("none"), Ids.OPEN_ACL_UNSAFE, -1);
            c.delete(s.p("none"), -1);
            // The auth scheme with two digest identities expands to both.
            c.addAuth("digest", "u1:p1");
            c.addAuth("digest", "u2:p2");
            c.create(s.p("two"), "", Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            c.getACLSorted(s.p("two"));
            // A wrong digest password is no error: it is just another identity.
            other.addAuth("digest", "u1:wrong");
            other.whoAmI();
            other.getData(s.p("two"));
            other.addAuth("digest", "u2:p2");
            other.getData(s.p("two"));
            // An ACL naming an auth id together with the auth scheme.
            List<ACL> mixed = new ArrayList<>(List.of(new ACL(Perms.READ, Ids.ANYONE_ID_UNSAFE),
                    new ACL(Perms.ALL, new Id("auth", ""))));
            c.create(s.p("mixed"), "", mixed, CreateMode.PERSISTENT);
            c.getACLSorted(s.p("mixed"));
            // setACL with the auth scheme also expands.
            c.setACL(s.p("dup"), Ids.CREATOR_ALL_ACL, -1);
            c.getACLSorted(s.p("dup"));
            other.setACL(s.p("mixed"), Ids.CREATOR_ALL_ACL, -1);
        });
    }

    @Test
    void systemNodeWrites() {
        Differential.run("systemNodeWrites", s -> {
            Session c = s.connect("c1");
            c.getAllChildrenNumber("/zookeeper");
            c.create("/zookeeper/compat-probe", "", CreateMode.PERSISTENT);
            c.delete("/zookeeper/compat-probe", -1);
            c.create("/zookeeper/quota/compat-probe", "", CreateMode.PERSISTENT);
            c.delete("/zookeeper/quota/compat-probe", -1);
            c.delete("/zookeeper/quota", -1);
            c.delete("/zookeeper/config", -1);
            c.setACL("/zookeeper/config", Ids.OPEN_ACL_UNSAFE, -1);
            c.getChildren("/zookeeper", null);
        });
    }

    @Test
    void createCorners() {
        Differential.run("createCorners", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("eph"), "", CreateMode.EPHEMERAL);
            // Nothing at all may live under an ephemeral.
            c.create(s.p("eph/c"), "", CreateMode.CONTAINER);
            c.create2(s.p("eph/t"), "", CreateMode.PERSISTENT_WITH_TTL, 10_000);
            c.create(s.p("eph/e"), "", CreateMode.EPHEMERAL);
            // Children of containers and TTL nodes of every kind.
            c.create(s.p("box"), "", CreateMode.CONTAINER);
            c.create(s.p("box/e"), "", CreateMode.EPHEMERAL);
            c.create(s.p("box/s-"), "", CreateMode.EPHEMERAL_SEQUENTIAL);
            c.create2(s.p("ttl"), "", CreateMode.PERSISTENT_WITH_TTL, 60_000);
            c.create(s.p("ttl/e"), "", CreateMode.EPHEMERAL);
            // Ephemerals made in a multi belong to the session like any other.
            c.multi("[create m-eph, create m-seq ephemeral]", List.of(
                    Op.create(s.p("m-eph"), Session.bytes(""), Session.OPEN, CreateMode.EPHEMERAL),
                    Op.create(s.p("m-seq-"), Session.bytes(""), Session.OPEN, CreateMode.EPHEMERAL_SEQUENTIAL)));
            c.getEphemerals(s.root());
            // Names that are legal but odd.
            c.create(s.p("with space"), "", CreateMode.PERSISTENT);
            c.create(s.p("ünïcödé"), "", CreateMode.PERSISTENT);
            c.create(s.p("zookeeper"), "", CreateMode.PERSISTENT);
            c.create(s.p(".."), "", CreateMode.PERSISTENT);
            c.create(s.p("..."), "", CreateMode.PERSISTENT);
            c.create(s.p("a\u0001b"), "", CreateMode.PERSISTENT);
            c.getChildren2(s.root(), null);
            // setData on a container and a TTL node keeps their kind.
            c.setData(s.p("box"), "d", -1);
            c.setData(s.p("ttl"), "d", -1);
            c.getData(s.p("ttl"));
        });
    }

    /** Standalone ZooKeeper has reconfig disabled; getConfig reads /zookeeper/config. */
    @Test
    void reconfigAndGetConfig() {
        Differential.run("reconfigAndGetConfig", s -> {
            Session admin = s.connectAdmin("admin");
            admin.getConfig(admin.watcher("config"));
            admin.reconfigure(null, null, "server.1=127.0.0.1:2888:3888;2181");
            s.check(admin.lastError == org.apache.zookeeper.KeeperException.Code.RECONFIGDISABLED,
                    "reconfig on a server without reconfigEnabled gives ReconfigDisabled, got " + admin.lastError);
            admin.addAuth("digest", "super:" + ServerProcess.SUPER_PASSWORD);
            admin.reconfigure(null, "1", null);
            admin.getConfig(null);
        });
    }
}
