package meerkat.compat;

import com.sun.security.auth.login.ConfigFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.security.auth.login.Configuration;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * SASL DIGEST-MD5 with ZooKeeper's own Java client ({@code zookeeper.sasl.client=true} and a
 * JAAS client section, as Kafka and HBase use it) against ZooKeeper 3.9.3 and meerkat
 * configured identically: the same zoo.cfg keys ({@code authProvider.1=...SASLAuthenticationProvider},
 * {@code superUser}) and the same JAAS file, given to both as
 * {@code SERVER_JVMFLAGS=-Djava.security.auth.login.config=FILE}.
 *
 * <p>The client sections live in the same file. This JVM runs every other test class too, so
 * the file is installed as this JVM's JAAS configuration only while this class runs, without
 * the global {@code java.security.auth.login.config} property (with it, every other client
 * would look for a "Client" section and fail), and each client picks its section with
 * {@code zookeeper.sasl.clientconfig}.
 */
class SaslTest {
    private static final String JAAS = String.join("\n",
            "// The server's DIGEST-MD5 users, as ZooKeeper's SASL guide writes them.",
            "Server {",
            "    org.apache.zookeeper.server.auth.DigestLoginModule required",
            "    user_bob=\"bobsecret\"",
            "    user_alice=\"alicesecret\"",
            "    user_admin=\"adminsecret\";",
            "};",
            "/* One client section per identity the tests use. */",
            client("ClientBob", "bob", "bobsecret"),
            client("ClientAlice", "alice", "alicesecret"),
            client("ClientAdmin", "admin", "adminsecret"),
            client("ClientWrongPassword", "bob", "not-bobs"),
            client("ClientUnknownUser", "mallory", "whatever"),
            "");

    private static Configuration previous;
    private static Servers.Pair pair;
    private static Servers.Pair enforcedPair;

    private static String client(String section, String user, String password) {
        return section + " {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                + "    username=\"" + user + "\"\n    password=\"" + password + "\";\n};";
    }

    @BeforeAll
    static void start() throws Exception {
        Path base = Files.createDirectories(Paths.get("target", "sasl"));
        Path jaas = Files.createTempDirectory(base, "jaas-").toAbsolutePath().resolve("jaas.conf");
        Files.writeString(jaas, JAAS);
        try {
            previous = Configuration.getConfiguration();
        } catch (SecurityException none) {
            previous = null;
        }
        Configuration.setConfiguration(new ConfigFile(jaas.toUri()));
        Map<String, String> keys = new HashMap<>();
        keys.put("authProvider.1", "org.apache.zookeeper.server.auth.SASLAuthenticationProvider");
        keys.put("superUser", "admin");
        keys.put(ServerProcess.SERVER_JVMFLAGS, "-Djava.security.auth.login.config=" + jaas);
        pair = Servers.Pair.start("sasl", keys);
        Map<String, String> enforced = new HashMap<>(keys);
        enforced.put("sessionRequireClientSASLAuth", "true");
        enforcedPair = Servers.Pair.start("sasl-enforced", enforced);
    }

    @AfterAll
    static void stop() {
        for (Servers.Pair p : new Servers.Pair[] {pair, enforcedPair}) {
            if (p != null) {
                p.close();
            }
        }
        Configuration.setConfiguration(previous);
    }

    /** A client that authenticates with the JAAS section `section`. */
    private static ZKClientConfig sasl(String section) {
        ZKClientConfig c = new ZKClientConfig();
        c.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "true");
        c.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, section);
        return c;
    }

    /** Opens a SASL client and waits for its session and then its SaslAuthenticated event. */
    private static Session authenticated(Scenario s, String label, String section) throws Exception {
        Session session = s.open(label, s.server.connectString(), sasl(section));
        if (!session.awaitConnected(10_000)) {
            throw new IllegalStateException(label + " did not connect");
        }
        List<String> events = session.events(1);
        s.check(events.size() == 1 && events.get(0).contains("SaslAuthenticated"), label + " is SASL-authenticated");
        return session;
    }

    /** A client whose SASL exchange must fail: what its default watcher hears. */
    private static void refused(Scenario s, String label, String section) throws Exception {
        Session session = s.open(label, s.server.connectString(), sasl(section));
        List<String> events = session.events(2, 10_000);
        s.check(events.stream().anyMatch(e -> e.contains("AuthFailed")), label + " hears AuthFailed");
        session.close();
    }

    private static boolean logSays(Scenario s, String regex) throws Exception {
        Pattern p = Pattern.compile(regex, Pattern.CASE_INSENSITIVE);
        return Files.readAllLines(s.server.log).stream().anyMatch(l -> p.matcher(l).find());
    }

    private static List<ACL> acl(String scheme, String id) {
        return new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id(scheme, id))));
    }

    /** bob's sasl ACL: bob and the superUser pass, alice and an anonymous client do not. */
    @Test
    void saslAclsAndSuperUser() {
        Differential.run(pair, "saslAcl", s -> {
            Session bob = authenticated(s, "bob", "ClientBob");
            bob.whoAmI();
            bob.create(s.root(), "", CreateMode.PERSISTENT);
            bob.create(s.p("bob"), "bob's", acl("sasl", "bob"), CreateMode.PERSISTENT);
            bob.getData(s.p("bob"));
            bob.create(s.p("auth"), "", new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, ZooDefs.Ids.AUTH_IDS))),
                    CreateMode.PERSISTENT);
            bob.getACL(s.p("auth"));
            bob.create(s.p("malformed"), "", acl("sasl", "a@b@c"), CreateMode.PERSISTENT);
            Session alice = authenticated(s, "alice", "ClientAlice");
            alice.getData(s.p("bob"));
            s.check(alice.lastError == org.apache.zookeeper.KeeperException.Code.NOAUTH, "alice gets NOAUTH");
            Session admin = authenticated(s, "admin", "ClientAdmin");
            admin.whoAmI();
            admin.getData(s.p("bob"));
            s.check(admin.lastError == null, "the superUser reads bob's node");
            Session anonymous = s.connect("anonymous");
            anonymous.getData(s.p("bob"));
            s.check(anonymous.lastError == org.apache.zookeeper.KeeperException.Code.NOAUTH, "anonymous gets NOAUTH");
        });
    }

    /** Without authProvider.N naming SASLAuthenticationProvider, `sasl` is an unknown scheme. */
    @Test
    void saslSchemeNeedsItsProvider() {
        Differential.run("saslWithoutProvider", s -> {
            Session c = s.connect("plain");
            c.create(s.root(), "", CreateMode.PERSISTENT);
            c.create(s.p("bob"), "", acl("sasl", "bob"), CreateMode.PERSISTENT);
            s.check(c.lastError == org.apache.zookeeper.KeeperException.Code.INVALIDACL, "a sasl ACL is InvalidACL");
        });
    }

    /** A wrong password and an unknown user fail, with the reason in the server's log. */
    @Test
    void failedAuthentication() {
        Differential.run(pair, "saslFailed", s -> {
            refused(s, "wrong-password", "ClientWrongPassword");
            s.check(logSays(s, "Mismatched response"), "the log says the response did not match");
            refused(s, "unknown-user", "ClientUnknownUser");
            s.check(logSays(s, "mallory"), "the log names the unknown user");
        });
    }

    /** sessionRequireClientSASLAuth: an anonymous client's requests are refused; bob's are not. */
    @Test
    void sessionRequireClientSaslAuth() {
        Differential.run(enforcedPair, "saslRequired", s -> {
            Session anonymous = s.connect("anonymous");
            anonymous.getData("/");
            s.check(anonymous.lastError == org.apache.zookeeper.KeeperException.Code.SESSIONCLOSEDREQUIRESASLAUTH,
                    "anonymous gets SESSIONCLOSEDREQUIRESASLAUTH");
            anonymous.close();
            Session bob = authenticated(s, "bob", "ClientBob");
            bob.getData("/");
            s.check(bob.lastError == null, "bob reads");
            refused(s, "wrong-password", "ClientWrongPassword");
        });
    }
}
