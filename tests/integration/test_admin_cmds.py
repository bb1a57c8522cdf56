"""OBJECT, TOUCH, DEBUG (RELOAD, OBJECT, enable-debug-command), CLIENT PAUSE: the generic replies are compared
byte for byte with a real redis-server; filters keep every field across DEBUG RELOAD; a primary's
replicas keep following it across one."""
import re
import shutil
import time

import pytest
from cuckood_nodes import info, sequence, wait_for
from cuckood_testlib import RawClient, free_port, start_real_redis


@pytest.fixture(scope="module")
def real_redis_port():
    proc, port, d = start_real_redis("real-redis-admin-", "--enable-debug-command", "yes")
    yield port
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def raw(server):
    c = RawClient(server.port)
    c.call("SELECT", "9")
    c.call("FLUSHDB")
    yield c
    c.close()


GENERIC = [
    ("SET", "adm:int", "123"),
    ("SET", "adm:big", "123456"),
    ("SET", "adm:neg", "-5"),
    ("SET", "adm:lead", "0123"),
    ("SET", "adm:short", "hello"),
    ("SET", "adm:long", "x" * 45),
    ("SET", "adm:edge", "y" * 44),
    ("OBJECT", "ENCODING", "adm:int"),
    ("OBJECT", "ENCODING", "adm:big"),
    ("OBJECT", "ENCODING", "adm:neg"),
    ("OBJECT", "ENCODING", "adm:lead"),
    ("OBJECT", "ENCODING", "adm:short"),
    ("OBJECT", "ENCODING", "adm:long"),
    ("OBJECT", "ENCODING", "adm:edge"),
    ("OBJECT", "ENCODING", "adm:missing"),
    ("OBJECT", "REFCOUNT", "adm:int"),
    ("OBJECT", "REFCOUNT", "adm:big"),
    ("OBJECT", "REFCOUNT", "adm:short"),
    ("OBJECT", "REFCOUNT", "adm:missing"),
    ("OBJECT", "IDLETIME", "adm:missing"),
    ("OBJECT", "FREQ", "adm:short"),
    ("OBJECT", "FREQ", "adm:missing"),
    ("OBJECT", "HELP"),
    ("object", "help"),
    ("OBJECT", "NOPE", "adm:int"),
    ("OBJECT", "ENCODING"),
    ("OBJECT", "ENCODING", "a", "b"),
    ("OBJECT", "HELP", "extra"),
    ("OBJECT",),
    ("TOUCH", "adm:int", "adm:missing", "adm:int", "adm:short"),
    ("TOUCH", "adm:missing"),
    ("TOUCH",),
    ("DEBUG", "OBJECT", "adm:missing"),
    ("DEBUG", "OBJECT"),
    ("DEBUG", "NOPE"),
    ("DEBUG",),
    ("DEBUG", "RELOAD"),
    ("GET", "adm:long"),
    ("OBJECT", "ENCODING", "adm:short"),
]


def test_generic_replies_match_redis(raw, real_redis_port):
    real = RawClient(real_redis_port)
    real.call("SELECT", "9")
    real.call("FLUSHDB")
    try:
        for cmd in GENERIC:
            assert raw.call(*cmd) == real.call(*cmd), cmd
    finally:
        real.call("FLUSHDB")
        real.close()


def test_idletime_of_a_live_key_is_a_small_integer(raw):
    raw.call("SET", "adm:idle", "v")
    assert raw.call("OBJECT", "IDLETIME", "adm:idle") == b":0\r\n"


def test_filters_report_raw_encoding_and_a_debug_object_line(raw):
    assert raw.call("CF.RESERVE", "adm:f", "1000") == b"+OK\r\n"
    assert raw.call("CF.ADD", "adm:f", "a") == b":1\r\n"
    assert raw.call("OBJECT", "ENCODING", "adm:f") == b"$3\r\nraw\r\n"
    assert raw.call("OBJECT", "REFCOUNT", "adm:f") == b":1\r\n"
    assert raw.call("TOUCH", "adm:f") == b":1\r\n"
    line = raw.call("DEBUG", "OBJECT", "adm:f")
    m = re.fullmatch(rb"\+Value at:0x[0-9a-f]+ refcount:1 encoding:raw serializedlength:(\d+) "
                     rb"lru:\d+ lru_seconds_idle:0\r\n", line)
    assert m, line
    # The filter's pages and metadata take more than its 512 buckets' worth of page bytes.
    assert int(m.group(1)) >= 1024
    raw.call("SET", "adm:s", "hello")
    assert re.fullmatch(rb"\+Value at:0x[0-9a-f]+ refcount:1 encoding:embstr "
                        rb"serializedlength:5 lru:\d+ lru_seconds_idle:0\r\n",
                        raw.call("DEBUG", "OBJECT", "adm:s"))


def scandump_all(c, key):
    chunks, it = [], 0
    while True:
        reply = c.execute_command("CF.SCANDUMP", key, it)
        it = reply[0]
        if it == 0:
            return chunks
        chunks.append(reply)


def test_debug_reload_keeps_every_filter_field(fresh_server):
    redis = pytest.importorskip("redis")
    srv = fresh_server("--workers", "1", "--cache-size", "1mb")
    c = redis.Redis(port=srv.port)
    c.execute_command("CF.RESERVE", "f", 200, "BUCKETSIZE", 2, "EXPANSION", 2)
    for i in range(500):
        c.execute_command("CF.ADD", "f", "item%d" % i)
    for i in range(0, 500, 7):
        assert c.execute_command("CF.DEL", "f", "item%d" % i) == 1
    c.set("s", "value")
    c.execute_command("SELECT", 3)
    c.execute_command("CF.ADD", "g", "x")
    c.execute_command("SELECT", 0)
    c.expire("s", 1000)
    before = (c.execute_command("CF.INFO", "f"), scandump_all(c, "f"), c.get("s"))
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    after = (c.execute_command("CF.INFO", "f"), scandump_all(c, "f"), c.get("s"))
    assert after == before
    info = dict(zip(after[0][::2], after[0][1::2]))
    assert info[b"Number of items deleted"] > 0
    assert 0 < c.ttl("s") <= 1000
    c.execute_command("SELECT", 3)
    assert c.execute_command("CF.EXISTS", "g", "x") == 1
    # Writes after the reload land and survive a restart.
    c.execute_command("SELECT", 0)
    assert c.execute_command("CF.ADD", "f", "after") == 1
    srv.restart()
    c = redis.Redis(port=srv.port)
    assert c.execute_command("CF.EXISTS", "f", "after") == 1
    again = c.execute_command("CF.INFO", "f")
    assert dict(zip(again[::2], again[1::2]))[b"Number of items deleted"] == (
        info[b"Number of items deleted"])


def test_debug_reload_with_clients_busy_on_other_connections(fresh_server):
    srv = fresh_server("--workers", "2")
    a, b = RawClient(srv.port), RawClient(srv.port)
    for i in range(50):
        a.send_raw(b"*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$%d\r\n%s\r\n"
                   % (len(str(i)), str(i).encode()))
    assert b.call("DEBUG", "RELOAD") == b"+OK\r\n"
    replies = [a.read_reply() for _ in range(50)]
    assert set(replies) <= {b":1\r\n", b":0\r\n"}
    assert a.call("CF.EXISTS", "k", "49") == b":1\r\n"
    # Commands pipelined behind DEBUG RELOAD run after it, in order.
    b.send_raw(b"*2\r\n$5\r\nDEBUG\r\n$6\r\nRELOAD\r\n*2\r\n$3\r\nGET\r\n$1\r\nz\r\n"
               b"*3\r\n$3\r\nSET\r\n$1\r\nz\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$1\r\nz\r\n")
    assert [b.read_reply() for _ in range(4)] == [b"+OK\r\n", b"$-1\r\n", b"+OK\r\n",
                                                 b"$1\r\n1\r\n"]
    a.close()
    b.close()


def test_debug_reload_inside_multi_is_refused(raw):
    assert raw.call("MULTI") == b"+OK\r\n"
    assert raw.call("DEBUG", "RELOAD") == b"+QUEUED\r\n"
    reply = raw.call("EXEC")
    assert reply.startswith(b"*1\r\n-ERR DEBUG RELOAD cannot run inside MULTI")


DEBUG_REFUSED = (b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to "
                 b"\"local\", you can run it from a local connection, otherwise you need to set "
                 b"this option in the configuration file, and then restart the server.\r\n")


def test_enable_debug_command_no_refuses_like_redis(fresh_server):
    srv = fresh_server("--workers", "1", "--enable-debug-command", "no")
    proc, port, d = start_real_redis("real-redis-admin-", "--enable-debug-command", "no")
    ours, real = RawClient(srv.port), RawClient(port)
    try:
        for cmd in [("DEBUG", "RELOAD"), ("DEBUG", "OBJECT", "x"), ("DEBUG", "SLEEP", "0"),
                    ("DEBUG", "HELP"), ("CONFIG", "GET", "enable-debug-command")]:
            assert ours.call(*cmd) == real.call(*cmd), cmd
        assert ours.call("DEBUG", "RELOAD") == DEBUG_REFUSED
        # An immutable option: CONFIG SET refuses it.
        assert ours.call("CONFIG", "SET", "enable-debug-command", "yes").startswith(b"-ERR")
        assert ours.call("DEBUG", "SLEEP", "0") == DEBUG_REFUSED
    finally:
        ours.close()
        real.close()
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)


def test_enable_debug_command_local_allows_loopback(server):
    c = RawClient(server.port)
    assert c.call("CONFIG", "GET", "enable-debug-command") == (
        b"*2\r\n$20\r\nenable-debug-command\r\n$5\r\nlocal\r\n")
    assert c.call("DEBUG", "SLEEP", "0") == b"+OK\r\n"
    c.close()


def test_replica_follows_a_primary_across_debug_reload(nodes):
    redis = pytest.importorskip("redis")
    primary = nodes.start("p")
    r = nodes.start("r", "--replicaof", "127.0.0.1 %d" % primary.port)
    p, rc = primary.client(), r.client()
    wait_for(lambda: info(rc, "replication").get("master_link_status") == "up", 20,
             "the replication link")
    p.execute_command("CF.RESERVE", "f", 1000)
    for i in range(20):
        p.execute_command("CF.ADD", "f", "i%d" % i)
    p.execute_command("CF.DEL", "f", "i3")
    p.set("s", "one")

    def converged():
        s = sequence(p)
        return sequence(rc) == s and s
    wait_for(converged, 30, "the replica to reach the primary's sequence")
    assert rc.execute_command("CF.EXISTS", "f", "i5") == 1
    with pytest.raises(redis.ResponseError, match="not allowed on a replica"):
        rc.execute_command("DEBUG", "RELOAD")
    assert p.execute_command("DEBUG", "RELOAD") == b"OK"
    p.execute_command("CF.ADD", "f", "late")
    p.set("s", "two")
    wait_for(converged, 30, "the replica to follow writes made after the reload")
    assert rc.get("s") == b"two"
    assert rc.execute_command("CF.EXISTS", "f", "late") == 1
    assert rc.execute_command("CF.INFO", "f") == p.execute_command("CF.INFO", "f")
    # The reopen kept the sequence: the replica continued, with no second full sync.
    assert "continues from sequence" in primary.read_log()
    assert scandump_all(rc, "f") == scandump_all(p, "f")


PAUSE_ERRORS = [
    ("CLIENT", "PAUSE", "abc"),
    ("CLIENT", "PAUSE", "-1"),
    ("CLIENT", "PAUSE", "100", "foo"),
    ("CLIENT", "PAUSE", "100", "WRITE", "extra"),
    ("CLIENT", "PAUSE"),
    ("CLIENT", "UNPAUSE", "x"),
    ("CLIENT", "UNPAUSE"),
]


def timed(c, *cmd):
    start = time.monotonic()
    reply = c.call(*cmd)
    return reply, time.monotonic() - start


@pytest.mark.parametrize("target", ["cuckood", "redis"])
def test_client_pause_timing(server, real_redis_port, target):
    port = server.port if target == "cuckood" else real_redis_port
    admin, c = RawClient(port), RawClient(port)
    try:
        for cmd in PAUSE_ERRORS:
            reply = admin.call(*cmd)
            if target == "cuckood":
                ref = RawClient(real_redis_port)
                assert reply == ref.call(*cmd), cmd
                ref.close()
        c.call("SET", "adm:p", "1")
        # WRITE: reads run at once, writes wait for the end of the pause.
        assert admin.call("CLIENT", "PAUSE", "700", "WRITE") == b"+OK\r\n"
        reply, took = timed(c, "GET", "adm:p")
        assert reply == b"$1\r\n1\r\n" and took < 0.4
        reply, took = timed(c, "SET", "adm:p", "2")
        assert reply == b"+OK\r\n" and 0.3 < took < 3
        # ALL: every command waits.
        assert admin.call("CLIENT", "PAUSE", "600", "ALL") == b"+OK\r\n"
        reply, took = timed(c, "PING")
        assert reply == b"+PONG\r\n" and 0.3 < took < 3
        # UNPAUSE lets a waiting write go long before the pause would end.
        assert admin.call("CLIENT", "PAUSE", "10000", "WRITE") == b"+OK\r\n"
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$5\r\nadm:p\r\n$1\r\n3\r\n")
        time.sleep(0.3)
        assert admin.call("GET", "adm:p") == b"$1\r\n2\r\n"
        start = time.monotonic()
        assert admin.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert c.read_reply() == b"+OK\r\n"
        assert time.monotonic() - start < 2
        assert c.call("GET", "adm:p") == b"$1\r\n3\r\n"
    finally:
        admin.call("CLIENT", "UNPAUSE")
        admin.close()
        c.close()


def test_client_pause_write_holds_exec_of_a_write_and_pipelined_commands(server):
    admin, c = RawClient(server.port), RawClient(server.port)
    try:
        assert c.call("MULTI") == b"+OK\r\n"
        assert c.call("SET", "adm:m", "1") == b"+QUEUED\r\n"
        assert admin.call("CLIENT", "PAUSE", "500", "WRITE") == b"+OK\r\n"
        # EXEC with a queued write waits; a GET pipelined behind it answers after it.
        start = time.monotonic()
        c.send_raw(b"*1\r\n$4\r\nEXEC\r\n*2\r\n$3\r\nGET\r\n$5\r\nadm:m\r\n")
        assert c.read_reply() == b"*1\r\n+OK\r\n"
        assert c.read_reply() == b"$1\r\n1\r\n"
        assert time.monotonic() - start > 0.3
    finally:
        admin.call("CLIENT", "UNPAUSE")
        admin.close()
        c.close()


def test_a_client_closed_while_its_command_waits_for_client_pause_leaves_no_subscription(server):
    # A RESP3 client subscribed to a channel sends a write during CLIENT PAUSE WRITE and goes
    # away while it waits: its subscription must go with it (PUBSUB NUMSUB), and publishing to
    # the channel afterwards reaches nobody.
    admin, c = RawClient(server.port), RawClient(server.port)
    try:
        assert c.call("HELLO", "3").startswith(b"%")
        assert c.call("SUBSCRIBE", "adm:pause-ch").startswith(b">3\r\n")
        assert admin.call("PUBSUB", "NUMSUB", "adm:pause-ch") == \
            b"*2\r\n$12\r\nadm:pause-ch\r\n:1\r\n"
        assert admin.call("CLIENT", "PAUSE", "5000", "WRITE") == b"+OK\r\n"
        c.send_raw(b"*3\r\n$6\r\nCF.ADD\r\n$9\r\nadm:pause\r\n$1\r\nx\r\n")
        time.sleep(0.2)
        c.close()
        deadline = time.monotonic() + 5
        while admin.call("PUBSUB", "NUMSUB", "adm:pause-ch") != \
                b"*2\r\n$12\r\nadm:pause-ch\r\n:0\r\n":
            assert time.monotonic() < deadline, "the closed client is still subscribed"
            time.sleep(0.05)
        assert admin.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert admin.call("PUBLISH", "adm:pause-ch", "hello") == b":0\r\n"
        assert admin.call("PING") == b"+PONG\r\n"
    finally:
        admin.call("CLIENT", "UNPAUSE")
        admin.close()
