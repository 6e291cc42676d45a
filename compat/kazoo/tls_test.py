"""kazoo (Python) with use_ssl against meerkat and a real ZooKeeper 3.9.3 configured
identically: TLS on secureClientPort with ssl.clientAuth=need and PEM stores.

Each server gets the same scenario: a TLS client with a certificate creates and reads a znode;
a plaintext client and a TLS client without a certificate are refused on the TLS port; the
plaintext clientPort beside it works. The transcripts of the two servers must be equal.

Certificates are made when the test runs (openssl); nothing secret is committed. Ports are
taken below the kernel's ephemeral range, as the Rust and Java suites take them. Every process
started here is stopped by its pid.
"""

import argparse
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

PORT_MIN = 10_000


def ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.readline().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port():
    top = ephemeral_start()
    for _ in range(1000):
        port = random.randrange(PORT_MIN, top)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free loopback port")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "2", "-subj", "/CN=kazoo test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=d)
    for name, cn in (("server", "server"), ("client", "kazoo-client")):
        openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", f"{name}.key", cwd=d)
        openssl("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                    "extendedKeyUsage=serverAuth,clientAuth\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext", cwd=d)
        with open(os.path.join(d, f"{name}.pem"), "w") as out:
            for part in (f"{name}.key", f"{name}.crt"):
                with open(os.path.join(d, part)) as f:
                    out.write(f.read())


class Server:
    """A server process on loopback; `env` is added to this process's environment (without
    its SERVER_JVMFLAGS, so only what a test gives counts)."""

    def __init__(self, kind, command, workdir, certs, env=None):
        self.kind = kind
        self.certs = certs
        self.port = free_port()
        self.secure_port = free_port()
        data = os.path.join(workdir, "data")
        os.makedirs(data)
        cfg = os.path.join(workdir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(self.config_text(data))
        self.log_path = os.path.join(workdir, "server.log")
        self.log = open(self.log_path, "w")
        environment = {k: v for k, v in os.environ.items() if k != "SERVER_JVMFLAGS"}
        environment.update(env or {})
        self.process = subprocess.Popen(command + [cfg], stdout=self.log, stderr=subprocess.STDOUT,
                                        env=environment)
        self.wait_ready()

    def config_text(self, data):
        return (
            "tickTime=200\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            f"secureClientPort={self.secure_port}\nsecureClientPortAddress=127.0.0.1\n"
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            f"ssl.keyStore.location={self.certs}/server.pem\n"
            f"ssl.trustStore.location={self.certs}/ca.pem\n"
            "ssl.clientAuth=need\n"
            "4lw.commands.whitelist=ruok,srvr\n"
            "admin.enableServer=false\n"
        )

    def wait_ready(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited: see {self.log_path}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(16) == b"imok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.kind} not ready within 60 s: see {self.log_path}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


def connects(hosts, timeout, **tls):
    client = KazooClient(hosts=hosts, timeout=4, **tls)
    try:
        client.start(timeout=timeout)
        return client
    except KazooTimeoutError:
        client.stop()
        client.close()
        return None


def scenario(server, certs):
    lines = []
    secure = f"127.0.0.1:{server.secure_port}"
    tls = dict(use_ssl=True, ca=f"{certs}/ca.pem", certfile=f"{certs}/client.crt",
               keyfile=f"{certs}/client.key", verify_certs=True)
    client = connects(secure, 15, **tls)
    lines.append(f"tls client with certificate connects: {client is not None}")
    if client is not None:
        lines.append("create -> " + client.create("/kazoo-tls", b"over tls"))
        data, stat = client.get("/kazoo-tls")
        lines.append(f"get -> {data!r} version={stat.version}")
        client.stop()
        client.close()
    plain = connects(f"127.0.0.1:{server.port}", 15)
    lines.append(f"plaintext client on clientPort connects: {plain is not None}")
    if plain is not None:
        data, _ = plain.get("/kazoo-tls")
        lines.append(f"plaintext get -> {data!r}")
        plain.stop()
        plain.close()
    refused = connects(secure, 3)
    lines.append(f"plaintext client on the TLS port connects: {refused is not None}")
    no_cert = connects(secure, 3, use_ssl=True, ca=f"{certs}/ca.pem", verify_certs=True)
    lines.append(f"tls client without a certificate connects: {no_cert is not None}")
    for c in (refused, no_cert):
        if c is not None:
            c.stop()
            c.close()
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--meerkat", required=True)
    parser.add_argument("--zookeeper-script", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kazoo-tls-") as root:
        certs = os.path.join(root, "certs")
        os.makedirs(certs)
        make_certificates(certs)
        transcripts = {}
        for kind, command in (("zookeeper", [args.zookeeper_script, "run"]),
                              ("meerkat", [args.meerkat, "server"])):
            workdir = os.path.join(root, kind)
            os.makedirs(workdir)
            server = Server(kind, command, workdir, certs)
            try:
                transcripts[kind] = scenario(server, certs)
            finally:
                server.stop()
            print(f"== {kind}")
            print("\n".join(transcripts[kind]))
        expected = [
            "tls client with certificate connects: True",
            "create -> /kazoo-tls",
            "get -> b'over tls' version=0",
            "plaintext client on clientPort connects: True",
            "plaintext get -> b'over tls'",
            "plaintext client on the TLS port connects: False",
            "tls client without a certificate connects: False",
        ]
        failed = 0
        for kind, lines in transcripts.items():
            if lines != expected:
                failed += 1
                print(f"{kind} differs from the expected transcript", file=sys.stderr)
        if transcripts.get("zookeeper") != transcripts.get("meerkat"):
            print("the transcripts of zookeeper and meerkat differ", file=sys.stderr)
        passed = len(transcripts) - failed
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
