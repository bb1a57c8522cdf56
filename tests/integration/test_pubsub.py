"""Pub/Sub, CLIENT KILL TYPE, CONFIG REWRITE and a real Redis Sentinel monitoring cuckood.

The Pub/Sub sequences run against cuckood and against Debian's redis-server 7 and compare the raw
reply bytes (RESP2 arrays and RESP3 push frames)."""
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest
from cuckood_testlib import RawClient, encode, free_port

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")


def wait_for(condition, timeout=10.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class RedisProcess:
    """A throwaway Debian redis-server (or sentinel) on a free port, stopped by its pid."""

    def __init__(self, args, port, log_path):
        self.port = port
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([REDIS_SERVER] + args, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited with %s" % self.proc.returncode)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not start on %d" % port)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def redis_ref(tmp_path_factory):
    if REDIS_SERVER is None:
        pytest.skip("redis-server not installed")
    d = tmp_path_factory.mktemp("redis-ref")
    port = free_port()
    proc = RedisProcess(["--port", str(port), "--bind", "127.0.0.1", "--save", "",
                         "--appendonly", "no", "--dir", str(d)], port, str(d / "redis.log"))
    yield proc
    proc.stop()


def run_script(port, script):
    """Runs (client, command or None, replies to read) steps; returns the replies of each step.
    Clients are opened on first use and named by the script, so both servers see the same
    sequence of connections."""
    clients = {}
    out = []
    try:
        for name, cmd, n in script:
            c = clients.get(name)
            if c is None:
                c = clients[name] = RawClient(port, timeout=5)
            if cmd is not None:
                c.send_raw(encode(cmd))
            out.append([c.read_reply() for _ in range(n)])
    finally:
        for c in clients.values():
            c.close()
    return out


def assert_same(server, redis_ref, script):
    ours = run_script(server.port, script)
    theirs = run_script(redis_ref.port, script)
    for step, a, b in zip(script, ours, theirs):
        assert a == b, "step %r: cuckood %r, redis %r" % (step[:2], a, b)


@needs_redis
def test_resp2_subscribe_counts_and_messages_match_redis(server, redis_ref):
    assert_same(server, redis_ref, [
        ("a", ["UNSUBSCRIBE"], 1),
        ("a", ["PUNSUBSCRIBE"], 1),
        ("a", ["SUBSCRIBE", "ps2:a", "ps2:b", "ps2:a"], 3),
        ("a", ["PSUBSCRIBE", "ps2:h*", "ps2:h*", "ps2:[xy]?"], 3),
        ("b", ["PUBLISH", "ps2:a", "m1"], 1),
        ("a", None, 1),
        ("b", ["PUBLISH", "ps2:hello", "m2"], 1),
        ("a", None, 1),
        ("b", ["PUBLISH", "ps2:x1", ""], 1),
        ("a", None, 1),
        ("b", ["PUBLISH", "ps2:nobody", "m3"], 1),
        ("a", ["UNSUBSCRIBE", "ps2:zz"], 1),
        ("a", ["UNSUBSCRIBE", "ps2:a"], 1),
        ("a", ["PUNSUBSCRIBE", "ps2:h*"], 1),
        ("a", ["SUBSCRIBE", "ps2:q"], 1),
        ("a", ["UNSUBSCRIBE", "ps2:q", "ps2:b"], 2),
        ("a", ["PUNSUBSCRIBE"], 1),
        ("a", ["PING"], 1),
        ("a", ["SUBSCRIBE", "ps2:r"], 1),
        ("a", ["RESET"], 1),
        ("a", ["PING"], 1),
        ("b", ["PUBLISH", "ps2:r", "gone"], 1),
        ("a", ["SUBSCRIBE"], 1),
        ("a", ["PUBLISH", "ps2:a"], 1),
    ])


@needs_redis
def test_resp2_subscribed_mode_errors_match_redis(server, redis_ref):
    assert_same(server, redis_ref, [
        ("a", ["SUBSCRIBE", "ps2e:a"], 1),
        ("a", ["PING"], 1),
        ("a", ["PING", "hi"], 1),
        ("a", ["GET", "k"], 1),
        ("a", ["MULTI"], 1),
        ("a", ["HELLO", "3"], 1),
        ("a", ["CLIENT", "ID"], 1),
        ("a", ["PUBLISH", "ps2e:a", "x"], 1),
        ("a", ["NOSUCHCOMMAND"], 1),
        ("a", ["PSUBSCRIBE", "ps2e:*"], 1),
        ("a", ["UNSUBSCRIBE"], 1),
        ("a", ["PING"], 1),
        ("a", ["PUNSUBSCRIBE"], 1),
        ("a", ["PING"], 1),
        ("a", ["ECHO", "back"], 1),
        ("a", ["SUBSCRIBE", "ps2e:b"], 1),
        ("a", ["QUIT"], 1),
    ])


@needs_redis
def test_resp3_push_frames_match_redis(server, redis_ref):
    hello = ("c", ["HELLO", "3"], 1)  # (its reply differs: cuckood lists the bf module)
    script = [
        ("c", ["UNSUBSCRIBE"], 1),
        ("c", ["SUBSCRIBE", "ps3:r1"], 1),
        ("c", ["PING"], 1),
        ("c", ["GET", "ps3:nokey"], 1),
        ("a", ["PUBLISH", "ps3:r1", "hi"], 1),
        ("c", None, 1),
        ("c", ["PSUBSCRIBE", "ps3:r*"], 1),
        ("a", ["PUBLISH", "ps3:r1", "both"], 1),
        ("c", None, 2),
        ("c", ["PUBLISH", "ps3:r1", "self"], 3),
        ("c", ["UNSUBSCRIBE"], 1),
        ("c", ["PUNSUBSCRIBE"], 1),
        ("c", ["UNSUBSCRIBE"], 1),
        ("c", ["PUNSUBSCRIBE", "ps3:none"], 1),
    ]
    ours = run_script(server.port, [hello] + script)[1:]
    theirs = run_script(redis_ref.port, [hello] + script)[1:]
    for step, a, b in zip(script, ours, theirs):
        assert a == b, "step %r: cuckood %r, redis %r" % (step[:2], a, b)


@needs_redis
def test_multi_with_publish_and_subscribe_matches_redis(server, redis_ref):
    assert_same(server, redis_ref, [
        ("s", ["SUBSCRIBE", "psm:ch"], 1),
        ("b", ["MULTI"], 1),
        ("b", ["PUBLISH", "psm:ch", "in-multi"], 1),
        ("b", ["PUBLISH", "psm:none", "x"], 1),
        ("b", ["SUBSCRIBE", "psm:zz"], 1),
        ("b", ["EXEC"], 1),
        ("s", None, 1),
        ("b", ["PING"], 1),
        ("b", ["GET", "k"], 1),
        ("b", ["RESET"], 1),
        ("b", ["MULTI"], 1),
        ("b", ["PUBLISH", "psm:ch"], 1),
        ("b", ["EXEC"], 1),
    ])


@needs_redis
def test_pubsub_introspection_matches_redis(server, redis_ref):
    setup = [
        ("a", ["SUBSCRIBE", "psi:one", "psi:two"], 2),
        ("b", ["SUBSCRIBE", "psi:two"], 1),
        ("c", ["PSUBSCRIBE", "psi:*", "psi:t*"], 2),
        ("d", ["PSUBSCRIBE", "psi:*"], 1),
    ]
    queries = [
        ("q", ["PUBSUB", "CHANNELS", "psi:t*"], 1),
        ("q", ["PUBSUB", "CHANNELS", "psi:[o]ne"], 1),
        ("q", ["PUBSUB", "NUMSUB", "psi:one", "psi:two", "psi:none"], 1),
        ("q", ["PUBSUB", "NUMSUB"], 1),
        ("q", ["PUBSUB", "SHARDCHANNELS"], 1),
        ("q", ["PUBSUB", "SHARDCHANNELS", "psi:*"], 1),
        ("q", ["PUBSUB", "SHARDNUMSUB", "psi:one"], 1),
        ("q", ["PUBSUB", "HELP"], 1),
        ("q", ["PUBSUB", "nosuch"], 1),
        ("q", ["PUBSUB", "CHANNELS", "a", "b"], 1),
        ("q", ["PUBSUB", "NUMPAT", "x"], 1),
        ("q", ["PUBSUB"], 1),
        ("q", ["PUBLISH", "psi:two", "m"], 1),
        ("q", ["HELLO", "3"], 1),
        ("q", ["PUBSUB", "NUMSUB", "psi:two"], 1),
        ("q", ["PUBSUB", "SHARDNUMSUB", "psi:two"], 1),
    ]

    def run(port):
        clients = {}
        try:
            for name, cmd, n in setup:
                c = clients.setdefault(name, RawClient(port, timeout=5))
                c.send_raw(encode(cmd))
                for _ in range(n):
                    c.read_reply()
            q = RawClient(port, timeout=5)
            clients["q"] = q
            replies = [q.call(*cmd) for _, cmd, _ in queries]
            numpat = q.call("PUBSUB", "NUMPAT")
            return replies, numpat
        finally:
            for c in clients.values():
                c.close()

    ours, our_numpat = run(server.port)
    theirs, their_numpat = run(redis_ref.port)
    for (_, cmd, _), a, b in zip(queries, ours, theirs):
        if cmd[:2] == ["HELLO", "3"]:
            continue
        assert a == b, "%r: cuckood %r, redis %r" % (cmd, a, b)
    # The session server may hold other tests' patterns: compare what these clients added.
    assert our_numpat.startswith(b":") and int(our_numpat[1:]) >= 2
    assert their_numpat.startswith(b":") and int(their_numpat[1:]) >= 2


def test_pubsub_channels_lists_active_channels(server):
    a = RawClient(server.port)
    q = RawClient(server.port)
    a.send_raw(encode(["SUBSCRIBE", "psc:x", "psc:y"]))
    a.read_reply()
    a.read_reply()
    assert q.call("PUBSUB", "CHANNELS", "psc:*") in (
        b"*2\r\n$5\r\npsc:x\r\n$5\r\npsc:y\r\n", b"*2\r\n$5\r\npsc:y\r\n$5\r\npsc:x\r\n")
    info = q.call("INFO", "stats").decode()
    assert int(info.split("pubsub_channels:")[1].split("\r\n")[0]) >= 2
    listing = q.call("CLIENT", "LIST", "TYPE", "pubsub").decode()
    assert " flags=P " in listing and " sub=2 psub=0 " in listing
    a.close()
    # A closed connection's subscriptions are gone.
    wait_for(lambda: q.call("PUBSUB", "CHANNELS", "psc:*") == b"*0\r\n", what="unsubscribe")
    assert q.call("PUBSUB", "NUMSUB", "psc:x") == b"*2\r\n$5\r\npsc:x\r\n:0\r\n"
    q.close()


def read_messages(client, count):
    got = []
    for _ in range(count):
        got.append(client.read_reply())
    return got


def test_many_messages_reach_subscribers_on_other_io_threads(server):
    # The server runs 2 io threads and deals connections out in turn, so of two subscribers
    # and two publishers some pairs live on different threads.
    subs = [RawClient(server.port), RawClient(server.port)]
    for s in subs:
        s.send_raw(encode(["SUBSCRIBE", "psmany:ch"]))
        s.read_reply()
        s.send_raw(encode(["PSUBSCRIBE", "psmany:*"]))
        s.read_reply()
    pubs = [RawClient(server.port), RawClient(server.port)]
    n = 500
    for i in range(n):
        for p, pub in enumerate(pubs):
            pub.send_raw(encode(["PUBLISH", "psmany:ch", "p%d-%d" % (p, i)]))
    for pub in pubs:
        assert read_messages(pub, n) == [b":4\r\n"] * n
    for s in subs:
        msgs = read_messages(s, 4 * n)
        plain = [m for m in msgs if m.startswith(b"*3\r\n$7\r\nmessage\r\n")]
        pattern = [m for m in msgs if m.startswith(b"*4\r\n$8\r\npmessage\r\n$8\r\npsmany:*\r\n")]
        assert len(plain) == 2 * n and len(pattern) == 2 * n
        for p in range(2):
            tag = b"p%d-" % p
            seq = [m.rsplit(b"\r\n", 2)[1] for m in plain if tag in m]
            assert seq == [b"p%d-%d" % (p, i) for i in range(n)]  # each publisher's order kept
    for c in subs + pubs:
        c.close()


def test_slow_subscriber_is_closed_by_pubsub_output_limit(fresh_server):
    srv = fresh_server("--client-output-buffer-limit", "pubsub", "256kb", "128kb", "60")
    q = RawClient(srv.port)
    assert b"pubsub 262144 131072 60" in q.call("CONFIG", "GET", "client-output-buffer-limit")
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", srv.port))
    slow.sendall(encode(["SUBSCRIBE", "psslow:ch"]))
    wait_for(lambda: q.call("PUBSUB", "NUMSUB", "psslow:ch").endswith(b":1\r\n"),
             what="the subscription")
    payload = "x" * 16384
    sent = 0
    # Bounded: at most 64 MB published; the subscriber never reads.
    while sent < 4096:
        q.call("PUBLISH", "psslow:ch", payload)
        sent += 1
        if sent % 64 == 0 and q.call("PUBSUB", "NUMSUB", "psslow:ch").endswith(b":0\r\n"):
            break
    assert q.call("PUBSUB", "NUMSUB", "psslow:ch").endswith(b":0\r\n"), "subscriber not closed"
    info = q.call("INFO", "stats").decode()
    assert int(info.split("client_output_buffer_limit_disconnections:")[1].split("\r")[0]) >= 1
    assert sent < 4096
    assert q.call("PING") == b"+PONG\r\n"
    slow.close()
    q.close()


def test_client_kill_type_pubsub_and_normal(fresh_server):
    srv = fresh_server()
    sub = RawClient(srv.port)
    sub.send_raw(encode(["SUBSCRIBE", "pskill:ch"]))
    sub.read_reply()
    normal = RawClient(srv.port)
    assert normal.call("PING") == b"+PONG\r\n"
    admin = RawClient(srv.port)
    assert admin.call("CLIENT", "KILL", "TYPE", "master") == b":0\r\n"
    assert admin.call("CLIENT", "KILL", "TYPE", "replica") == b":0\r\n"
    assert admin.call("CLIENT", "KILL", "TYPE", "slave") == b":0\r\n"
    assert admin.call("CLIENT", "LIST", "TYPE", "pubsub").count(b"id=") == 1
    assert admin.call("CLIENT", "LIST", "TYPE", "normal").count(b"id=") == 2
    assert admin.call("CLIENT", "KILL", "TYPE", "pubsub") == b":1\r\n"
    with pytest.raises((ConnectionError, OSError)):
        sub.read_reply()
    wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "pskill:ch").endswith(b":0\r\n"),
             what="the subscriber's close")
    assert admin.call("CLIENT", "KILL", "TYPE", "normal") == b":1\r\n"  # (skipme yes: not us)
    with pytest.raises((ConnectionError, OSError)):
        normal.call("PING")
    assert admin.call("PING") == b"+PONG\r\n"
    assert admin.call("CLIENT", "KILL", "TYPE", "bogus") == b"-ERR Unknown client type 'bogus'\r\n"
    admin.close()


# ---- CONFIG REWRITE --------------------------------------------------------------------------

CONF_TEXT = """# cuckood test config
# (this comment stays)
slowlog-max-len 5

# the timeout below changes
timeout 0
slowlog-max-len 6
"""


def test_config_rewrite_without_config_file(server):
    c = RawClient(server.port)
    assert c.call("CONFIG", "REWRITE") == b"-ERR The server is running without a config file\r\n"
    c.close()


def test_config_rewrite_keeps_comments_and_survives_restart(fresh_server, tmp_path):
    conf = tmp_path / "cuckood.conf"
    conf.write_text(CONF_TEXT)
    srv = fresh_server("--config", str(conf))
    c = RawClient(srv.port)
    assert c.call("CONFIG", "SET", "slowlog-max-len", "77") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "timeout", "300") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "maxclients", "123") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "requirepass", "two words") == b"+OK\r\n"
    assert c.call("AUTH", "two words") == b"+OK\r\n"
    assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
    text = conf.read_text()
    lines = text.splitlines()
    assert lines[:3] == ["# cuckood test config", "# (this comment stays)", "slowlog-max-len 77"]
    assert "# the timeout below changes" in lines and "timeout 300" in lines
    assert text.count("slowlog-max-len") == 1  # the option's second line is gone
    assert lines.index("timeout 300") == lines.index("# the timeout below changes") + 1
    assert "# Generated by CONFIG REWRITE" in lines
    assert "maxclients 123" in lines and 'requirepass "two words"' in lines
    assert "cf-bucket-size 2" not in text  # defaults not in the file are not added
    assert not [p for p in os.listdir(tmp_path) if "rewrite" in p]  # no temporary file left
    # A second rewrite with nothing changed writes the same file.
    assert c.call("CONFIG", "REWRITE") == b"+OK\r\n"
    assert conf.read_text() == text
    c.close()
    srv.restart()
    c = RawClient(srv.port)
    assert c.call("AUTH", "two words") == b"+OK\r\n"
    assert c.call("CONFIG", "GET", "slowlog-max-len") == (
        b"*2\r\n$15\r\nslowlog-max-len\r\n$2\r\n77\r\n")
    assert c.call("CONFIG", "GET", "timeout") == b"*2\r\n$7\r\ntimeout\r\n$3\r\n300\r\n"
    assert c.call("CONFIG", "GET", "maxclients") == b"*2\r\n$10\r\nmaxclients\r\n$3\r\n123\r\n"
    c.close()


def test_config_rewrite_reports_a_failed_write(fresh_server, tmp_path):
    d = tmp_path / "conf"
    d.mkdir()
    conf = d / "cuckood.conf"
    conf.write_text("timeout 0\n")
    srv = fresh_server("--config", str(conf))
    shutil.rmtree(d)  # (the temporary file cannot be created: as root too)
    c = RawClient(srv.port)
    assert c.call("CONFIG", "REWRITE") == (
        b"-ERR Rewriting config file: No such file or directory\r\n")
    assert not d.exists()
    assert c.call("PING") == b"+PONG\r\n"
    c.close()


# ---- Redis Sentinel --------------------------------------------------------------------------

def sentinel_masters(port):
    out = subprocess.run([REDIS_CLI, "-p", str(port), "SENTINEL", "MASTERS"], capture_output=True,
                         text=True, timeout=10).stdout.split("\n")
    return dict(zip(out[0::2], out[1::2]))


@pytest.mark.skipif(REDIS_SERVER is None or REDIS_CLI is None, reason="redis not installed")
def test_sentinel_monitors_cuckood_primary(fresh_server, tmp_path):
    srv = fresh_server()
    watcher = RawClient(srv.port, timeout=10)
    watcher.send_raw(encode(["SUBSCRIBE", "__sentinel__:hello"]))
    assert watcher.read_reply() == b"*3\r\n$9\r\nsubscribe\r\n$18\r\n__sentinel__:hello\r\n:1\r\n"
    sdir = tmp_path / "sentinel"
    sdir.mkdir()
    sport = free_port()
    conf = sdir / "sentinel.conf"
    conf.write_text("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"
                    "sentinel monitor m 127.0.0.1 %d 1\n"
                    "sentinel down-after-milliseconds m 1000\n" % (sport, sdir, srv.port))
    sentinel = RedisProcess([str(conf), "--sentinel"], sport, str(sdir / "sentinel.log"))
    try:
        # Sentinel publishes a hello on its command link every 2 seconds; our subscriber on
        # another connection gets it.
        hello = watcher.read_reply()
        assert hello.startswith(b"*3\r\n$7\r\nmessage\r\n$18\r\n__sentinel__:hello\r\n")
        fields = hello.split(b"\r\n")[-2].decode().split(",")
        assert fields[1] == str(sport) and fields[4] == "m" and fields[6] == str(srv.port)
        master = wait_for(lambda: (lambda m: m if m.get("flags") == "master" and
                                   m.get("role-reported") == "master" else None)(
                                       sentinel_masters(sport)),
                          timeout=15, what="sentinel to report the master")
        assert master["name"] == "m" and master["port"] == str(srv.port)
        # Past down-after-milliseconds the master still answers: no s_down.
        time.sleep(1.5)
        assert sentinel_masters(sport)["flags"] == "master"
        admin = RawClient(srv.port)
        listing = admin.call("CLIENT", "LIST").decode()
        assert "-cmd " in listing and "-pubsub " in listing and "flags=P" in listing
        admin.close()
    finally:
        sentinel.stop()
        watcher.close()


def test_sentinel_style_transaction_body(fresh_server, tmp_path):
    # What Sentinel sends a promoted or reconfigured instance (without its REPLICAOF): the
    # rewrite and the kills run inside EXEC, the caller survives.
    conf = tmp_path / "cuckood.conf"
    conf.write_text("# sentinel body\n")
    srv = fresh_server("--config", str(conf))
    sub = RawClient(srv.port)
    sub.send_raw(encode(["SUBSCRIBE", "pstx:ch"]))
    sub.read_reply()
    normal = RawClient(srv.port)
    assert normal.call("PING") == b"+PONG\r\n"
    c = RawClient(srv.port)
    assert c.call("CLIENT", "SETNAME", "sentinel-x-cmd") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "timeout", "77") == b"+OK\r\n"
    assert c.call("MULTI") == b"+OK\r\n"
    for cmd in (["CONFIG", "REWRITE"], ["CLIENT", "KILL", "TYPE", "normal"],
                ["CLIENT", "KILL", "TYPE", "pubsub"], ["PUBLISH", "pstx:ch", "late"]):
        assert c.call(*cmd) == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*4\r\n+OK\r\n:1\r\n:1\r\n:0\r\n"
    assert "timeout 77" in conf.read_text().splitlines()
    assert conf.read_text().startswith("# sentinel body\n")
    for victim in (sub, normal):
        with pytest.raises((ConnectionError, OSError)):
            victim.call("PING")
    assert c.call("PING") == b"+PONG\r\n"
    c.close()


def test_redis_py_pubsub_client(server):
    redis = pytest.importorskip("redis")
    r = redis.Redis(port=server.port)
    p = r.pubsub()
    p.subscribe("pspy:ch")
    p.psubscribe("pspy:p*")
    kinds = [wait_for(lambda: p.get_message(timeout=0.1), what="confirmation")["type"]
             for _ in range(2)]
    assert kinds == ["subscribe", "psubscribe"]
    assert r.pubsub_numsub("pspy:ch") == [(b"pspy:ch", 1)]
    assert r.publish("pspy:ch", "one") == 1
    assert r.publish("pspy:pat", "two") == 1
    first = wait_for(lambda: p.get_message(timeout=0.1), what="message")
    second = wait_for(lambda: p.get_message(timeout=0.1), what="pmessage")
    assert (first["type"], first["channel"], first["data"]) == ("message", b"pspy:ch", b"one")
    assert (second["type"], second["pattern"], second["data"]) == ("pmessage", b"pspy:p*", b"two")
    p.close()
    wait_for(lambda: r.pubsub_numsub("pspy:ch") == [(b"pspy:ch", 0)], what="unsubscribe on close")
    r.close()


def test_idle_timeout_spares_subscribers(fresh_server):
    srv = fresh_server("--timeout", "1")
    sub = RawClient(srv.port, timeout=10)
    sub.send_raw(encode(["SUBSCRIBE", "psidle:ch"]))
    sub.read_reply()
    idle = RawClient(srv.port, timeout=10)
    assert idle.call("PING") == b"+PONG\r\n"
    time.sleep(2.5)
    with pytest.raises((ConnectionError, OSError)):
        idle.call("PING")
    q = RawClient(srv.port)
    assert q.call("PUBLISH", "psidle:ch", "still here") == b":1\r\n"
    assert sub.read_reply() == b"*3\r\n$7\r\nmessage\r\n$9\r\npsidle:ch\r\n$10\r\nstill here\r\n"
    for c in (sub, q):
        c.close()
