"""TLS on tls-port (OpenSSL through Asio): redis-cli --tls and Python's ssl module against the
real binary, client certificates (tls-auth-clients yes / optional / no), plain TCP next to it,
and start-up errors for unusable certificate files.

The certificates are made for each test session with the openssl command-line tool: a CA, a
server certificate for 127.0.0.1/localhost and a client certificate, both signed by the CA, plus
a client certificate from another CA that the server must refuse.
"""
import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest
from cuckood_testlib import CuckoodProcess, RawClient, binary, free_port

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                "/CN=cuckood test " + ca, "-keyout", ca + ".key", "-out", ca + ".crt", cwd=d)
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, ca in (("server", "ca"), ("client", "ca"), ("stranger", "other-ca")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout",
                name + ".key", "-out", name + ".csr", cwd=d)
        extra = ["-extfile", "san.ext"] if name == "server" else []
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                "-CAcreateserial", "-days", "2", "-out", name + ".crt", *extra, cwd=d)
    return d


def tls_args(certs, port, auth="yes"):
    return ["--tls-port", str(port), "--tls-cert-file", str(certs / "server.crt"),
            "--tls-key-file", str(certs / "server.key"), "--tls-ca-cert-file",
            str(certs / "ca.crt"), "--tls-auth-clients", auth]


@pytest.fixture
def tls_server(tmp_path, certs):
    procs = []

    def make(auth="yes"):
        port = free_port()
        p = CuckoodProcess(str(tmp_path / ("data%d" % len(procs))),
                           extra_args=tls_args(certs, port, auth))
        p.tls_port = port
        p.start()
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.stop()


class TlsClient(RawClient):
    def __init__(self, port, certs, cert="client", timeout=30):
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(certs / "ca.crt"))
        if cert:
            ctx.load_cert_chain(str(certs / (cert + ".crt")), str(certs / (cert + ".key")))
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.buf = b""


def redis_cli(port, certs, *args, cert="client"):
    cmd = ["redis-cli", "-p", str(port), "--tls", "--cacert", str(certs / "ca.crt")]
    if cert:
        cmd += ["--cert", str(certs / (cert + ".crt")), "--key", str(certs / (cert + ".key"))]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30)


def needs_tls_cli():
    out = subprocess.run(["redis-cli", "--help"], capture_output=True, text=True)
    if "--tls" not in out.stdout + out.stderr:
        pytest.skip("this redis-cli has no TLS support")


def test_redis_cli_over_tls(tls_server, certs):
    needs_tls_cli()
    srv = tls_server()
    assert redis_cli(srv.tls_port, certs, "PING").stdout.strip() == "PONG"
    assert redis_cli(srv.tls_port, certs, "CF.RESERVE", "t", "1000").stdout.strip() == "OK"
    assert redis_cli(srv.tls_port, certs, "CF.ADD", "t", "over-tls").stdout.strip() == "1"
    # the same data through plain TCP and through TLS
    c = RawClient(srv.port)
    assert c.call("CF.EXISTS", "t", "over-tls") == b":1\r\n"
    assert c.call("CF.ADD", "t", "plain") == b":1\r\n"
    c.close()
    assert redis_cli(srv.tls_port, certs, "CF.EXISTS", "t", "plain").stdout.strip() == "1"
    # RESP3 and a pipeline through redis-cli --pipe
    out = redis_cli(srv.tls_port, certs, "-3", "CF.INFO", "t").stdout
    assert "Number of items inserted" in out
    pipe = "".join("CF.ADD p item%d\n" % i for i in range(2000))
    cmd = ["redis-cli", "-p", str(srv.tls_port), "--tls", "--cacert", str(certs / "ca.crt"),
           "--cert", str(certs / "client.crt"), "--key", str(certs / "client.key"), "--pipe"]
    out = subprocess.run(cmd, input=pipe, capture_output=True, text=True, timeout=60)
    assert "errors: 0, replies: 2000" in out.stdout, out.stdout + out.stderr


def test_large_replies_and_pipelines_over_tls(tls_server, certs):
    """Replies bigger than one TLS record and pipelines split anywhere go through whole."""
    srv = tls_server()
    c = TlsClient(srv.tls_port, certs)
    assert c.call("CF.RESERVE", "big", "4000000") == b"+OK\r\n"
    items = [b"i%d" % i for i in range(20000)]
    assert c.call("CF.INSERT", "big", "ITEMS", *items) == b"*20000\r\n" + b":1\r\n" * 20000
    assert c.call("CF.MEXISTS", "big", *items) == b"*20000\r\n" + b":1\r\n" * 20000
    # SCANDUMP of a 4 MiB filter: multi-megabyte bulk replies over TLS, loaded back over TLS
    chunks = []
    it = 0
    while True:
        reply = c.call("CF.SCANDUMP", "big", it)
        assert reply.startswith(b"*2\r\n:")
        head, rest = reply[4:].split(b"\r\n", 1)
        it = int(head[1:])
        if it == 0:
            break
        size_line, data = rest.split(b"\r\n", 1)
        chunks.append((it, data[:int(size_line[1:])]))
    assert sum(len(d) for _, d in chunks) > 4 << 20
    for it, data in chunks:
        assert c.call("CF.LOADCHUNK", "copy", it, data) == b"+OK\r\n"
    assert c.call("CF.MEXISTS", "copy", *items[:1000]) == b"*1000\r\n" + b":1\r\n" * 1000
    # a pipeline of 5,000 commands sent in one go
    c.send_raw(b"".join(b"*3\r\n$6\r\nCF.ADD\r\n$4\r\npipe\r\n$%d\r\n%s\r\n" % (len(x), x)
                        for x in items[:5000]))
    for _ in range(5000):
        assert c.read_reply() == b":1\r\n"
    c.close()


def test_client_certificate_is_required_by_default(tls_server, certs):
    srv = tls_server()
    for cert in (None, "stranger"):
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            c = TlsClient(srv.tls_port, certs, cert=cert, timeout=10)
            c.call("PING")  # TLS 1.3: the refusal may only show on first use
    c = RawClient(srv.port)
    text = c.call("INFO", "stats").decode()
    assert "tls_handshake_errors:2" in text, text
    c.close()


def test_tls_auth_clients_optional_and_no(tls_server, certs):
    srv = tls_server("optional")
    c = TlsClient(srv.tls_port, certs, cert=None)
    assert c.call("PING") == b"+PONG\r\n"
    c.close()
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        c = TlsClient(srv.tls_port, certs, cert="stranger", timeout=10)
        c.call("PING")
    srv2 = tls_server("no")
    c = TlsClient(srv2.tls_port, certs, cert=None)
    assert c.call("CF.ADD", "k", "v") == b":1\r\n"
    c.close()


def test_plain_text_on_the_tls_port_and_idle_handshakes_do_not_hurt(tls_server, certs):
    srv = tls_server()
    s = socket.create_connection(("127.0.0.1", srv.tls_port), timeout=10)
    s.sendall(b"PING\r\n")
    try:
        got = s.recv(100)
    except ConnectionResetError:
        got = b""
    assert b"PONG" not in got
    s.close()
    idle = [socket.create_connection(("127.0.0.1", srv.tls_port), timeout=10) for _ in range(20)]
    c = TlsClient(srv.tls_port, certs)
    t0 = time.monotonic()
    assert c.call("PING") == b"+PONG\r\n"
    assert time.monotonic() - t0 < 2
    c.close()
    for s in idle:
        s.close()
    assert srv.proc.poll() is None


def test_auth_works_over_tls(tmp_path, certs):
    port = free_port()
    p = CuckoodProcess(str(tmp_path / "data"),
                       extra_args=tls_args(certs, port) + ["--requirepass", "s3cret"])
    p.start()
    try:
        c = TlsClient(port, certs)
        assert c.call("CF.ADD", "k", "v").startswith(b"-NOAUTH")
        assert c.call("AUTH", "s3cret") == b"+OK\r\n"
        assert c.call("CF.ADD", "k", "v") == b":1\r\n"
        c.close()
    finally:
        p.stop()


@pytest.mark.parametrize("case", ["missing cert", "missing key", "bad key", "no ca"])
def test_unusable_tls_files_stop_the_start(tmp_path, certs, case):
    args = ["--port", str(free_port()), "--dir", str(tmp_path / "data"), "--tls-port",
            str(free_port()), "--tls-cert-file", str(certs / "server.crt"), "--tls-key-file",
            str(certs / "server.key"), "--tls-ca-cert-file", str(certs / "ca.crt")]
    if case == "missing cert":
        args[args.index("--tls-cert-file") + 1] = str(tmp_path / "nope.crt")
    elif case == "missing key":
        args[args.index("--tls-key-file") + 1] = str(tmp_path / "nope.key")
    elif case == "bad key":
        args[args.index("--tls-key-file") + 1] = str(certs / "client.key")  # not the cert's key
    else:
        i = args.index("--tls-ca-cert-file")
        del args[i:i + 2]
    out = subprocess.run([binary()] + args, capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "tls" in text.lower(), text
    assert not os.path.exists(str(tmp_path / "data" / "CURRENT")), "opened the database anyway"
