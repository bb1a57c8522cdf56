"""Limits and hostile conditions: client-output-buffer-limit, backpressure on clients that do not
read, slow clients and connection churn, client-query-buffer-limit, protected mode from a
non-loopback address, rename-command, CONFIG SET dir, and a full disk.

Where Redis 7's exact bytes matter and redis-server is installed, the same input is also sent to
a real redis-server and compared.
"""
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from cuckood_testlib import CuckoodProcess, RawClient, binary, encode, free_port

# ---------------------------------------------------------------------------------------------
# helpers


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def info_field(c, section, name):
    text = c.call("INFO", section).decode()
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise KeyError(name)


def client_line(c, port):
    """The CLIENT LIST line of the client whose local port is `port`, or None."""
    for line in c.call("CLIENT", "LIST").decode(errors="replace").split("\n"):
        if " addr=127.0.0.1:%d " % port in line:
            return dict(f.split("=", 1) for f in line.strip().split(" ") if "=" in f)
    return None


class Sampler:
    """Samples the server's RSS and one ordinary client's PING latency in the background."""

    def __init__(self, srv):
        self.srv = srv
        self.stop_ev = threading.Event()
        self.max_rss = 0
        self.max_latency = 0.0
        self.errors = []
        self.threads = [threading.Thread(target=self._rss, daemon=True),
                        threading.Thread(target=self._ping, daemon=True)]
        for t in self.threads:
            t.start()

    def _rss(self):
        while not self.stop_ev.is_set():
            try:
                self.max_rss = max(self.max_rss, rss(self.srv.proc.pid))
            except OSError:
                return
            time.sleep(0.02)

    def _ping(self):
        try:
            c = RawClient(self.srv.port, timeout=30)
            while not self.stop_ev.is_set():
                t0 = time.monotonic()
                if c.call("PING") != b"+PONG\r\n":
                    self.errors.append("bad PING reply")
                self.max_latency = max(self.max_latency, time.monotonic() - t0)
                time.sleep(0.01)
            c.close()
        except Exception as e:  # noqa: BLE001
            self.errors.append(repr(e))

    def close(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(10)
        assert not self.errors, self.errors


def send_without_reading(sock, data, seconds):
    """Keeps sending data (non-blocking) for `seconds`; returns (bytes accepted, error or None)."""
    sock.setblocking(False)
    sent, err = 0, None
    deadline = time.monotonic() + seconds
    pos = 0
    while time.monotonic() < deadline:
        try:
            n = sock.send(data[pos:] or data)
            pos = (pos + n) % len(data)
            sent += n
        except BlockingIOError:
            time.sleep(0.01)
        except OSError as e:
            err = e
            break
    sock.setblocking(True)
    return sent, err


def big_filter(c, key, mib):
    """A filter whose one sub-filter is `mib` MiB, so that CF.SCANDUMP key 1 replies mib MiB."""
    assert c.call("CF.RESERVE", key, str(mib << 20)) == b"+OK\r\n"  # bucket size 2
    assert c.call("CF.ADD", key, "x") == b":1\r\n"
    assert b"+Number of buckets\r\n:%d\r\n" % (mib << 19) in c.call("CF.INFO", key)


class RealRedis:
    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="real-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir] + list(extra),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def real_redis(*extra):
    return RealRedis(*extra) if shutil.which("redis-server") else None


# ---------------------------------------------------------------------------------------------
# client-output-buffer-limit and backpressure


def test_output_buffer_limit_disconnects_a_client_that_does_not_read(fresh_server):
    srv = fresh_server("--client-output-buffer-limit", "1mb")
    c = RawClient(srv.port)
    big_filter(c, "obl:4m", 4)
    base = rss(srv.proc.pid)
    sampler = Sampler(srv)
    hog = socket.create_connection(("127.0.0.1", srv.port))
    hog_port = hog.getsockname()[1]
    sent, err = send_without_reading(hog, encode(["CF.SCANDUMP", "obl:4m", "1"]) * 200, 2.0)
    deadline = time.monotonic() + 5
    while client_line(c, hog_port) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client_line(c, hog_port) is None, "the non-reading client is still connected"
    # what the hog gets: at most the start of a reply, then the end of the connection
    hog.settimeout(5)
    got = b""
    try:
        while True:
            chunk = hog.recv(1 << 20)
            if not chunk:
                break
            got += chunk
    except ConnectionResetError:
        pass
    hog.close()
    assert int(info_field(c, "stats", "client_output_buffer_limit_disconnections")) >= 1
    # a reply above the limit disconnects even a client that reads (as in Redis: the whole
    # reply is buffered before it is written)
    r = RawClient(srv.port)
    with pytest.raises((ConnectionError, OSError)):
        r.call("CF.SCANDUMP", "obl:4m", "1")
    r.close()
    # the others are fine
    assert c.call("CF.EXISTS", "obl:4m", "x") == b":1\r\n"
    assert c.call("CF.SCANDUMP", "obl:4m", "0")[:8] == b"*2\r\n:1\r\n"
    sampler.close()
    print("hog sent %d bytes (%r), got %d bytes; RSS %d -> max %d MiB; PING max %.3f s" % (
        sent, err, len(got), base >> 20, sampler.max_rss >> 20, sampler.max_latency))
    assert sampler.max_rss < base + (256 << 20)
    assert sampler.max_latency < 1.0
    c.close()


def test_output_buffer_limit_with_replies_below_the_limit(fresh_server):
    """Replies of 512 KiB each, pipelined, never read, limit 1 MiB: as in Redis, the client is
    disconnected once more than 1 MiB of its output is pending, and memory stays bounded."""
    srv = fresh_server("--client-output-buffer-limit", "1mb")
    c = RawClient(srv.port)
    assert c.call("CF.RESERVE", "obl:512k", str(512 << 10)) == b"+OK\r\n"
    assert c.call("CF.ADD", "obl:512k", "x") == b":1\r\n"
    base = rss(srv.proc.pid)
    sampler = Sampler(srv)
    hog = socket.create_connection(("127.0.0.1", srv.port))
    hog_port = hog.getsockname()[1]
    sent, err = send_without_reading(hog, encode(["CF.SCANDUMP", "obl:512k", "1"]) * 200, 2.0)
    deadline = time.monotonic() + 5
    while client_line(c, hog_port) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    sampler.close()
    assert client_line(c, hog_port) is None, "the client that does not read is still connected"
    assert int(info_field(c, "stats", "client_output_buffer_limit_disconnections")) >= 1
    print("512 KiB replies: disconnected; hog sent %d bytes (%r); RSS %d -> max %d MiB" % (
        sent, err, base >> 20, sampler.max_rss >> 20))
    assert sampler.max_rss < base + (256 << 20)
    assert sampler.max_latency < 1.0
    hog.close()
    c.close()


def test_a_client_that_never_reads_gets_backpressure_not_unbounded_memory(fresh_server):
    srv = fresh_server()  # no output limit
    c = RawClient(srv.port)
    big_filter(c, "bp:4m", 4)
    base = rss(srv.proc.pid)
    blocked_before = int(info_field(c, "stats", "blocked_on_output"))
    sampler = Sampler(srv)
    hog = socket.create_connection(("127.0.0.1", srv.port))
    hog_port = hog.getsockname()[1]
    request = encode(["CF.SCANDUMP", "bp:4m", "1"])
    # every request asks for 4 MiB; a server that kept reading would need GiBs
    sent1, err = send_without_reading(hog, request * 500, 1.5)
    assert err is None
    sent2, err = send_without_reading(hog, request * 500, 1.0)
    assert err is None
    line = client_line(c, hog_port)
    assert line is not None, "the client was disconnected although there is no limit"
    sampler.close()
    print("backpressure: hog sent %d then %d more bytes (%d requests = %d GiB of replies); "
          "qbuf=%s omem=%s; RSS %d -> max %d MiB; PING max %.3f s" % (
              sent1, sent2, (sent1 + sent2) // len(request),
              (sent1 + sent2) // len(request) * 4 >> 10, line["qbuf"], line["omem"],
              base >> 20, sampler.max_rss >> 20, sampler.max_latency))
    assert sent2 < 16 << 20, "the server keeps reading a client that does not read"
    assert int(line["qbuf"]) <= 1 << 20
    assert int(line["omem"]) <= (4 << 20) + (1 << 20)
    assert int(info_field(c, "stats", "blocked_on_output")) > blocked_before
    assert sampler.max_rss < base + (256 << 20)
    assert sampler.max_latency < 1.0
    # when the client finally reads, its replies are intact
    hog.settimeout(30)
    buf = b""
    want = b"*2\r\n:4194305\r\n$4194304\r\n"
    for _ in range(3):
        while len(buf) < len(want) + (4 << 20) + 2:
            chunk = hog.recv(1 << 20)
            assert chunk, "connection closed"
            buf += chunk
        assert buf.startswith(want)
        body = buf[len(want):len(want) + (4 << 20)]
        assert body.count(0) == (4 << 20) - 1  # one fingerprint
        assert buf[len(want) + (4 << 20):len(want) + (4 << 20) + 2] == b"\r\n"
        buf = buf[len(want) + (4 << 20) + 2:]
    hog.close()
    assert c.call("CF.EXISTS", "bp:4m", "x") == b":1\r\n"
    c.close()


# ---------------------------------------------------------------------------------------------
# slow clients and connection churn


def test_slow_clients_and_connection_churn_do_not_stall_a_normal_client(fresh_server):
    srv = fresh_server()
    rnd = random.Random(1234)
    stop = threading.Event()
    problems = []
    stats = {"slow_done": 0, "churn": 0}

    def slow_clients():
        socks = []
        for i in range(200):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.setblocking(False)
            socks.append([s, encode(["CF.ADD", "slow:%d" % i, "item"]), 0, b""])
        try:
            while not stop.is_set():
                tick = time.monotonic()
                for entry in socks:
                    s, data, pos, got = entry
                    if pos < len(data):
                        try:
                            entry[2] += s.send(data[pos:pos + 1])
                        except BlockingIOError:
                            pass
                    else:
                        try:
                            entry[3] += s.recv(100)
                        except BlockingIOError:
                            pass
                        if entry[3] == b":1\r\n":
                            stats["slow_done"] += 1
                            entry[2], entry[3] = 0, b""  # and the same command again
                        elif len(entry[3]) > 4 and not entry[3].startswith(b":"):
                            problems.append("slow client got %r" % entry[3][:40])
                time.sleep(max(0.0, 0.05 - (time.monotonic() - tick)))
        except Exception as e:  # noqa: BLE001
            problems.append("slow clients: %r" % e)
        finally:
            for entry in socks:
                entry[0].close()

    def churn(seed):
        r = random.Random(seed)
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
                k = r.randrange(5)
                if k == 0:
                    s.sendall(b"PING\r\n")
                    if s.recv(100) != b"+PONG\r\n":
                        problems.append("churn PING")
                elif k == 1:
                    s.sendall(encode(["CF.ADD", "churn", "x%d" % r.randrange(1000)])[:-3])
                elif k == 2:  # reset instead of FIN
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00" * 2)
                    s.sendall(encode(["CF.EXISTS", "churn", "x"]))
                elif k == 3:
                    s.sendall(encode(["CF.SCANDUMP", "churn", "0"]) * 20)
                s.close()
                stats["churn"] += 1
            except OSError as e:
                problems.append("churn: %r" % e)
                time.sleep(0.05)

    threads = [threading.Thread(target=slow_clients)] + \
        [threading.Thread(target=churn, args=(rnd.random(),)) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    c = RawClient(srv.port)
    latencies = []
    i = 0
    t_end = time.monotonic() + 4.5
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        assert c.call("CF.ADD", "normal", "n%d" % i) == b":1\r\n"
        assert c.call("CF.EXISTS", "normal", "n%d" % i) == b":1\r\n"
        latencies.append(time.monotonic() - t0)
        i += 1
        time.sleep(0.002)
    stop.set()
    for t in threads:
        t.join(30)
    latencies.sort()
    median, p99, worst = (latencies[len(latencies) // 2], latencies[len(latencies) * 99 // 100],
                          latencies[-1])
    print("normal client: %d ADD+EXISTS pairs, median %.1f ms, p99 %.1f ms, max %.1f ms; "
          "%d slow commands completed, %d churned connections" % (
              len(latencies), median * 1e3, p99 * 1e3, worst * 1e3, stats["slow_done"],
              stats["churn"]))
    assert not problems, problems[:10]
    assert stats["slow_done"] >= 200  # ~40 bytes at 20 bytes/s: about 2 s per command
    assert stats["churn"] > 200
    assert median < 0.05 and worst < 1.0
    # nothing leaks: the connections are gone
    deadline = time.monotonic() + 5
    while int(info_field(c, "clients", "connected_clients")) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert int(info_field(c, "clients", "connected_clients")) == 1
    c.close()


# ---------------------------------------------------------------------------------------------
# client-query-buffer-limit


def test_client_query_buffer_limit(fresh_server):
    srv = fresh_server("--client-query-buffer-limit", "1mb")
    c = RawClient(srv.port)
    assert c.call("CONFIG", "GET", "client-query-buffer-limit") == (
        b"*2\r\n$25\r\nclient-query-buffer-limit\r\n$7\r\n1048576\r\n")
    # below the minimum (1 MiB, as in Redis): refused at startup
    out = subprocess.run([binary(), "--client-query-buffer-limit", "512kb", "--port",
                          str(free_port()), "--dir", srv.data_dir + "-unused"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode != 0 and "client-query-buffer-limit" in out.stdout + out.stderr
    # a complete command below the limit is fine
    item = os.urandom(900 << 10)
    assert c.call("CF.ADD", "qbl", item) == b":1\r\n"
    # an incomplete 2 MiB command: an error, then the connection is closed
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(b"*3\r\n$6\r\nCF.ADD\r\n$3\r\nqbl\r\n$3000000\r\n" + b"a" * (2 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    got, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
    except ConnectionResetError:
        closed = True
    s.close()
    assert closed
    # Redis closes such a client without a reply; cuckood says why first
    assert got in (b"", b"-ERR Protocol error: query buffer limit exceeded\r\n"), got
    assert got, "closed without an error reply"
    assert c.call("CF.EXISTS", "qbl", item) == b":1\r\n"
    assert c.call("CF.COUNT", "qbl", "a" * 100) == b":0\r\n"
    c.close()


def test_query_buffer_limit_disconnections_are_counted(fresh_server):
    srv = fresh_server("--client-query-buffer-limit", "1mb")
    c = RawClient(srv.port)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n" + b"a" * (2 << 20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        pass
    s.close()
    assert int(info_field(c, "stats", "client_query_buffer_limit_disconnections")) == 1
    c.close()


# ---------------------------------------------------------------------------------------------
# protected mode from a non-loopback address

NS_ADDR = "10.213.7.1"
CLIENT_SCRIPT = r"""
import os, socket, sys, time
host, port, host_ns = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Safety: talk only from inside the private namespace (unless host_ns is "-"), and only to an
# address of this machine (binding to it first fails unless it is local, so nothing can leave).
if host_ns != "-" and os.readlink("/proc/self/ns/net") == host_ns:
    sys.stdout.write("\n<not in a private namespace>")
    sys.exit(3)
deadline = time.time() + 15
while True:
    s = socket.socket()
    s.settimeout(5)
    try:
        s.bind((host, 0))
        s.connect((host, port))
        break
    except OSError:
        s.close()
        if time.time() > deadline:
            raise
        time.sleep(0.05)
s.sendall(b"PING\r\n")
data = b""
try:
    while data != b"+PONG\r\n":
        chunk = s.recv(65536)
        if not chunk:
            data += b"<closed>"
            break
        data += chunk
except (socket.timeout, ConnectionResetError) as e:
    data += b"<" + repr(e).encode() + b">"
sys.stdout.buffer.write(s.getsockname()[0].encode() + b"\n" + data)
"""


def run_in_namespace(argv, **kw):
    """argv in a new network namespace where only lo (with NS_ADDR added) exists."""
    return subprocess.Popen(
        ["unshare", "-n", "sh", "-c",
         'ip link set lo up && ip addr add %s/32 dev lo && exec "$0" "$@"' % NS_ADDR] + argv,
        **kw)


def ns_client(pid, host, port):
    """Runs CLIENT_SCRIPT inside the network namespace of process pid."""
    host_ns = os.readlink("/proc/self/ns/net")
    deadline = time.time() + 10
    # until unshare(2) has run, /proc/PID/ns/net is still ours: never enter that one
    while os.readlink("/proc/%d/ns/net" % pid) == host_ns:
        assert time.time() < deadline, "the server never got its own network namespace"
        time.sleep(0.02)
    out = subprocess.run(["nsenter", "--net=/proc/%d/ns/net" % pid, sys.executable, "-c",
                          CLIENT_SCRIPT, host, str(port), host_ns],
                         capture_output=True, timeout=30)
    assert out.returncode == 0, (out.stdout, out.stderr)
    local, _, data = out.stdout.partition(b"\n")
    return local.decode(), data


def namespace_works():
    if not (shutil.which("unshare") and shutil.which("nsenter") and shutil.which("ip")):
        return False
    out = subprocess.run(["unshare", "-n", "sh", "-c",
                          "ip link set lo up && ip addr add %s/32 dev lo" % NS_ADDR],
                         capture_output=True, timeout=10)
    return out.returncode == 0


DENIED_PREFIX = (b"-DENIED Redis is running in protected mode because protected mode is enabled "
                 b"and no password is set for the default user. In this mode connections are "
                 b"only accepted from the loopback interface.")


def host_non_loopback_address():
    """An IPv4 address of this machine other than 127.x (one we can bind to), or None."""
    if not shutil.which("ip"):
        return None
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        fields = line.split()
        if "inet" in fields:
            addr = fields[fields.index("inet") + 1].split("/")[0]
            try:
                with socket.socket() as s:
                    s.bind((addr, 0))
                return addr
            except OSError:
                continue
    return None


class NamespaceNet:
    """Server and client in a private network namespace whose lo also carries NS_ADDR."""
    addr = NS_ADDR
    bind = "0.0.0.0"

    def start(self, argv, **kw):
        return run_in_namespace(argv, **kw)

    def client(self, proc, host, port):
        return ns_client(proc.pid, host, port)


class HostNet:
    """Fallback: this machine's own non-loopback address (traffic to it stays on the machine);
    the server listens on that address and loopback only."""

    def __init__(self, addr):
        self.addr = addr
        self.bind = "127.0.0.1 " + addr

    def start(self, argv, **kw):
        return subprocess.Popen(argv, **kw)

    def client(self, proc, host, port):
        out = subprocess.run([sys.executable, "-c", CLIENT_SCRIPT, host, str(port), "-"],
                             capture_output=True, timeout=30)
        assert out.returncode == 0, (out.stdout, out.stderr)
        local, _, data = out.stdout.partition(b"\n")
        return local.decode(), data


def test_protected_mode_denies_a_non_loopback_client(tmp_path):
    if namespace_works():
        net = NamespaceNet()
    elif host_non_loopback_address():
        net = HostNet(host_non_loopback_address())
    else:
        pytest.skip("no non-loopback IPv4 address on this machine and no private network "
                    "namespace (unshare -n) to create one in")
    print("protected mode: client address %s (%s)" % (net.addr, type(net).__name__))
    procs, logs = [], []
    try:
        def start(*extra, name):
            port = free_port()
            log = open(str(tmp_path / (name + ".log")), "wb")
            logs.append(log)
            p = net.start([binary(), "--bind", net.bind, "--port", str(port), "--dir",
                           str(tmp_path / name), "--workers", "1"] + list(extra),
                          stdout=log, stderr=subprocess.STDOUT)
            procs.append(p)
            return p, port

        p, port = start("--protected-mode", "yes", name="protected")
        local, data = net.client(p, net.addr, port)
        assert local == net.addr
        assert data.startswith(DENIED_PREFIX), data[:200]
        # then the server closes (a reset when our PING is still unread, as with Redis)
        denied, _, end = data.rpartition(b"\r\n")
        denied += b"\r\n"
        assert end in (b"<closed>", b"<ConnectionResetError(104, 'Connection reset by peer')>"), \
            data[-100:]
        assert denied.count(b"\r\n") == 1
        # loopback is still served
        assert net.client(p, "127.0.0.1", port) == ("127.0.0.1", b"+PONG\r\n")
        p.terminate()
        p.wait(20)
        # the same from a real redis-server, in its own namespace
        if isinstance(net, NamespaceNet) and shutil.which("redis-server"):
            rdir = tmp_path / "redis"
            rdir.mkdir()
            rport = free_port()
            r = net.start(["redis-server", "--bind", "0.0.0.0", "--port", str(rport),
                           "--protected-mode", "yes", "--save", "", "--appendonly", "no",
                           "--dir", str(rdir)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(r)
            _, rdata = net.client(r, net.addr, rport)
            r.terminate()
            r.wait(20)
            if rdata.rpartition(b"\r\n")[0] + b"\r\n" != denied:
                # Redis 7.0 words point 4 "Setup a an authentication password"; later
                # versions say "Set up an authentication password", as cuckood does
                print("DENIED text differs from the installed redis-server:\n  cuckood %r\n"
                      "  redis   %r" % (denied[-200:], rdata[-210:]))
            assert rdata.startswith(DENIED_PREFIX)
        # protected mode off, or a password: the non-loopback client is served
        p, port = start("--protected-mode", "no", name="open")
        assert net.client(p, net.addr, port) == (net.addr, b"+PONG\r\n")
        p.terminate()
        p.wait(20)
        p, port = start("--protected-mode", "yes", "--requirepass", "secret", name="password")
        _, data = net.client(p, net.addr, port)
        assert data.startswith(b"-NOAUTH"), data
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


# ---------------------------------------------------------------------------------------------
# rename-command and CONFIG SET dir

RENAMES = ["--rename-command", "FLUSHALL", "", "--rename-command", "CONFIG", "myconfig"]


def test_rename_command(fresh_server):
    srv = fresh_server(*RENAMES)
    c = RawClient(srv.port)
    c.call("CF.ADD", "rn:k", "x")
    expected = {
        ("FLUSHALL",): b"-ERR unknown command 'FLUSHALL', with args beginning with: \r\n",
        ("flushall", "async"): b"-ERR unknown command 'flushall', with args beginning with: "
                               b"'async' \r\n",
        ("CONFIG", "GET", "port"): b"-ERR unknown command 'CONFIG', with args beginning with: "
                                   b"'GET' 'port' \r\n",
        ("MYCONFIG", "GET", "port"): b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (
            len(str(srv.port)), srv.port),
        ("myConfig", "get", "maxclients"): b"*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n",
        ("MYCONFIG",): b"-ERR wrong number of arguments for 'config' command\r\n",
    }
    for cmd, want in expected.items():
        assert c.call(*cmd) == want, cmd
    assert c.call("CF.EXISTS", "rn:k", "x") == b":1\r\n"  # FLUSHALL really did not run
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("FLUSHALL").startswith(b"-ERR unknown command 'FLUSHALL'")
    assert c.call("EXEC") == (b"-EXECABORT Transaction discarded because of previous "
                              b"errors.\r\n")
    assert c.call("CF.EXISTS", "rn:k", "x") == b":1\r\n"
    real = real_redis(*RENAMES)
    if real:
        try:
            r = RawClient(real.port)
            for cmd in [("FLUSHALL",), ("flushall", "async"), ("CONFIG", "GET", "port"),
                        ("myConfig", "get", "maxclients"), ("MYCONFIG",),
                        ("MYCONFIG", "SET", "dir", "/tmp")]:
                assert c.call(*cmd) == r.call(*cmd), cmd
            r.close()
        finally:
            real.stop()
    c.close()


def test_config_set_dir_is_refused(fresh_server):
    srv = fresh_server()
    c = RawClient(srv.port)
    want = (b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set "
            b"protected config\r\n")
    assert c.call("CONFIG", "SET", "dir", "/tmp") == want
    assert c.call("CONFIG", "SET", "maxclients", "50", "dir", "/tmp") == want
    assert c.call("CONFIG", "GET", "dir") == b"*2\r\n$3\r\ndir\r\n$%d\r\n%s\r\n" % (
        len(srv.data_dir), srv.data_dir.encode())
    assert c.call("CONFIG", "GET", "maxclients") == b"*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"
    real = real_redis()
    if real:
        try:
            r = RawClient(real.port)
            assert r.call("CONFIG", "SET", "dir", "/tmp") == want
            assert r.call("CONFIG", "SET", "maxclients", "50", "dir", "/tmp") == want
            r.close()
        finally:
            real.stop()
    assert c.call("CF.ADD", "cfgdir", "x") == b":1\r\n"
    c.close()


# ---------------------------------------------------------------------------------------------
# a full disk

TMPFS_MIB = 32
LEAVE_FREE = 6 << 20  # what the filler file leaves to the database


@pytest.fixture
def small_disk(tmp_path):
    """A 32 MiB tmpfs; unmounted at the end whatever happens."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % TMPFS_MIB, "tmpfs",
                          str(mnt)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("cannot mount a tmpfs: " + out.stderr.strip())
    # an aborting server must not leave a core file behind
    old_core = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, old_core[1]))
    procs = []
    try:
        yield mnt, procs
    finally:
        for p in procs:
            p.stop()
        resource.setrlimit(resource.RLIMIT_CORE, old_core)
        deadline = time.time() + 10
        while subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            if time.time() > deadline:
                subprocess.run(["umount", "-l", str(mnt)])
                break
            time.sleep(0.2)


def disk_free(path):
    st = os.statvfs(str(path))
    return st.f_bavail * st.f_frsize


def start_on_disk(mnt, procs, tmp_path, *extra):
    p = CuckoodProcess(str(mnt / "data"), extra_args=list(extra))
    p.log_path = str(tmp_path / ("server-%d.log" % len(procs)))  # not on the small disk
    procs.append(p)
    p.start()
    return p


def fill_disk(srv, mnt, c):
    """Leaves about LEAVE_FREE bytes free (a filler file takes the rest), then CF.INSERTs until
    a write fails. Returns (acknowledged items, the failing reply)."""
    with open(str(mnt / "filler"), "wb") as f:
        f.write(b"\0" * max(0, disk_free(mnt) - LEAVE_FREE))
    assert c.call("CF.RESERVE", "disk:big", "100000000") == b"+OK\r\n"
    acked = []
    n = 0
    while True:
        items = [b"d%d" % i for i in range(n, n + 5000)]
        n += 5000
        t0 = time.monotonic()
        reply = c.call("CF.INSERT", "disk:big", "ITEMS", *items)
        assert time.monotonic() - t0 < 5, "a write took %.1f s on a full disk" % (
            time.monotonic() - t0)
        if reply.startswith(b"-"):
            return acked, reply
        assert reply == b"*5000\r\n" + b":1\r\n" * 5000, reply[:100]
        acked += items
        assert n < 5000000, "the disk never filled up"


def mexists_all(c, key, items):
    for i in range(0, len(items), 50000):
        part = items[i:i + 50000]
        reply = c.call("CF.MEXISTS", key, *part)
        if reply != b"*%d\r\n" % len(part) + b":1\r\n" * len(part):
            return False
    return True


def test_disk_full_gives_an_error_reply_and_reads_keep_working(small_disk, tmp_path):
    mnt, procs = small_disk
    srv = start_on_disk(mnt, procs, tmp_path, "--appendfsync", "always")
    c = RawClient(srv.port, timeout=10)
    assert c.call("SET", "disk:s", "before") == b"+OK\r\n"
    acked, reply = fill_disk(srv, mnt, c)
    print("disk full after %d acknowledged items: %r" % (len(acked), reply))
    assert b"space" in reply, reply
    # other writes fail the same way, quickly; reads work
    for cmd in (["CF.ADD", "disk:other", "x"], ["SET", "disk:s", "after"]):
        t0 = time.monotonic()
        r = c.call(*cmd)
        assert time.monotonic() - t0 < 5
        assert r.startswith(b"-") and b"space" in r, (cmd, r)
    assert c.call("PING") == b"+PONG\r\n"
    assert c.call("GET", "disk:s") == b"$6\r\nbefore\r\n"
    assert mexists_all(c, "disk:big", acked), "an acknowledged item is missing"
    assert b"+Number of items inserted\r\n:%d\r\n" % len(acked) in c.call("CF.INFO", "disk:big")
    c.close()
    # stop (it may fail to flush: any exit is accepted here), free space, restart: every
    # acknowledged write is there and writes work again
    print("exit code of the stopped server with a full disk:", srv.stop())
    os.remove(str(mnt / "filler"))
    srv.start()
    c = RawClient(srv.port, timeout=10)
    assert mexists_all(c, "disk:big", acked)
    assert c.call("GET", "disk:s") == b"$6\r\nbefore\r\n"
    assert c.call("CF.ADD", "disk:other", "x") == b":1\r\n"
    c.close()
    assert srv.stop() == 0
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_disk_full_does_not_kill_the_server(small_disk, tmp_path):
    mnt, procs = small_disk
    srv = start_on_disk(mnt, procs, tmp_path)  # default appendfsync everysec
    c = RawClient(srv.port, timeout=10)
    acked, reply = fill_disk(srv, mnt, c)
    assert b"space" in reply
    time.sleep(2.5)
    assert srv.proc.poll() is None, "the server died: exit %s" % srv.proc.returncode
    for i in range(5):
        r = c.call("CF.ADD", "disk:retry", "r%d" % i)
        assert r.startswith(b"-") and b"space" in r
        time.sleep(0.2)
    assert srv.proc.poll() is None, "the server died: exit %s" % srv.proc.returncode
    assert mexists_all(c, "disk:big", acked)
    c.close()
    code = srv.stop()
    assert code is not None and code >= 0, "SIGTERM: exit %s" % code


def test_repeated_writes_and_sigterm_on_a_full_disk_do_not_kill_the_server(small_disk, tmp_path):
    mnt, procs = small_disk
    srv = start_on_disk(mnt, procs, tmp_path, "--appendfsync", "always")
    c = RawClient(srv.port, timeout=10)
    acked, reply = fill_disk(srv, mnt, c)
    assert b"space" in reply
    for i in range(12):
        r = c.call("SET", "disk:s%d" % i, "v") if i % 2 else c.call("CF.ADD", "disk:r", "r%d" % i)
        assert r.startswith(b"-") and b"space" in r, r
    assert srv.proc.poll() is None, "the server died: exit %s" % srv.proc.returncode
    assert mexists_all(c, "disk:big", acked)
    c.close()
    code = srv.stop()
    assert code is not None and code >= 0, "SIGTERM: exit %s: %s" % (code, srv.read_log()[-300:])


def test_writes_work_again_after_space_is_freed(small_disk, tmp_path):
    mnt, procs = small_disk
    # appendfsync always, and few writes while the disk is full: no abort (see the tests above)
    srv = start_on_disk(mnt, procs, tmp_path, "--appendfsync", "always")
    c = RawClient(srv.port, timeout=10)
    acked, reply = fill_disk(srv, mnt, c)
    assert b"space" in reply
    os.remove(str(mnt / "filler"))
    deadline = time.monotonic() + 8
    while True:
        r = c.call("CF.ADD", "disk:after", "z")
        if r == b":1\r\n" or time.monotonic() > deadline:
            break
        assert b"space" in r, r
        time.sleep(0.5)
    assert r == b":1\r\n", "writes still fail 8 s after space was freed: %r" % r
    assert mexists_all(c, "disk:big", acked)
    c.close()


def test_too_little_space_freed_keeps_refusing_writes_then_recovers(small_disk, tmp_path):
    """Recovery attempts while the flush of the memtables still cannot fit must neither crash
    the server nor lose anything; once enough space is back, writes work again."""
    mnt, procs = small_disk
    srv = start_on_disk(mnt, procs, tmp_path)  # default appendfsync everysec
    c = RawClient(srv.port, timeout=10)
    acked, reply = fill_disk(srv, mnt, c)
    assert b"space" in reply
    filler = str(mnt / "filler")
    os.truncate(filler, max(0, os.path.getsize(filler) - (1200 << 10)))  # 1.2 MiB back
    for i in range(8):
        r = c.call("CF.ADD", "disk:partial", "p%d" % i)
        assert r == b":1\r\n" or (r.startswith(b"-") and b"space" in r), r
        time.sleep(0.4)
    assert srv.proc.poll() is None, "the server died: exit %s" % srv.proc.returncode
    assert mexists_all(c, "disk:big", acked)
    assert b"write_errors:" in c.call("INFO", "rocksdb")
    os.remove(filler)
    deadline = time.monotonic() + 8
    while True:
        r = c.call("CF.ADD", "disk:after", "z")
        if r == b":1\r\n" or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert r == b":1\r\n", r
    assert info_field(c, "rocksdb", "write_error") == "none"
    assert int(info_field(c, "rocksdb", "write_error_recoveries")) >= 1
    assert mexists_all(c, "disk:big", acked)
    c.close()
    assert srv.stop() == 0
    srv.start()
    c = RawClient(srv.port, timeout=10)
    assert mexists_all(c, "disk:big", acked)
    assert c.call("CF.EXISTS", "disk:after", "z") == b":1\r\n"
    c.close()
    assert srv.stop() == 0
    out = subprocess.run([binary(), "--check", "--dir", srv.data_dir], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_disk_full_under_grouped_writes_of_several_clients(small_disk, tmp_path):
    """Pipelined and concurrent CF.ADDs share RocksDB writes (group commit): when the disk
    fills, each reply is either a success that survives a restart or the no-space error, and
    the filter's count is exactly the number of successes."""
    mnt, procs = small_disk
    srv = start_on_disk(mnt, procs, tmp_path, "--appendfsync", "always")
    c = RawClient(srv.port, timeout=10)
    assert c.call("CF.RESERVE", "disk:grouped", "1000000") == b"+OK\r\n"
    with open(str(mnt / "filler"), "wb") as f:
        f.write(b"\0" * max(0, disk_free(mnt) - LEAVE_FREE))
    acked = [[] for _ in range(4)]
    bad = []

    def writer(n):
        cc = RawClient(srv.port, timeout=10)
        try:
            for batch in range(2000):
                items = [b"w%d-%d-%d" % (n, batch, i) for i in range(50)]
                cc.send_raw(b"".join(encode(["CF.ADD", "disk:grouped", it]) for it in items))
                replies = [cc.read_reply() for _ in items]
                for it, r in zip(items, replies):
                    if r == b":1\r\n":
                        acked[n].append(it)
                    elif not (r.startswith(b"-") and b"space" in r):
                        bad.append(r)
                if any(r.startswith(b"-") for r in replies):
                    return
        finally:
            cc.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert bad == [], bad[:3]
    items = [it for part in acked for it in part]
    assert items, "nothing was acknowledged before the disk filled up"
    assert all(len(part) < 2000 * 50 for part in acked), "the disk never filled up"
    assert srv.proc.poll() is None, "the server died: exit %s" % srv.proc.returncode
    c.close()
    srv.stop()
    os.remove(str(mnt / "filler"))
    srv.start()
    c = RawClient(srv.port, timeout=10)
    assert mexists_all(c, "disk:grouped", items), "an acknowledged item is missing"
    assert b"+Number of items inserted\r\n:%d\r\n" % len(items) in c.call("CF.INFO", "disk:grouped")
    c.close()
