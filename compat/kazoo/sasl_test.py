"""kazoo (Python, SASL through pure-sasl) with DIGEST-MD5 against meerkat and a real ZooKeeper
3.9.3 configured identically: the same JAAS file and the same zoo.cfg keys.

Two runs per server:
1. `authProvider.1=...SASLAuthenticationProvider` and `superUser=admin`; the JAAS file given as
   ZooKeeper's operators give it, `-Djava.security.auth.login.config=FILE` in SERVER_JVMFLAGS.
   bob authenticates and creates a znode with a `sasl:bob` ACL and reads it back; alice (right
   password) and an anonymous client get NoAuth on it; admin (a superUser) reads it; bob with a
   wrong password and an unknown user fail to authenticate.
2. The same plus `sessionRequireClientSASLAuth=true`; meerkat is given the JAAS file by the
   zoo.cfg key `jaasLoginFile` instead (ZooKeeper, which has no such key, by SERVER_JVMFLAGS
   again). An anonymous client's first request fails with SessionClosedRequireSasl; bob works;
   a wrong password fails.

The transcripts of the two servers must equal the expected one. Every process started here is
stopped by its pid; every wait is bounded.
"""

import argparse
import logging
import os
import sys
import tempfile
import threading
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState
from kazoo.security import make_acl

from tls_test import Server as TlsServer

JAAS = """// The server's DIGEST-MD5 users (the JAAS syntax of ZooKeeper's SASL guide).
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bobsecret"
    user_alice="alicesecret"   /* a second user */
    user_admin="adminsecret";
};
"""


class Server(TlsServer):
    """A server with a plain client port, the SASL keys and an environment of its own."""

    def __init__(self, kind, command, workdir, extra_cfg, env):
        self.extra_cfg = extra_cfg
        super().__init__(kind, command, workdir, certs=None, env=env)

    def config_text(self, data):
        return (
            "tickTime=200\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "4lw.commands.whitelist=ruok,srvr\n"
            "admin.enableServer=false\n"
            "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
            "superUser=admin\n"
            + self.extra_cfg
        )


def sasl(user, password):
    return dict(sasl_options={"mechanism": "DIGEST-MD5", "username": user, "password": password})


def start(server, **options):
    """A started client, or the name of what start raised (None for a plain time-out)."""
    client = KazooClient(hosts=f"127.0.0.1:{server.port}", timeout=4, **options)
    try:
        client.start(timeout=10)
        return client, None
    except KazooTimeoutError:
        outcome = "timeout"
    except Exception as e:  # noqa: BLE001 - the kind of failure is what the transcript records
        outcome = type(e).__name__
    client.stop()
    client.close()
    return None, outcome


def stop(client):
    if client is not None:
        client.stop()
        client.close()


def failed_auth(server, user, password):
    """kazoo reports the session connected before its SASL exchange ends, so a failed exchange
    shows afterwards: the client's state, and what a read then gets (bounded waits)."""
    SEEN.clear()
    client, failure = start(server, **sasl(user, password))
    if client is None:
        return f"start fails with {failure}"
    for _ in range(50):
        if client.client_state != KeeperState.CONNECTED:
            break
        time.sleep(0.1)
    state = client.client_state
    try:
        client.get_async("/").get(timeout=3)
        read = "read ok"
    except Exception as e:  # noqa: BLE001
        read = f"read fails with {type(e).__name__}"
    stop(client)
    return f"kazoo saw {'+'.join(SEEN) or 'nothing'}, state {state}, {read}"


def try_get(client, path):
    try:
        data, _ = client.get(path)
        return repr(data)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def first_run(server):
    lines = []
    bob, failure = start(server, **sasl("bob", "bobsecret"))
    lines.append(f"bob connects: {bob is not None} {failure or ''}".rstrip())
    if bob is not None:
        acl = [make_acl("sasl", "bob", all=True)]
        lines.append("bob create -> " + bob.create("/sasl-bob", b"bob's", acl=acl))
        lines.append("bob get -> " + try_get(bob, "/sasl-bob"))
        acls, _ = bob.get_acls("/sasl-bob")
        lines.append("acl -> " + ",".join(f"{a.id.scheme}:{a.id.id}:{a.perms}" for a in acls))
        stop(bob)
    alice, failure = start(server, **sasl("alice", "alicesecret"))
    lines.append(f"alice connects: {alice is not None} {failure or ''}".rstrip())
    if alice is not None:
        lines.append("alice get -> " + try_get(alice, "/sasl-bob"))
        stop(alice)
    anonymous, _ = start(server)
    if anonymous is not None:
        lines.append("anonymous get -> " + try_get(anonymous, "/sasl-bob"))
        stop(anonymous)
    admin, failure = start(server, **sasl("admin", "adminsecret"))
    lines.append(f"admin connects: {admin is not None} {failure or ''}".rstrip())
    if admin is not None:
        lines.append("admin (superUser) get -> " + try_get(admin, "/sasl-bob"))
        stop(admin)
    lines.append("bob with a wrong password: " + failed_auth(server, "bob", "not-bobs"))
    lines.append("unknown user: " + failed_auth(server, "mallory", "x"))
    return lines


def enforced_run(server):
    lines = []
    anonymous, failure = start(server)
    lines.append(f"anonymous connects: {anonymous is not None} {failure or ''}".rstrip())
    if anonymous is not None:
        lines.append("anonymous get / -> " + try_get(anonymous, "/"))
        stop(anonymous)
    bob, failure = start(server, **sasl("bob", "bobsecret"))
    lines.append(f"bob connects: {bob is not None} {failure or ''}".rstrip())
    if bob is not None:
        lines.append("bob get / -> " + try_get(bob, "/"))
        stop(bob)
    lines.append("bob with a wrong password: " + failed_auth(server, "bob", "not-bobs"))
    return lines


EXPECTED_FIRST = [
    "bob connects: True",
    "bob create -> /sasl-bob",
    "bob get -> b\"bob's\"",
    "acl -> sasl:bob:31",
    "alice connects: True",
    "alice get -> NoAuthError",
    "anonymous get -> NoAuthError",
    "admin connects: True",
    "admin (superUser) get -> b\"bob's\"",
    "bob with a wrong password: kazoo saw AUTH_FAILED, state CLOSED, read fails with ConnectionClosedError",
    "unknown user: kazoo saw AUTH_FAILED, state CLOSED, read fails with ConnectionClosedError",
]

EXPECTED_ENFORCED = [
    "anonymous connects: True",
    "anonymous get / -> SessionClosedRequireSaslError",
    "bob connects: True",
    "bob get / -> b''",
    "bob with a wrong password: kazoo saw SessionClosedRequireSaslError, state CLOSED, read fails with ConnectionClosedError",
]


def run(kind, command, root, jaas, run_name, extra_cfg, env, scenario):
    workdir = os.path.join(root, f"{kind}-{run_name}")
    os.makedirs(workdir)
    server = Server(kind, command, workdir, extra_cfg, env)
    try:
        return scenario(server)
    finally:
        server.stop()


# What kazoo's connection thread ran into, which it reports only in its log (AUTH_FAILED) or
# as an exception that ends the thread (SessionClosedRequireSaslError).
SEEN = []


class AuthFailedLog(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("AUTH_FAILED closing"):
            SEEN.append("AUTH_FAILED")


def watch_connection_threads():
    logging.getLogger("kazoo").addHandler(AuthFailedLog())
    default = threading.excepthook

    def hook(args):
        if type(args.exc_value).__name__ == "SessionClosedRequireSaslError":
            SEEN.append("SessionClosedRequireSaslError")
        else:
            default(args)

    threading.excepthook = hook


def main():
    watch_connection_threads()
    parser = argparse.ArgumentParser()
    parser.add_argument("--meerkat", required=True)
    parser.add_argument("--zookeeper-script", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kazoo-sasl-") as root:
        jaas = os.path.join(root, "jaas.conf")
        with open(jaas, "w") as f:
            f.write(JAAS)
        jvm_flags = {"SERVER_JVMFLAGS": f"-Djava.security.auth.login.config={jaas}"}
        servers = (("zookeeper", [args.zookeeper_script, "run"]), ("meerkat", [args.meerkat, "server"]))
        failed = 0
        transcripts = {}
        for kind, command in servers:
            first = run(kind, command, root, jaas, "first", "", jvm_flags, first_run)
            enforced_cfg = "sessionRequireClientSASLAuth=true\n"
            env = jvm_flags
            if kind == "meerkat":
                enforced_cfg += f"jaasLoginFile={jaas}\n"
                env = {}
            enforced = run(kind, command, root, jaas, "enforced", enforced_cfg, env, enforced_run)
            transcripts[kind] = first + ["-- sessionRequireClientSASLAuth=true"] + enforced
            print(f"== {kind}")
            print("\n".join(transcripts[kind]))
            if first != EXPECTED_FIRST or enforced != EXPECTED_ENFORCED:
                failed += 1
                print(f"{kind} differs from the expected transcript", file=sys.stderr)
        if transcripts.get("zookeeper") != transcripts.get("meerkat"):
            print("the transcripts of zookeeper and meerkat differ", file=sys.stderr)
        passed = len(transcripts) - failed
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
