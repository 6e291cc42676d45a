package meerkat.compat;

import java.util.ArrayList;
import java.util.List;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.ZooDefs.Ids;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;
import org.junit.jupiter.api.Test;

/** ACL schemes (world, digest, auth, ip), NoAuth per op kind, super user, whoAmI, setACL versions. */
class AclTest extends CompatTest {

    static String digestId(String user, String password) throws Exception {
        return DigestAuthenticationProvider.generateDigest(user + ":" + password);
    }

    /** A mutable list: the client's ACL validation calls contains(null), which List.of rejects. */
    static List<ACL> acl(int perms, String scheme, String id) {
        return new ArrayList<>(List.of(new ACL(perms, new Id(scheme, id))));
    }

    @Test
    void schemesAndNoAuth() {
        Differential.run("schemesAndNoAuth", s -> {
            Session anon = s.connect("anon");
            Session alice = s.connect("alice");
            Session bob = s.connect("bob");
            alice.addAuth("digest", "alice:alice-pw");
            bob.addAuth("digest", "bob:bob-pw");
            List<ACL> aliceOnly = acl(Perms.ALL, "digest", digestId("alice", "alice-pw"));

            alice.create(s.root(), "", Session.OPEN, CreateMode.PERSISTENT);
            alice.create(s.p("digest"), "secret", aliceOnly, CreateMode.PERSISTENT);
            alice.create(s.p("digest/kid"), "", aliceOnly, CreateMode.PERSISTENT);
            alice.getACL(s.p("digest"));
            alice.addWatch(s.p("digest"), alice.watcher("alice-w"), AddWatchMode.PERSISTENT);

            // Every op kind against a node that only alice may touch.
            for (Session x : List.of(anon, bob)) {
                x.getData(s.p("digest"));
                s.check(x.lastError == Code.NOAUTH, x.label + ": getData without READ gives NoAuth");
                x.exists(s.p("digest"), false);
                x.getChildren(s.p("digest"), null);
                x.getChildren2(s.p("digest"), null);
                x.setData(s.p("digest"), "x", -1);
                s.check(x.lastError == Code.NOAUTH, x.label + ": setData without WRITE gives NoAuth");
                x.create(s.p("digest/new"), "", CreateMode.PERSISTENT);
                x.delete(s.p("digest/kid"), -1);
                x.getACL(s.p("digest"));
                x.setACL(s.p("digest"), Ids.OPEN_ACL_UNSAFE, -1);
                x.getAllChildrenNumber(s.p("digest"));
                x.multi("[setData digest]", List.of(Op.setData(s.p("digest"), Session.bytes("m"), -1)));
                x.multi("[check digest]", List.of(Op.check(s.p("digest"), -1)));
                x.multi("[getData digest, getChildren digest]",
                        List.of(Op.getData(s.p("digest")), Op.getChildren(s.p("digest"))));
                x.addWatch(s.p("digest"), x.watcher(x.label + "-w"), AddWatchMode.PERSISTENT);
                x.sync(s.p("digest"));
            }
            // Deleting the protected node itself needs DELETE on its (open) parent only.
            alice.delete(s.p("digest/kid"), -1);
            anon.delete(s.p("digest"), -1);
            // addWatch needs no permission, but ZooKeeper delivers an event only to
            // sessions that may READ the node: alice hears the kid go and the node go,
            // anon and bob hear nothing.
            alice.events(2);
            anon.noEvents();
            bob.noEvents();

            // The auth scheme means "the ids this session authenticated with".
            alice.create(s.p("creator"), "", Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            alice.getACL(s.p("creator"));
            anon.create(s.p("creator-anon"), "", Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            s.check(anon.lastError == Code.INVALIDACL, "auth scheme without an authenticated id gives InvalidACL");

            // ip scheme: exact address, a mask, and an address that is not us.
            alice.create(s.p("ip"), "ip", acl(Perms.READ | Perms.WRITE, "ip", "127.0.0.1"), CreateMode.PERSISTENT);
            alice.create(s.p("ipmask"), "mask", acl(Perms.READ, "ip", "127.0.0.0/8"), CreateMode.PERSISTENT);
            alice.create(s.p("ipother"), "other", acl(Perms.ALL, "ip", "10.1.2.3"), CreateMode.PERSISTENT);
            anon.getData(s.p("ip"));
            anon.setData(s.p("ip"), "w", -1);
            anon.create(s.p("ip/kid"), "", CreateMode.PERSISTENT);
            anon.getData(s.p("ipmask"));
            anon.setData(s.p("ipmask"), "w", -1);
            anon.getData(s.p("ipother"));
            s.check(anon.lastError == Code.NOAUTH, "ip ACL for another address gives NoAuth");

            // world scheme with partial permissions.
            alice.create(s.p("readonly"), "ro", acl(Perms.READ, "world", "anyone"), CreateMode.PERSISTENT);
            anon.getData(s.p("readonly"));
            anon.setData(s.p("readonly"), "w", -1);
            anon.create(s.p("readonly/kid"), "", CreateMode.PERSISTENT);
            alice.create(s.p("noread"), "nr", acl(Perms.ALL & ~Perms.READ, "world", "anyone"), CreateMode.PERSISTENT);
            anon.getData(s.p("noread"));
            anon.getChildren(s.p("noread"), null);
            anon.getACL(s.p("noread"));
            anon.setData(s.p("noread"), "w", -1);
            anon.create(s.p("noread/kid"), "", CreateMode.PERSISTENT);
            anon.setACL(s.p("noread"), acl(Perms.ALL, "world", "anyone"), -1);
            anon.getData(s.p("noread"));
            anon.delete(s.p("readonly"), -1);

            // ACLs the server must refuse.
            alice.create(s.p("bad1"), "", acl(Perms.ALL, "digest", "no-colon-here"), CreateMode.PERSISTENT);
            alice.create(s.p("bad2"), "", acl(Perms.ALL, "ip", "not-an-ip"), CreateMode.PERSISTENT);
            alice.create(s.p("bad3"), "", acl(Perms.ALL, "nosuchscheme", "x"), CreateMode.PERSISTENT);
            alice.create(s.p("bad4"), "", acl(Perms.ALL, "world", "somebody"), CreateMode.PERSISTENT);
            alice.getChildren(s.root(), null);
        });
    }

    @Test
    void superUserAndWhoAmI() {
        Differential.run("superUserAndWhoAmI", s -> {
            Session alice = s.connect("alice");
            Session su = s.connect("super");
            Session anon = s.connect("anon");
            alice.addAuth("digest", "alice:alice-pw");
            su.addAuth("digest", "super:" + ServerProcess.SUPER_PASSWORD);
            List<ACL> aliceOnly = acl(Perms.ALL, "digest", digestId("alice", "alice-pw"));
            alice.create(s.root(), "", Session.OPEN, CreateMode.PERSISTENT);
            alice.create(s.p("locked"), "v", aliceOnly, CreateMode.PERSISTENT);
            alice.create(s.p("locked/kid"), "", aliceOnly, CreateMode.PERSISTENT);

            byte[] d = su.getData(s.p("locked"));
            su.getChildren2(s.p("locked"), null);
            su.setData(s.p("locked"), "by super", -1);
            su.create(s.p("locked/by-super"), "", CreateMode.PERSISTENT);
            su.delete(s.p("locked/kid"), -1);
            su.getACL(s.p("locked"));
            su.setACL(s.p("locked"), acl(Perms.READ, "digest", digestId("alice", "alice-pw")), -1);
            su.setData(s.p("locked"), "super ignores ACLs", -1);
            alice.setData(s.p("locked"), "alice lost WRITE", -1);

            anon.whoAmI();
            alice.whoAmI();
            su.whoAmI();
            // A second digest identity on the same session adds to the list.
            alice.addAuth("digest", "bob:bob-pw");
            alice.whoAmI();
            s.check(d != null, "super reads a node whose ACL does not name it");
        });
    }

    @Test
    void setAclVersions() {
        Differential.run("setAclVersions", s -> {
            Session c = s.connect("c1");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("n"), "", CreateMode.PERSISTENT);
            c.getACL(s.p("n"));
            Stat st = c.setACL(s.p("n"), acl(Perms.ALL, "world", "anyone"), 0);
            c.setACL(s.p("n"), acl(Perms.ALL, "world", "anyone"), 0);
            s.check(c.lastError == Code.BADVERSION, "setACL with a stale aversion gives BadVersion");
            c.setACL(s.p("n"), new ArrayList<>(List.of(new ACL(Perms.READ, Ids.ANYONE_ID_UNSAFE),
                    new ACL(Perms.ALL, new Id("ip", "127.0.0.1")))), 1);
            c.getACL(s.p("n"));
            c.setACL(s.p("n"), acl(Perms.ALL, "world", "anyone"), -1);
            c.getACL(s.p("n"));
            c.setACL(s.p("missing"), acl(Perms.ALL, "world", "anyone"), -1);
            c.getACL(s.p("missing"));
            c.getData(s.p("n"));
            s.check(st != null && st.getAversion() == 1 && st.getVersion() == 0, "setACL bumps aversion only");
        });
    }

    /** An unknown auth scheme fails the session: AuthFailed event, then every call fails. */
    @Test
    void authFailed() {
        Differential.run("authFailed", s -> {
            Session ok = s.connect("ok");
            ok.create(s.root(), "", CreateMode.PERSISTENT);
            Session c = s.connect("c1");
            c.addAuth("nosuchscheme", "whatever");
            c.events(1);
            c.exists(s.root(), false);
            s.check(c.lastError == Code.AUTHFAILED, "calls after a failed auth give AuthFailed");
            ok.exists(s.root(), false);
        });
    }
}
